package lockstep

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// Splits: which side of a split plays on, and how a member stops.
//
// A member remembers the members it listened to the last time no suspicion
// was pending (Core.before). While a suspicion is pending, it plays on only
// while the members it still listens to are a strict majority of those (or
// exactly half, with the lowest slot among them); otherwise it is on the
// minority side of a split, or the others dropped it, and it stops. A member
// frozen past the drop timeout steps nothing after it resumes until a
// majority shows it still listens to it. See docs/protocol.md, §10.9.

// majority reports whether side holds a strict majority of c.before, or
// exactly half of it with its lowest slot.
func (c *Core) majority(side uint64) bool {
	side &= c.before
	n, of := bits.OnesCount64(side), bits.OnesCount64(c.before)
	return 2*n > of || (2*n == of && side&(c.before&-c.before) != 0)
}

// checkMajority stops this member when its live members are no longer a
// strict majority of those live before the pending suspicions (on a tie,
// when they lack the lowest of those): it is on the minority side of a
// split, or the others dropped it. It reports whether the member stopped.
func (c *Core) checkMajority() bool {
	if c.stopped {
		return true
	}
	if c.leaving || c.suspected&^c.finalized == 0 {
		return false
	}
	side := c.liveMask() & c.before
	if c.majority(side) {
		return false
	}
	reason, detail := ReasonMinority, fmt.Sprintf("in a minority at frame %d: members %v of %v", c.executed+1, slots(side), slots(c.before))
	if c.namedBy != 0 {
		reason, detail = ReasonDropped, fmt.Sprintf("dropped at frame %d by members %v", c.namedLast+1, slots(c.namedBy))
	}
	c.stop(reason, detail)
	return true
}

// stop ends the session for this member.
func (c *Core) stop(reason Reason, detail string) {
	c.stopped = true
	c.stopErr = fmt.Errorf("%w: %s", ErrStopped, detail)
	c.emit(Event{Type: EventStop, Frame: c.executed + 1, Member: c.self, LastFrame: c.executed, Reason: reason, Detail: detail})
	c.cfg.Logger.Warn("lockstep: this member stopped", "reason", reason, "detail", detail)
}

// Stopped reports whether this member stopped because the others dropped
// it or it ended on the minority side of a split; Err then says why.
func (c *Core) Stopped() bool { return c.stopped }

// Err returns nil, or, once the member stopped, an error wrapping ErrStopped
// that says why: "dropped at frame F by members [...]" or "in a minority
// ...".
func (c *Core) Err() error { return c.stopErr }

// slots lists the members of a mask.
func slots(mask uint64) []int {
	var out []int
	for mask != 0 {
		s := bits.TrailingZeros64(mask)
		out = append(out, s)
		mask &^= 1 << s
	}
	return out
}

// resume notices a gap between calls longer than the drop timeout: this
// member was frozen (stopped, suspended) and the others have likely dropped
// it. Their silence during the gap is not theirs, so the silence and seal
// clocks restart; a member that dropped us says so in reply to our next
// datagram (send.go), and we stop. Until a majority has shown it still
// listens to us (it echoed a datagram we sent after the gap), we step
// nothing: what arrived during the gap may be seals of frames the others
// have since played without us.
func (c *Core) resume(now time.Duration) {
	if c.lastNow < c.cfg.Start || now-c.lastNow <= c.cfg.DropTimeout {
		return
	}
	c.cfg.Logger.Warn("lockstep: resumed after a freeze", "gap", now-c.lastNow)
	c.resumed = true
	frame := bucket.Frame(max(c.position(now), 0) / c.cfg.Frame)
	for _, r := range c.peers {
		if r != nil {
			r.lastRecv, r.sealMovedAt, r.nextMovedAt, r.lagFrom = now, now, now, frame
			if r.owedSince != 0 {
				r.owedSince = now
			}
			r.resumeNum, r.confirmed = r.number, false
		}
	}
}

// confirmed reports whether, after a freeze, enough members have shown they
// still listen to us to step frames again.
func (c *Core) confirmed() bool {
	if !c.resumed {
		return true
	}
	side := uint64(1) << c.self
	for _, r := range c.peers {
		if r != nil && r.confirmed && c.live(r.slot) {
			side |= 1 << r.slot
		}
	}
	if c.majority(side) {
		c.resumed = false
	}
	return !c.resumed
}
