package peer

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// maxLobbyMessage bounds the JSON body of one lobby message. The largest, a
// hello naming bucket.MaxMembers members, is under 8 KiB.
const maxLobbyMessage = 64 << 10

// LobbyVersion is the version of the lobby's messages. Version 2: the
// hello's parameters may open slots for late joiners (SessionParams.Slots,
// Allowed); a hello that does says "lobby": 2, and a member of version 1
// reading it does not know those fields, so its peers of version 2 find
// its parameters different (ErrParamsMismatch) and both sides fail in the
// lobby. A session without open slots sends the hello of version 1.
const LobbyVersion = 2

// Lobby message types (the "type" field).
const (
	msgHello  = "hello"
	msgRefuse = "refuse"
	msgReveal = "reveal"
	msgReady  = "ready"
	msgStart  = "start"
	msgAbort  = "abort"
)

// Reasons of a refuse message.
const (
	refuseNoSession = "no-session" // the acceptor has no Join for that session (yet)
	refuseNotMember = "not-member" // the dialer is not in the acceptor's member list
	refuseDirection = "direction"  // the dialer's ID is higher: the acceptor should have dialled
	refuseRunning   = "running"    // the dialer is a member, but the session started without it
)

// lobbyMsg is every lobby message; Type says which fields are set. On the
// wire each is uvarint(len(body)) || body, body being this struct as JSON.
// docs/network.md lists the messages.
type lobbyMsg struct {
	Type string `json:"type"`

	// hello
	// Lobby is the lobby's version (LobbyVersion) when it is past 1: the
	// version of the hello. A hello of a session without open slots says
	// nothing, as version 1's did.
	Lobby    int            `json:"lobby,omitempty"`
	Params   *SessionParams `json:"params,omitempty"`
	Members  []string       `json:"members,omitempty"`  // peer IDs (text), sorted by ID bytes
	Commit   []byte         `json:"commit,omitempty"`   // rng.Commit(contribution)
	Datagram string         `json:"datagram,omitempty"` // "ip:port" of the datagram channel

	// reveal
	Contribution []byte `json:"contribution,omitempty"`
	Transcript   []byte `json:"transcript,omitempty"` // SHA-256 over what the hellos said

	// ready
	SeedCheck []byte `json:"seed_check,omitempty"`

	// start
	StartUnixNano int64 `json:"start_unix_nano,omitempty"`

	// refuse, abort
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// lobbyConn is one lobby stream with its reader.
type lobbyConn struct {
	s      network.Stream
	r      *bufio.Reader
	remote peer.ID
	stop   func() bool // cancels the reset on context end
}

func newLobbyConn(s network.Stream) *lobbyConn {
	return &lobbyConn{s: s, r: bufio.NewReaderSize(s, 4096), remote: s.Conn().RemotePeer(), stop: func() bool { return false }}
}

func (c *lobbyConn) write(m *lobbyMsg) error {
	body, err := json.Marshal(m)
	if err != nil {
		panic("peer: lobby message does not encode: " + err.Error())
	}
	if len(body) > maxLobbyMessage {
		return fmt.Errorf("%w: %s message of %d bytes exceeds %d", ErrLobbyProtocol, m.Type, len(body), maxLobbyMessage)
	}
	buf := binary.AppendUvarint(make([]byte, 0, len(body)+3), uint64(len(body)))
	buf = append(buf, body...)
	if _, err := c.s.Write(buf); err != nil {
		return fmt.Errorf("peer: lobby: writing to %s: %w", c.remote, err)
	}
	return nil
}

// read reads one message. A malformed or oversized one gives an error
// wrapping ErrLobbyProtocol. The body's buffer grows as its bytes arrive.
func (c *lobbyConn) read(m *lobbyMsg) error {
	n, err := binary.ReadUvarint(c.r)
	if err != nil {
		return fmt.Errorf("peer: lobby: reading from %s: %w", c.remote, err)
	}
	if n > maxLobbyMessage {
		return fmt.Errorf("%w: %s sent a message of %d bytes, limit %d", ErrLobbyProtocol, c.remote, n, maxLobbyMessage)
	}
	// Grow the body as its bytes arrive: a length alone does not make the
	// reader allocate it.
	body, err := io.ReadAll(io.LimitReader(c.r, int64(n)))
	if err == nil && uint64(len(body)) < n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("peer: lobby: reading from %s: %w", c.remote, err)
	}
	*m = lobbyMsg{}
	if err := json.Unmarshal(body, m); err != nil {
		return fmt.Errorf("%w: %s sent malformed JSON: %v", ErrLobbyProtocol, c.remote, err)
	}
	return nil
}

// expect reads one message of type want. An abort gives an error wrapping
// ErrAborted with the peer's reason.
func (c *lobbyConn) expect(want string) (*lobbyMsg, error) {
	var m lobbyMsg
	if err := c.read(&m); err != nil {
		return nil, err
	}
	switch m.Type {
	case want:
		return &m, nil
	case msgAbort:
		return nil, fmt.Errorf("%w: peer %s gave up: %s", ErrAborted, c.remote, m.Detail)
	default:
		return nil, fmt.Errorf("%w: %s sent %q, want %q", ErrLobbyProtocol, c.remote, m.Type, want)
	}
}

// abort tells the peer why we give up, best effort, and resets the stream.
func (c *lobbyConn) abort(why error) {
	_ = c.s.SetWriteDeadline(time.Now().Add(time.Second))
	_ = c.write(&lobbyMsg{Type: msgAbort, Detail: why.Error()})
	_ = c.s.Close()
	c.stop()
}

// close closes the stream after a successful lobby.
func (c *lobbyConn) close() {
	c.stop()
	_ = c.s.Close()
}
