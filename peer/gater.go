package peer

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/control"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// MaxConnsPerPeer bounds the libp2p connections a host keeps with one peer.
// A member needs one; libp2p may briefly hold two while both sides dial.
const MaxConnsPerPeer = 3

// StrangerBan is how long a host refuses every connection of a peer after
// its lobby refused that peer as a stranger.
const StrangerBan = time.Minute

// gater is the host's libp2p connection gater. Once the host knows a
// session (a Join in progress or a session that started), an inbound
// connection of a peer that is a member of none of them is refused as
// soon as the peer has proven its ID; so is any connection of a peer the
// lobby refused, for StrangerBan; and a peer gets at most MaxConnsPerPeer
// connections. It is safe for concurrent use.
type gater struct {
	host     atomic.Pointer[Host] // set once the host is built; until then all is allowed
	now      func() time.Time
	maxConns atomic.Int32                                     // MaxConnsPerPeer
	testDial atomic.Pointer[func(peer.ID, ma.Multiaddr) bool] // tests: which addresses may be dialled; nil all

	mu     sync.Mutex
	banned map[peer.ID]time.Time // until when
}

func newGater(now func() time.Time) *gater {
	g := &gater{now: now, banned: make(map[peer.ID]time.Time)}
	g.maxConns.Store(MaxConnsPerPeer)
	return g
}

// ban refuses p's connections for StrangerBan, and forgets bans that ended.
func (g *gater) ban(p peer.ID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	for id, until := range g.banned {
		if !now.Before(until) {
			delete(g.banned, id)
		}
	}
	g.banned[p] = now.Add(StrangerBan)
}

func (g *gater) isBanned(p peer.ID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	until, ok := g.banned[p]
	return ok && g.now().Before(until)
}

// InterceptPeerDial refuses to dial a banned peer.
func (g *gater) InterceptPeerDial(p peer.ID) bool { return !g.isBanned(p) }

// InterceptAddrDial allows every address.
func (g *gater) InterceptAddrDial(p peer.ID, a ma.Multiaddr) bool {
	if f := g.testDial.Load(); f != nil {
		return (*f)(p, a)
	}
	return true
}

// InterceptAccept allows every connection until its peer is known.
func (g *gater) InterceptAccept(network.ConnMultiaddrs) bool { return true }

// InterceptSecured decides once the peer has proven its ID.
func (g *gater) InterceptSecured(dir network.Direction, p peer.ID, _ network.ConnMultiaddrs) bool {
	if g.isBanned(p) {
		return false
	}
	h := g.host.Load()
	if h == nil {
		return true
	}
	if dir == network.DirInbound && !h.mayConnect(p) {
		h.refusals.refused("peer: refused a libp2p connection of a stranger", "from", p)
		return false
	}
	return len(h.h.Network().ConnsToPeer(p)) < int(g.maxConns.Load())
}

// InterceptUpgraded allows what InterceptSecured allowed.
func (g *gater) InterceptUpgraded(network.Conn) (bool, control.DisconnectReason) { return true, 0 }

// mayConnect reports whether p may hold a connection with the host: when
// the host knows no session yet (anyone may be a member of the next), or
// when p is a member of a session it knows.
func (h *Host) mayConnect(p peer.ID) bool {
	if h.nat.isRelay(p) {
		return true // the relay the members met through (Meet)
	}
	if srv := h.catchup.Load(); srv != nil {
		if srv.spectators > 0 {
			return true // spectators, who are no members, come (catchupserve.go)
		}
		if _, ok := srv.sess.Slot(p); ok || srv.sess.seats.mayTake(p) {
			return true // a late joiner, or one that took an open slot (seats.go)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lobbies) == 0 && len(h.running) == 0 {
		return true
	}
	for _, l := range h.lobbies {
		if slices.Contains(l.members, p) {
			return true
		}
	}
	for _, members := range h.running {
		if slices.Contains(members, p) {
			return true
		}
	}
	return false
}

// refuseStranger bans p and closes its connections, a moment after the
// refusal just written has had a chance to leave.
func (h *Host) refuseStranger(p peer.ID) {
	h.gate.ban(p)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	if !h.background(ctx, func() {
		cancel()
		_ = h.h.Network().ClosePeer(p)
	}) {
		cancel()
	}
}
