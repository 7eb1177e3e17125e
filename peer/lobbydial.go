package peer

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

// lobbyRetry is how long a dialer waits before trying a member again.
const lobbyRetry = 100 * time.Millisecond

// lobbyRun is the state of one lobby.run: the streams to the members and
// the goroutines that open and read them.
type lobbyRun struct {
	l       *lobby
	ctx     context.Context // ends when run returns: resets the streams left open
	dialCtx context.Context // ends with the caller's ctx too: stops dials and probes
	wg      *sync.WaitGroup
	events  chan lobbyEvent
	links   map[peer.ID]*lobbyLink
}

// link replaces the link to id with a new one, resetting the old stream.
func (r *lobbyRun) link(id peer.ID) *lobbyLink {
	if old := r.links[id]; old != nil && old.c != nil {
		old.c.stop()
		old.c.s.Reset()
	}
	lk := &lobbyLink{id: id}
	r.links[id] = lk
	return lk
}

// remoteIP is the IP address the link's stream came from, if known.
func (lk *lobbyLink) remoteIP() netip.Addr {
	if lk.c == nil {
		return netip.Addr{}
	}
	ip, _ := remoteIP(lk.c.s.Conn().RemoteMultiaddr())
	return ip
}

// send performs one of the machine's sends.
func (r *lobbyRun) send(s lobbySend) {
	switch {
	case s.dial:
		r.dial(r.link(s.to), s.msg)
	case s.probe:
		r.wg.Go(func() { r.probe(s.to, s.msg) })
	default:
		lk := r.links[s.to]
		if lk == nil || lk.c == nil {
			return
		}
		if s.msg.Type == msgAbort {
			_ = lk.c.s.SetWriteDeadline(time.Now().Add(time.Second))
		}
		if err := lk.c.write(&s.msg); err != nil {
			// The reader will see the stream break, perhaps after the
			// peer's own word on why; until then hold this.
			r.l.m.failed(time.Now(), s.to, err)
		}
	}
}

// handle feeds the machine one event from a link's goroutine.
func (r *lobbyRun) handle(ev lobbyEvent) {
	m, now := r.l.m, time.Now()
	if ev.probe {
		m.probed(ev.link.id, ev.msg)
		return
	}
	if r.links[ev.link.id] != ev.link { // a stream since replaced
		if ev.conn != nil {
			ev.conn.stop()
			ev.conn.s.Reset()
		}
		return
	}
	switch {
	case ev.conn != nil:
		ev.link.c = ev.conn
	case ev.err != nil:
		m.failed(now, ev.link.id, ev.err)
	default:
		m.receive(now, ev.link.id, ev.msg, ev.link.remoteIP())
	}
}

// deliver hands ev to run, unless run has ended.
func (r *lobbyRun) deliver(ev lobbyEvent) bool {
	select {
	case r.events <- ev:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// dial opens the lobby stream of lk, sends hello on it and reads it.
func (r *lobbyRun) dial(lk *lobbyLink, hello lobbyMsg) {
	r.wg.Go(func() {
		s, err := r.l.h.h.NewStream(network.WithAllowLimitedConn(r.dialCtx, "phalanx lobby"), lk.id, LobbyProtocol)
		if err != nil {
			r.deliver(lobbyEvent{link: lk, err: err})
			return
		}
		c := newLobbyConn(s)
		c.stop = context.AfterFunc(r.ctx, func() { s.Reset() })
		if err := c.write(&hello); err != nil {
			c.stop()
			s.Reset()
			r.deliver(lobbyEvent{link: lk, err: err})
			return
		}
		if !r.deliver(lobbyEvent{link: lk, conn: c}) {
			c.stop()
			s.Reset()
			return
		}
		r.readLoop(lk, c)
	})
}

// read starts reading lk's stream.
func (r *lobbyRun) read(lk *lobbyLink, c *lobbyConn) {
	r.wg.Go(func() { r.readLoop(lk, c) })
}

// readLoop hands every message of c to run, until c fails or run ends.
func (r *lobbyRun) readLoop(lk *lobbyLink, c *lobbyConn) {
	for {
		var m lobbyMsg
		err := c.read(&m)
		ev := lobbyEvent{link: lk, msg: &m, err: err}
		if err != nil {
			ev.msg = nil
		}
		if !r.deliver(ev) || err != nil {
			return
		}
	}
}

// probe asks a lower member, which should dial us, whether its session
// started without us: it sends our hello on a stream of its own and hands
// the answer, if any comes, to the machine (a member in the lobby refuses
// the direction and dials us).
func (r *lobbyRun) probe(id peer.ID, hello lobbyMsg) {
	ctx, cancel := context.WithTimeout(r.dialCtx, LobbyWaitReport)
	defer cancel()
	s, err := r.l.h.h.NewStream(network.WithAllowLimitedConn(ctx, "phalanx lobby"), id, LobbyProtocol)
	if err != nil {
		return
	}
	c := newLobbyConn(s)
	defer context.AfterFunc(ctx, func() { s.Reset() })()
	defer s.Reset()
	var m lobbyMsg
	if c.write(&hello) != nil || c.read(&m) != nil {
		return
	}
	r.deliver(lobbyEvent{link: &lobbyLink{id: id}, msg: &m, probe: true})
}
