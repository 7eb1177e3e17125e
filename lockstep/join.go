package lockstep

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// The joiner's side of an admission (admit.go has the members'): it asks,
// hears the members' final entries, and takes a frame once enough of them
// agree.

// joinReady is Ready while this core waits to be admitted: it asks every
// member, every MaxInterval, and steps nothing.
func (c *Core) joinReady(now time.Duration) Ready {
	if c.adm.finalFrom != 0 {
		// A lone member's final entry counts after a while (tryJoin).
		if c.tryJoin(now, nil); !c.adm.joining {
			return c.Ready(now)
		}
	}
	if now >= c.adm.requestAt {
		c.adm.requestAt = now + c.cfg.MaxInterval
		for _, r := range c.peers {
			if r == nil {
				continue
			}
			p := &c.pkt
			*p = wire.Packet{
				Session:    c.cfg.Session,
				From:       c.self,
				Sent:       sentTicks(now - c.epoch),
				Seal:       -1,
				AckSeal:    -1,
				HasEcho:    r.heard,
				Echo:       wire.Echo{Number: r.newest, Hold: durationTicks(now - r.newestAt)},
				Admissions: append(c.adm.entries[:0], wire.Admission{Slot: c.self, Flags: wire.AdmitRequest, Frame: wire.Unknown, Proposal: -1}),
			}
			c.adm.entries = p.Admissions
			p.Number = r.recordSend(now)
			start := len(c.arena)
			var err error
			if c.arena, err = p.Append(c.arena); err != nil {
				panic("lockstep: encoding our join request: " + err.Error())
			}
			c.out.Datagrams = append(c.out.Datagrams, Datagram{To: r.slot, Data: c.arena[start:len(c.arena):len(c.arena)]})
			c.stats.Datagrams++
			c.stats.BytesSent += int64(len(c.arena) - start + c.cfg.Overhead)
		}
		c.fixDatagrams()
	}
	events := c.out.Events
	c.out.Events = c.out.Events[:0:0]
	out := c.out
	out.Events, out.Deadline = events, c.adm.requestAt
	if grace := c.adm.firstFinal + c.cfg.MaxInterval; c.adm.finalFrom != 0 && grace > now {
		out.Deadline = min(out.Deadline, grace)
	}
	return out
}

// joinerReceive handles a datagram from member r while this core joins, or
// from a member whose first command for us it does not know yet. It reports
// whether the datagram's other contents must be ignored.
func (c *Core) joinerReceive(now time.Duration, r *remote, p *wire.Packet) bool {
	if !c.adm.joining && c.adm.awaiting&(1<<r.slot) == 0 {
		return r.started && int16(p.Number-r.startNum) < 0
	}
	// Timing only: echoes give the round trip, Clock the member's frame
	// clock.
	newer := !r.heard || int16(p.Number-r.newest) > 0
	if newer {
		r.newest, r.newestAt, r.numbered = p.Number, now, true
	}
	r.heard, r.lastRecv = true, now
	if c.adm.joining {
		// It runs (a dropped member stops): it may count, whatever
		// another member's Dropped says (tryJoin).
		c.adm.heard |= 1 << r.slot
	}
	if p.HasEcho {
		r.echo(now, p.Echo)
		c.notePolicyLag(r)
	}
	clock := ticksDuration(p.Clock)
	r.addClock(clock - now)
	if !c.adm.joining {
		// The echo and the clock sample may have moved r's place among
		// the slowest clocks (an admitting member's view of the joiner).
		c.clockMoved(r)
	}
	for _, a := range p.Admissions {
		if a.Slot != c.self || a.Flags&wire.AdmitRequest != 0 {
			continue
		}
		if c.adm.joining {
			c.heardFinal(now, r, a, clock, newer)
		}
		if a.Flags&wire.AdmitFinal == 0 || c.adm.awaiting&(1<<r.slot) == 0 {
			continue
		}
		if a.Frame == c.adm.admittedAt {
			c.adm.awaiting &^= 1 << r.slot
			c.table.Stream(r.slot).Reset(a.Start, -1)
			r.startNum, r.started = p.Number, true
			// The rest of this datagram counts, as news (Receive takes
			// only a datagram newer than the newest as news: its views,
			// acknowledgements and entries).
			r.newest = p.Number - 1
			return false
		}
		if newer {
			// The members agreed on one frame: a member that names
			// another, newer than what it said before, is lying.
			c.violation(now, r.slot, "admission", fmt.Sprintf("admitted us at frame %d, the others at %d", a.Frame, c.adm.admittedAt))
		}
	}
	// A datagram sent before the member agreed (overtaken on the way) may
	// still name us as dropped.
	return c.adm.joining || c.adm.awaiting&(1<<r.slot) != 0 || r.started && int16(p.Number-r.startNum) < 0
}

