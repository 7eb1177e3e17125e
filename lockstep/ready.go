package lockstep

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/cmdstream"
)

// Ready advances the core to now and returns the work to do. See Ready for
// the caller's duties and how long the result stays valid.
func (c *Core) Ready(now time.Duration) Ready {
	c.out.Datagrams = c.out.Datagrams[:0]
	c.out.Buckets = c.out.Buckets[:0]
	c.arena = c.arena[:0]
	c.cmdBuf = c.cmdBuf[:0]
	c.bucketAt = c.bucketAt[:0]
	if c.stopped {
		c.out.Events = c.out.Events[:0]
		c.out.Statements = nil
		c.out.Deadline = now + c.cfg.DropTimeout
		return c.out
	}
	if c.adm.joining {
		return c.joinReady(now)
	}
	c.advanceClock(now)
	if now >= c.timeoutsAt {
		// A timeout is seconds long: a quarter of a frame late is soon
		// enough to see it, and the members are not walked per datagram;
		// nor before the earliest time one can have run out, unless
		// the members listened to changed.
		if now >= c.timeoutsFrom || c.liveMask() != c.timeoutsMask || c.cfg.Start != c.timeoutsStart {
			c.checkTimeouts(now)
		}
		c.timeoutsAt = now + c.cfg.Frame/4
	}
	c.settleLeaves(now)
	// A member alone with its suspicions would agree with itself at once:
	// the majority is checked first.
	if c.checkMajority() {
		events, stmts := c.out.Events, c.out.Statements
		c.out.Events, c.out.Statements = c.out.Events[:0:0], nil
		out := c.out
		out.Events, out.Statements, out.Deadline = events, stmts, now+c.cfg.DropTimeout
		return out
	}
	c.agree(now)
	c.agreeAdmissions(now)
	c.updatePolicy(now)
	if c.confirmed() {
		c.execute(now)
	}
	c.reportDesync(now)
	c.checkLeft(now)
	c.trim()
	c.send(now)
	c.out.Deadline = c.deadline(now)
	c.dueBy = c.out.Deadline
	events, stmts := c.out.Events, c.out.Statements
	c.out.Events, c.out.Statements = c.out.Events[:0:0], nil
	out := c.out
	out.Events, out.Statements = events, stmts
	// Buckets reference cmdBuf, which may have moved while growing.
	for i, at := range c.bucketAt {
		end := len(c.cmdBuf)
		if i+1 < len(c.bucketAt) {
			end = c.bucketAt[i+1]
		}
		out.Buckets[i].Commands = c.cmdBuf[at:end:end]
	}
	c.stats.Frame = c.frame
	c.stats.Executed = c.executed
	c.stats.Seal = c.table.Stream(c.self).Seal()
	return out
}

// execute collects every frame whose time has come and whose bucket is
// complete, and counts the stalls: frames whose time came before their
// bucket was complete, and how long the frame clock waited for them.
func (c *Core) execute(now time.Duration) {
	for c.executed < c.frame {
		f := c.executed + 1
		if !c.table.Ready(f) || f >= c.hold() {
			if f > c.stalled {
				c.stalled = f
				c.stats.Stalls++
			}
			if !c.waiting {
				// The wait began when f's time came, or when the frame
				// before it was stepped if that was later.
				due := now - (c.position(now) - time.Duration(f)*c.cfg.Frame)
				c.waiting, c.waitFrom = true, max(due, c.steppedAt)
			}
			return
		}
		if c.waiting {
			c.stats.Stalled += max(0, now-c.waitFrom)
			c.waiting = false
		}
		c.steppedAt = now
		at := len(c.cmdBuf)
		c.bucketAt = append(c.bucketAt, at)
		c.cmdBuf = c.table.AppendBucket(c.cmdBuf, f)
		c.out.Buckets = append(c.out.Buckets, Bucket{Frame: f})
		c.executed = f
		c.stats.Commands += int64(len(c.cmdBuf) - at)
		rec := c.record(f)
		rec.frame, rec.input, rec.stepped = f, InputHash(f, c.cmdBuf[at:]), false
	}
}

// trim forgets commands nobody needs any more: our own once every member
// holds them and they are executed, others' a window after execution.
func (c *Core) trim() {
	// Keep what this Ready's buckets reference: trimming clears payloads.
	keepFrom := c.executed - bucket.Frame(len(c.out.Buckets))
	same := keepFrom == c.trimKeep && c.liveMask() == c.trimMask && c.finalized == c.trimFinal
	if same && !c.acksGrew {
		return // nothing it depends on changed since it last ran
	}
	// With the same frames kept and members trimmed (the window never
	// changes after NewCore), a stream whose prefix has not changed since
	// the last trim was trimmed then as it would be now: only our own (its
	// acknowledgements grew) and the changed ones are reached again.
	changed := c.table.Changed()
	c.trimKeep, c.trimMask, c.trimFinal, c.acksGrew = keepFrom, c.liveMask(), c.finalized, false
	own := c.table.Stream(c.self)
	acked := own.Next()
	for i, a := range c.ackedBy {
		if c.peers[i] != nil && c.live(bucket.Slot(i)) {
			acked = min(acked, a)
		}
	}
	own.Trim(min(acked, seqAfter(own, keepFrom)))
	for i := range c.cfg.Members {
		slot := bucket.Slot(i)
		if slot == c.self || (!c.live(slot) && c.finalized&(1<<slot) == 0) {
			continue // a suspect's commands may have to be relayed
		}
		if same && changed&(1<<slot) == 0 {
			continue
		}
		if c.table.FirstFrame(slot) > keepFrom-c.window.Ahead {
			continue // nothing held that old
		}
		s := c.table.Stream(slot)
		s.Trim(seqAfter(s, keepFrom-c.window.Ahead))
	}
	c.table.ClearChanged() // what this pass trimmed, it trimmed by the same rule
}

// seqAfter returns the first held sequence number of s stamped after frame.
func seqAfter(s *cmdstream.Stream, frame bucket.Frame) uint32 {
	held := s.Since(0)
	lo, hi := 0, len(held)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if held[m].Frame <= frame {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return s.Base() + uint32(lo)
}
