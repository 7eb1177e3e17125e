package peer

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/phalanx-net/phalanx/rng"
)

// checkHello checks the hello m of remote against ours: the same
// parameters and members, a 32-byte commitment, a datagram address. It
// returns that address.
func (m *lobbyMachine) checkHello(h *lobbyMsg, remote peer.ID) (netip.AddrPort, error) {
	if h.Params == nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %s sent a hello without parameters", ErrLobbyProtocol, remote)
	}
	if h.Lobby > LobbyVersion {
		return netip.AddrPort{}, fmt.Errorf("%w: we speak lobby version %d, peer %s speaks %d", ErrVersionMismatch, LobbyVersion, remote, h.Lobby)
	}
	if err := compareParams(m.cfg.params, *h.Params, remote); err != nil {
		return netip.AddrPort{}, err
	}
	if err := m.compareMembers(h.Members, remote); err != nil {
		return netip.AddrPort{}, err
	}
	if len(h.Commit) != 32 {
		return netip.AddrPort{}, fmt.Errorf("%w: %s sent a commitment of %d bytes", ErrLobbyProtocol, remote, len(h.Commit))
	}
	ep, err := netip.ParseAddrPort(h.Datagram)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %s announced datagram address %q: %v", ErrLobbyProtocol, remote, h.Datagram, err)
	}
	return ep, nil
}

// helloVersion is the lobby version a hello of params says: 2 with open
// slots, else nothing (0, version 1's hello).
func helloVersion(p SessionParams) int {
	if p.slots() > p.Members {
		return LobbyVersion
	}
	return 0
}

func compareParams(ours, theirs SessionParams, remote peer.ID) error {
	if ours.ProtocolVersion != theirs.ProtocolVersion {
		return fmt.Errorf("%w: we speak %d, peer %s speaks %d", ErrVersionMismatch, ours.ProtocolVersion, remote, theirs.ProtocolVersion)
	}
	diff := func(what string, a, b any) error {
		return fmt.Errorf("%w: %s: we have %v, peer %s has %v", ErrParamsMismatch, what, a, remote, b)
	}
	switch {
	case ours.SessionID != theirs.SessionID:
		return diff("session ID", fmt.Sprintf("%q", ours.SessionID), fmt.Sprintf("%q", theirs.SessionID))
	case ours.FrameMillis != theirs.FrameMillis:
		return diff("frame length", fmt.Sprintf("%d ms", ours.FrameMillis), fmt.Sprintf("%d ms", theirs.FrameMillis))
	case ours.Members != theirs.Members:
		return diff("member count", ours.Members, theirs.Members)
	case ours.Sim != theirs.Sim:
		return diff("simulation", fmt.Sprintf("%q", ours.Sim), fmt.Sprintf("%q", theirs.Sim))
	case ours.SimVersion != theirs.SimVersion:
		return diff("simulation version", fmt.Sprintf("%q", ours.SimVersion), fmt.Sprintf("%q", theirs.SimVersion))
	case ours.InitialDelay != theirs.InitialDelay:
		return diff("initial delay", ours.InitialDelay, theirs.InitialDelay)
	case ours.Frames != theirs.Frames:
		return diff("session length", fmt.Sprintf("%d frames", ours.Frames), fmt.Sprintf("%d frames", theirs.Frames))
	case ours.slots() != theirs.slots():
		return diff("slots", ours.slots(), theirs.slots())
	case !slices.Equal(ours.Allowed, theirs.Allowed):
		return diff("peers allowed into open slots", ours.Allowed, theirs.Allowed)
	}
	return nil
}

func (m *lobbyMachine) compareMembers(theirs []string, remote peer.ID) error {
	ids := make([]peer.ID, 0, len(theirs))
	for _, s := range theirs {
		id, err := peer.Decode(s)
		if err != nil {
			return fmt.Errorf("%w: %s listed member %q: %v", ErrLobbyProtocol, remote, s, err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if slices.Equal(ids, m.cfg.members) {
		return nil
	}
	onlyOurs, onlyTheirs := notIn(m.cfg.members, ids), notIn(ids, m.cfg.members)
	return fmt.Errorf("%w: peer %s lacks [%s] and adds [%s]", ErrMembersMismatch, remote, strings.Join(onlyOurs, " "), strings.Join(onlyTheirs, " "))
}

// notIn returns the IDs of a that b lacks, as text.
func notIn(a, b []peer.ID) []string {
	var out []string
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id.String())
		}
	}
	return out
}

// transcriptHash hashes what every member's hello said, in slot order, so that
// members can check they all saw the same: SHA-256 of
// "phalanx-lobby-transcript", the session ID, then per member its ID bytes,
// commitment and announced datagram address, each uvarint-length-prefixed.
func (m *lobbyMachine) transcriptHash() []byte {
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	h.Write([]byte("phalanx-lobby-transcript"))
	put([]byte(m.cfg.params.SessionID))
	for _, id := range m.cfg.members {
		hello := &m.hello
		if id != m.cfg.self {
			hello = m.peer(id).hello
		}
		put([]byte(id))
		put(hello.Commit)
		put([]byte(hello.Datagram))
	}
	return h.Sum(nil)
}

// seedCheck is what a member's ready carries: SHA-256("phalanx-seed-check"
// || seed), so the coordinator can confirm every member derived its seed.
func seedCheck(s rng.Seed) []byte {
	h := sha256.New()
	h.Write([]byte("phalanx-seed-check"))
	h.Write(s[:])
	return h.Sum(nil)
}

func idStrings(ids []peer.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

func remoteIP(m ma.Multiaddr) (netip.Addr, bool) {
	for _, code := range []int{ma.P_IP4, ma.P_IP6} {
		if v, err := m.ValueForProtocol(code); err == nil {
			if ip, err := netip.ParseAddr(v); err == nil {
				return ip, true
			}
		}
	}
	return netip.Addr{}, false
}