// heardFinal notes, while joining, member r's admissions entry a naming
// us, from a datagram sent when r's frame clock read clock (newer than any
// before from r if newer), and admits us once enough members agree
// (tryJoin).
func (c *Core) heardFinal(now time.Duration, r *remote, a wire.Admission, clock time.Duration, newer bool) {
	bit := uint64(1) << r.slot
	if a.Flags&wire.AdmitFinal == 0 || !newer && c.adm.finalFrom&bit != 0 {
		c.tryJoin(now, r)
		return
	}
	if c.adm.finalFrom == 0 {
		c.adm.firstFinal = now
	}
	c.adm.finalFrom |= bit
	c.adm.finals[r.slot] = a
	c.adm.finalStart[r.slot] = now - clock
	c.tryJoin(now, r)
}

// tryJoin admits this joining core at a frame enough members announced
// in their final entries, preferring the clock of member by (the sender of
// the datagram just received, or nil). For a frame, the members that may
// count are every other slot except those that all the members announcing
// it name as dropped and that we never heard from (a member that talks
// runs, whatever another says); the frame is taken once more than half of them
// announce it, and, when only one member does, not before a request
// interval passed since the first final entry came (time for the others'
// answers to arrive): no single member decides where we start.
func (c *Core) tryJoin(now time.Duration, by *remote) {
	for f := c.adm.finalFrom; f != 0; f &= f - 1 {
		at := c.adm.finals[bits.TrailingZeros64(f)].Frame
		var agree uint64
		dropped := ^uint64(0)
		for g := c.adm.finalFrom; g != 0; g &= g - 1 {
			if a := c.adm.finals[bits.TrailingZeros64(g)]; a.Frame == at {
				agree |= g & -g
				dropped &= a.Dropped
			}
		}
		n := bits.OnesCount64(c.all &^ (1 << c.self) &^ (dropped &^ c.adm.heard))
		k := bits.OnesCount64(agree)
		if 2*k <= n || k < 2 && now < c.adm.firstFinal+c.cfg.MaxInterval {
			continue
		}
		from := bucket.Slot(bits.TrailingZeros64(agree))
		if by != nil && agree&(1<<by.slot) != 0 {
			from = by.slot
		}
		a := c.adm.finals[from]
		a.Dropped = dropped
		c.joined(now, c.peers[from], a)
		return
	}
}

// joined admits this joining core at frame a.Frame, told by member r (see
// tryJoin), whose frame clock started at c.adm.finalStart[r.slot] by its
// datagram.
func (c *Core) joined(now time.Duration, r *remote, a wire.Admission) {
	at := a.Frame
	c.adm.joining = false
	c.adm.admittedAt = at
	// Our frame clock: the member's, plus the datagram's way here.
	c.cfg.Start = c.adm.finalStart[r.slot] - r.minRTT()/2
	c.slew = 0
	c.frame = bucket.Frame(max(c.position(now), 0) / c.cfg.Frame)
	c.executed, c.stalled = at-1, at-1
	c.table.Stream(c.self).Reset(0, at-1)
	for _, p := range c.peers {
		if p == nil {
			continue
		}
		bit := uint64(1) << p.slot
		if a.Dropped&bit != 0 {
			c.suspected |= bit
			c.finalized |= bit
			c.held[p.slot], c.reasons[p.slot] = -1, ReasonSilent
			c.table.Stream(p.slot).Reset(0, at-1)
			c.table.Close(p.slot, at-1)
			continue
		}
		c.adm.awaiting |= bit
		c.chains[p.slot].broken = true // its commands before ours are not ours to check
		p.heard, p.heardPos, p.lastRecv = true, c.position(now), now
		p.sealMovedAt, p.nextMovedAt, p.lagFrom = now, now, c.frame
		c.markPending(now, p)
	}
	c.before = c.liveMask()
	kind, detail := EventRejoin, "we rejoined"
	if a.Flags&wire.AdmitLate != 0 {
		kind, detail = EventJoin, "we joined late"
	}
	c.emit(Event{Type: kind, Frame: at, Member: c.self, Detail: detail})
	c.cfg.Logger.Info("lockstep: admitted", "frame", at, "kind", kind, "by", r.slot)
}
