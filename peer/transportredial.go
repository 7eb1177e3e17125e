package peer

import (
	"net/netip"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// redial connects again to member slot, which came back (a new process
// with the same identity) and listens at addr now: the lower peer ID of
// the pair dials, so when that is us, a new dial loop starts unless one
// is still trying (its next try takes the new address); otherwise the
// member dials us and its connection replaces the old one. Safe for
// concurrent use; it does nothing once the transport is closed.
func (t *Transport) redial(slot bucket.Slot, addr netip.AddrPort) {
	if int(slot) >= len(t.links) || slot == t.self {
		return
	}
	old := t.moved[slot].Swap(&addr)
	id := t.sess.Member(slot)
	if id == "" || id < t.sess.Members[t.self] {
		return // it dials us
	}
	if old != nil && *old == addr {
		if l := t.links[slot].Load(); l != nil && l.alive() {
			return // asked again while its link is up
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	if l := t.links[slot].Load(); l != nil && l.alive() && old != nil && *old == addr {
		return
	}
	if t.dialLocked(slot, 0) {
		t.log.Info("peer: a member came back; dialling it", "member", slot, "addr", addr)
	}
}

// dialAgain starts a dial loop to slot, unless the transport is closed or
// a loop dialAgain or redial started still tries (its next try is as
// good). The loop first waits againWait[slot], which it then doubles from
// againFirst up to againMax (the first packet on a connection we dialled
// clears it). Safe for
// concurrent use.
func (t *Transport) dialAgain(slot bucket.Slot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	wait := t.againWait[slot]
	if t.dialLocked(slot, wait) {
		t.againWait[slot] = min(max(2*wait, againFirst), againMax)
	}
}

// How long dialAgain waits before dialling a member whose connections end
// untaken in a row: nothing for the first, againFirst for the second,
// doubling up to againMax.
const (
	againFirst = 50 * time.Millisecond
	againMax   = time.Second
)

// dialLocked starts a dial loop to slot that first waits first, with t.mu
// held and the transport open, unless one it started (for the transport's
// start, a redial or dialAgain) still tries; it reports whether it
// started one.
func (t *Transport) dialLocked(slot bucket.Slot, first time.Duration) bool {
	if !t.redialing[slot].CompareAndSwap(false, true) {
		return false
	}
	id := t.sess.Member(slot)
	t.wg.Go(func() {
		defer t.redialing[slot].Store(false)
		t.dialLoop(slot, id, first)
	})
	return true
}

// hear notes that a packet arrived on l, from member slot: the first on a
// connection we dialled clears the wait before dialAgain's next loop.
func (t *Transport) hear(slot bucket.Slot, l *link) {
	if l.heard.Load() {
		return
	}
	l.heard.Store(true)
	if l.dialled {
		t.mu.Lock()
		t.againWait[slot] = 0
		t.mu.Unlock()
	}
}
