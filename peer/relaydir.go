package peer

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// DirectoryProtocol is the libp2p protocol of the relay's lobby directory:
// one request and one answer per stream, each uvarint(length) || JSON.
const DirectoryProtocol = "/phalanx/directory/1.0.0"

// maxDirectoryMessage bounds a directory message: an answer naming
// MaxLobbySize members with MaxEntryAddrs addresses of up to 256 bytes
// each (JSON quoting and the peer ID and fields around them included).
const maxDirectoryMessage = MaxLobbySize * (MaxEntryAddrs*(256+8) + 256)

// directoryTimeout bounds one request's exchange on the relay's side.
const directoryTimeout = 5 * time.Second

// dirRequest is a member's registration.
type dirRequest struct {
	Type  string   `json:"type"` // "register"
	Lobby string   `json:"lobby"`
	Size  int      `json:"size"`
	Addrs []string `json:"addrs,omitempty"` // the member's own listen addresses
}

// dirAnswer is the relay's answer: the lobby's members, or a refusal.
type dirAnswer struct {
	Type     string        `json:"type"` // "lobby" or "refuse"
	Reason   string        `json:"reason,omitempty"`
	Detail   string        `json:"detail,omitempty"`
	Size     int           `json:"size,omitempty"`
	Observed string        `json:"observed,omitempty"` // the address the relay sees the member at
	Members  []dirAnswerID `json:"members,omitempty"`
}

type dirAnswerID struct {
	ID    string   `json:"id"`
	Addrs []string `json:"addrs,omitempty"`
}

// Reasons of a refusal.
var dirReasons = map[string]error{
	"full": ErrLobbyFull,
	"size": ErrLobbySize,
	"busy": ErrDirectoryBusy,
	"bad":  ErrBadRegistration,
}

func writeDirMsg(w io.Writer, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := binary.AppendUvarint(nil, uint64(len(body)))
	_, err = w.Write(append(buf, body...))
	return err
}

func readDirMsg(r *bufio.Reader, v any) error {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if n > maxDirectoryMessage {
		return fmt.Errorf("%w: message of %d bytes", ErrBadRegistration, n)
	}
	body, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err == nil && uint64(len(body)) < n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

// handleDirectory answers one registration on the relay.
func (r *Relay) handleDirectory(s network.Stream) {
	defer s.Close()
	_ = s.SetDeadline(time.Now().Add(directoryTimeout))
	var req dirRequest
	if err := readDirMsg(bufio.NewReaderSize(io.LimitReader(s, maxDirectoryMessage+10), 1024), &req); err != nil || req.Type != "register" {
		s.Reset()
		return
	}
	c := s.Conn()
	observed := c.RemoteMultiaddr()
	// The member's addresses as the directory keeps them: where the relay
	// sees it first (its NAT's mapping, when it is behind one), then the
	// listen addresses it named that are public (or in a range configured
	// as public), then its circuit address through this relay.
	// Room is kept for the circuit address, so that a member naming many
	// addresses can still be reached through the relay.
	addrs := []ma.Multiaddr{observed}
	for _, a := range req.Addrs {
		if len(addrs) == MaxEntryAddrs-1 {
			break
		}
		m, err := ma.NewMultiaddr(a)
		if err != nil || len(a) > 256 || !r.public(m) || m.Equal(observed) {
			continue
		}
		addrs = append(addrs, m)
	}
	if ra := r.addr(); ra != nil {
		if circ, err := ma.NewMultiaddr(ra.String() + "/p2p/" + r.h.ID().String() + "/p2p-circuit"); err == nil {
			addrs = append(addrs, circ)
		}
	}
	r.mu.Lock()
	members, err := r.dir.register(time.Now(), c.RemotePeer(), req.Lobby, req.Size, addrs)
	regs, lobbies := r.dir.counts()
	r.mu.Unlock()
	ans := dirAnswer{Type: "lobby", Size: req.Size, Observed: observed.String()}
	if err != nil {
		ans = dirAnswer{Type: "refuse", Reason: "bad", Detail: err.Error()}
		for reason, e := range dirReasons {
			if errors.Is(err, e) {
				ans.Reason = reason
			}
		}
		r.log.Debug("phalanx relay: registration refused", "from", c.RemotePeer(), "lobby", req.Lobby, "err", err)
	} else {
		r.log.Debug("phalanx relay: registered", "from", c.RemotePeer(), "lobby", req.Lobby, "members", len(members), "registrations", regs, "lobbies", lobbies)
	}
	for _, m := range members {
		e := dirAnswerID{ID: m.ID.String()}
		for _, a := range m.Addrs {
			e.Addrs = append(e.Addrs, a.String())
		}
		ans.Members = append(ans.Members, e)
	}
	_ = writeDirMsg(s, &ans)
}

// LobbyAnswer is what the relay's directory answered a registration: the
// lobby's members so far (this member included), by peer ID, and the
// address the relay saw this member at.
type LobbyAnswer struct {
	Members  []LobbyEntry
	Observed ma.Multiaddr
}

// Register registers the host in lobby (a session of size members) at the
// relay's directory, once, and returns the lobby as the directory holds it.
// The host must be connected to the relay, or reach it with its address
// in the peerstore. A refusal wraps [ErrLobbyFull], [ErrLobbySize],
// [ErrDirectoryBusy] or [ErrBadRegistration].
func (h *Host) Register(ctx context.Context, relay peer.ID, lobby string, size int) (*LobbyAnswer, error) {
	s, err := h.h.NewStream(ctx, relay, DirectoryProtocol)
	if err != nil {
		return nil, fmt.Errorf("peer: directory at %s: %w", relay, err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Reset() })
	defer stop()
	req := dirRequest{Type: "register", Lobby: lobby, Size: size}
	for _, a := range h.h.Addrs() {
		req.Addrs = append(req.Addrs, a.String())
	}
	if err := writeDirMsg(s, &req); err != nil {
		return nil, fmt.Errorf("peer: directory at %s: %w", relay, err)
	}
	var ans dirAnswer
	if err := readDirMsg(bufio.NewReader(s), &ans); err != nil {
		return nil, fmt.Errorf("peer: directory at %s: %w", relay, err)
	}
	if ans.Type != "lobby" {
		base, ok := dirReasons[ans.Reason]
		if !ok {
			base = ErrBadRegistration
		}
		return nil, fmt.Errorf("%w: %s", base, ans.Detail)
	}
	out := &LobbyAnswer{}
	if out.Observed, err = ma.NewMultiaddr(ans.Observed); err != nil {
		return nil, fmt.Errorf("peer: directory at %s: observed address %q: %w", relay, ans.Observed, err)
	}
	for _, m := range ans.Members {
		id, err := peer.Decode(m.ID)
		if err != nil {
			return nil, fmt.Errorf("peer: directory at %s: member %q: %w", relay, m.ID, err)
		}
		e := LobbyEntry{ID: id}
		for _, a := range m.Addrs {
			if am, err := ma.NewMultiaddr(a); err == nil {
				e.Addrs = append(e.Addrs, am)
			}
		}
		out.Members = append(out.Members, e)
	}
	return out, nil
}

// addr returns the relay's address for circuit addresses: its first public
// one (see PublicFilter), else its first.
func (r *Relay) addr() ma.Multiaddr {
	addrs := r.h.Addrs()
	for _, a := range addrs {
		if r.public(a) {
			return a
		}
	}
	if len(addrs) > 0 {
		return addrs[0]
	}
	return nil
}
