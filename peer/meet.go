package peer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"
)

// MeetConfig says where members behind NATs meet: a relay (see NewRelay)
// and the name of their lobby in its directory.
type MeetConfig struct {
	// Relay is the relay's peer ID and addresses (ParseAddrs of its
	// /p2p/ address).
	Relay peer.AddrInfo
	// Lobby is the name the members agreed on, at most MaxLobbyName bytes.
	Lobby string
	// DirectTimeout bounds the direct dial to a member before the relay is
	// tried (default 2 s); PunchWait how long the members wait for hole
	// punching to upgrade relayed pairs before they play (default 10 s; a
	// pair still relayed then plays relayed).
	DirectTimeout time.Duration
	PunchWait     time.Duration
}

// Path is how a pair of members is connected.
type Path string

const (
	PathDirect  Path = "direct"  // a direct connection from the start (reachable, or the same LAN)
	PathPunched Path = "punched" // first through the relay, then direct by hole punching
	PathRelayed Path = "relayed" // through the relay only (both NATs defeat hole punching)
)

// ErrMeet is wrapped by the errors of Meet.
var ErrMeet = errors.New("peer: meeting through the relay")

// lobbyPoll is how often a member waiting in a lobby asks the directory.
const lobbyPoll = 300 * time.Millisecond

// Meet finds the other size-1 members of a session through a relay: it
// reserves a slot at the relay (so the others can reach this host through
// it), registers in the lobby and waits until it holds size members, then
// connects to each: the lower peer ID of each pair dials the higher
// directly, else through the relay, and hole punching (DCUtR, started by
// the higher on the relayed connection) upgrades that where the NATs
// allow. It returns the others' addresses for Join, and the path to each.
// The host must be made with HostConfig.NAT. The host renews its
// reservation at the relay until it closes, so the member stays reachable
// through the relay however long the session runs.
func Meet(ctx context.Context, h *Host, cfg MeetConfig, size int) ([]peer.AddrInfo, map[peer.ID]Path, error) {
	if !h.natEnabled() {
		return nil, nil, fmt.Errorf("%w: the host was not made with HostConfig.NAT", ErrMeet)
	}
	directTimeout := cmp.Or(cfg.DirectTimeout, 2*time.Second)
	punchWait := cmp.Or(cfg.PunchWait, 10*time.Second)
	h.nat.addRelay(cfg.Relay.ID)
	if err := h.h.Connect(ctx, cfg.Relay); err != nil {
		return nil, nil, fmt.Errorf("%w: connecting to the relay %s: %w", ErrMeet, cfg.Relay.ID, err)
	}
	rsvp, err := client.Reserve(ctx, h.h, cfg.Relay)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: reserving a slot at the relay %s: %w", ErrMeet, cfg.Relay.ID, err)
	}
	h.keepReserved(cfg.Relay, rsvp.Expiration)
	var ans *LobbyAnswer
	for {
		var err error
		ans, err = h.Register(ctx, cfg.Relay.ID, cfg.Lobby, size)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: lobby %q: %w", ErrMeet, cfg.Lobby, err)
		}
		if err := h.setObserved(ans.Observed); err != nil {
			return nil, nil, err
		}
		if len(ans.Members) == size {
			break
		}
		h.log.Debug("peer: waiting in the lobby", "lobby", cfg.Lobby, "members", len(ans.Members), "of", size)
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w: lobby %q holds %d of %d members: %w", ErrMeet, cfg.Lobby, len(ans.Members), size, context.Cause(ctx))
		case <-time.After(lobbyPoll):
		}
	}
	var others []peer.AddrInfo
	for _, m := range ans.Members {
		if m.ID == h.ID() {
			continue
		}
		info := peer.AddrInfo{ID: m.ID}
		for _, a := range m.Addrs {
			if isCircuit(a) {
				// The directory gives the relay's circuit address; the
				// member's ID ends it.
				if full, err := ma.NewMultiaddr(a.String() + "/p2p/" + m.ID.String()); err == nil {
					a = full
				}
			}
			info.Addrs = append(info.Addrs, a)
		}
		others = append(others, info)
	}
	if !slices.ContainsFunc(ans.Members, func(e LobbyEntry) bool { return e.ID == h.ID() }) {
		return nil, nil, fmt.Errorf("%w: lobby %q filled without us", ErrMeet, cfg.Lobby)
	}

	// Connect: the lower ID of each pair dials, directly first.
	paths := make(map[peer.ID]Path, len(others))
	for _, o := range others {
		if h.ID() > o.ID {
			continue
		}
		var direct, circuit []ma.Multiaddr
		for _, a := range o.Addrs {
			if isCircuit(a) {
				circuit = append(circuit, a)
			} else {
				direct = append(direct, a)
			}
		}
		dctx, cancel := context.WithTimeout(network.WithForceDirectDial(ctx, "phalanx: direct first"), directTimeout)
		err := h.h.Connect(dctx, peer.AddrInfo{ID: o.ID, Addrs: direct})
		cancel()
		if err == nil && h.pathsTo(o.ID).direct.IsValid() {
			paths[o.ID] = PathDirect
			continue
		}
		h.log.Info("peer: no direct path to the member; through the relay", "id", o.ID, "err", err)
		if sw, ok := h.h.Network().(*swarm.Swarm); ok {
			sw.Backoff().Clear(o.ID) // hole punching dials the same addresses again
		}
		rctx := network.WithAllowLimitedConn(ctx, "phalanx: relayed")
		if err := h.h.Connect(rctx, peer.AddrInfo{ID: o.ID, Addrs: circuit}); err != nil {
			return nil, nil, fmt.Errorf("%w: member %s: neither directly nor through the relay: %w", ErrMeet, o.ID, err)
		}
		paths[o.ID] = PathRelayed
	}
	// Wait for the others' connections, and give hole punching punchWait
	// to upgrade each relayed pair.
	relayedSince := make(map[peer.ID]time.Time)
	for {
		done := true
		now := time.Now()
		for _, o := range others {
			p := h.pathsTo(o.ID)
			switch {
			case paths[o.ID] == PathRelayed && p.direct.IsValid():
				paths[o.ID] = PathPunched
			case paths[o.ID] == "" && p.direct.IsValid() && p.relayed:
				paths[o.ID] = PathPunched // the member came through the relay first
			case paths[o.ID] == "" && p.direct.IsValid():
				paths[o.ID] = PathDirect
			case paths[o.ID] == "" && p.relayed:
				paths[o.ID] = PathRelayed
			}
			switch paths[o.ID] {
			case "":
				done = false
			case PathRelayed:
				if relayedSince[o.ID].IsZero() {
					relayedSince[o.ID] = now
				}
				if now.Sub(relayedSince[o.ID]) < punchWait {
					done = false
				}
			}
		}
		if done {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w: connecting to the members: %w", ErrMeet, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
	return others, paths, nil
}
