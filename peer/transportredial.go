package peer

import (
	"net/netip"

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
	if !t.redialing[slot].CompareAndSwap(false, true) {
		return // a loop still tries; its next try takes the new address
	}
	t.log.Info("peer: a member came back; dialling it", "member", slot, "addr", addr)
	t.wg.Go(func() {
		defer t.redialing[slot].Store(false)
		t.dialLoop(slot, id)
	})
}
