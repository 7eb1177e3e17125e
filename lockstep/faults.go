package lockstep

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Faults: agreed member drops, leaves and protocol violations.
//
// A member that stops listening to another (silence past Config.DropTimeout,
// a protocol violation, or because a member it listens to says so) suspects
// it: from then on it ignores the suspect's datagrams, sends it nothing, and
// freezes its report of the suspect, Held: the suspect's seal as it held it
// then. Every datagram to the others carries the sender's membership view:
// the set of members it suspects and, for each, its report, what it holds now
// (Seal, Next) and its candidate for the suspect's last frame.
//
// The last frame L of a suspect m is the largest report of m: a member's
// candidate is known once every member it considers live has reported, and is
// then the largest report it has received or its live members' known
// candidates. Reports never change and are never forgotten, so candidates only
// grow. A member finalizes m when every member it considers live suspects the
// same set and names the same known candidate, and it holds every command of
// m up to that frame; members that hold more of m's commands relay them to
// those that hold less. Every survivor therefore closes m's stream at the same
// L, no survivor has executed a frame past L (it could not without m's seal),
// and the drop takes effect at frame L+1 on every survivor.

// noReport marks a member that has not reported on a suspect.
const noReport bucket.Frame = -3

// suspect stops listening to member m and freezes our report of it.
func (c *Core) suspect(now time.Duration, m bucket.Slot, reason string) {
	bit := uint64(1) << m
	if c.suspected&bit != 0 || m == c.self {
		return
	}
	c.suspected |= bit
	c.peers[m].suspectedAt = now
	s := c.table.Stream(m)
	c.held[m] = s.Seal()
	if c.reports[m] == nil {
		c.reports[m] = make([]bucket.Frame, c.cfg.Members)
		for i := range c.reports[m] {
			c.reports[m][i] = noReport
		}
	}
	c.reports[m][c.self] = s.Seal()
	c.reasons[m] = reason
	c.cfg.Logger.Info("lockstep: stopped listening to a member", "member", m, "reason", reason, "held", s.Seal())
}

// Listening reports whether the core still listens to member slot: it is
// neither suspected, dropped nor gone after leaving.
func (c *Core) Listening(slot bucket.Slot) bool { return int(slot) < c.cfg.Members && c.live(slot) }

// live reports whether member p is one we listen to (not suspected; us
// included).
func (c *Core) live(p bucket.Slot) bool { return (c.suspected|c.gone)&(1<<p) == 0 }

// checkTimeouts suspects every member silent for longer than DropTimeout.
func (c *Core) checkTimeouts(now time.Duration) {
	if c.leaving {
		return // a member on its way out drops nobody
	}
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) {
			continue
		}
		if left := c.leaveAt[r.slot]; left != bucket.NoFrame && c.table.Stream(r.slot).Seal() >= left {
			continue // it left and we hold all of it: its silence is expected
		}
		last := r.lastRecv
		if !r.heard {
			last = max(c.epoch, c.cfg.Start)
		}
		if now-last > c.cfg.DropTimeout {
			c.suspect(now, r.slot, fmt.Sprintf("silent for %v", (now-last).Round(time.Millisecond)))
		}
	}
}

// onMembership takes in member r's view.
func (c *Core) onMembership(now time.Duration, r *remote, m *wire.Membership) {
	if bits.OnesCount64(m.Suspected) != len(m.Views) || m.Suspected>>uint(c.cfg.Members) != 0 {
		c.violation(now, r.slot, "membership", "membership view names members that do not exist")
		return
	}
	if m.Suspected&(1<<c.self) != 0 {
		// It stopped listening to us: the session has split between us.
		c.suspect(now, r.slot, fmt.Sprintf("member %d stopped listening to us", r.slot))
		return
	}
	r.mask = m.Suspected
	r.hasView = true
	i := 0
	for s := range c.cfg.Members {
		if m.Suspected&(1<<s) == 0 {
			continue
		}
		v := m.Views[i]
		i++
		r.views[s] = v
		slot := bucket.Slot(s)
		if c.suspected&(1<<slot) == 0 {
			c.suspect(now, slot, fmt.Sprintf("member %d stopped listening to it", r.slot))
		}
		if c.reports[slot][r.slot] == noReport {
			c.reports[slot][r.slot] = v.Held
		}
	}
}

// onRelay takes in commands of a suspect relayed by member r. A relay must
// stay within what r's own membership view says it holds of the suspect, and
// within the window; anything else is a violation. (A member that lies about
// another's commands within those bounds cannot be caught here, as commands
// carry no signature of their author; the members' input hashes then differ
// and every member reports the desync.)
func (c *Core) onRelay(now time.Duration, r *remote, rl *wire.Relay) {
	m := rl.Member
	if int(m) >= c.cfg.Members || m == c.self || c.live(m) || c.finalized&(1<<m) != 0 {
		return // not one we are dropping: nothing to learn
	}
	n := uint32(len(rl.Commands))
	limit := c.executed + c.window.Ahead
	switch {
	case !r.hasView || r.mask&(1<<m) == 0:
		c.violation(now, r.slot, "relay", fmt.Sprintf("relays member %d without naming it in its membership view", m))
		return
	case rl.First > ^uint32(0)-n || rl.First+n > r.views[m].Next || rl.Seal > r.views[m].Seal:
		c.violation(now, r.slot, "relay", fmt.Sprintf("relays member %d beyond what it holds (seal %d, next %d)", m, r.views[m].Seal, r.views[m].Next))
		return
	case rl.Seal > limit:
		c.violation(now, r.slot, "relay", fmt.Sprintf("relayed seal %d of member %d outside the window (executed %d)", rl.Seal, m, c.executed))
		return
	}
	s := c.table.Stream(m)
	for i, wc := range rl.Commands {
		seq := rl.First + uint32(i)
		if wc.Frame > limit {
			c.violation(now, r.slot, "relay", fmt.Sprintf("relayed command %d of member %d at frame %d outside the window", seq, m, wc.Frame))
			return
		}
		cmd := bucket.Command{Slot: m, Seq: seq, Frame: wc.Frame, Payload: wc.Payload}
		if seq >= s.Next() {
			cmd.Payload = append([]byte(nil), wc.Payload...)
		}
		if _, err := s.Insert(cmd); err != nil {
			c.violation(now, r.slot, "relay", fmt.Sprintf("relayed command %d of member %d: %v", seq, m, err))
			return
		}
	}
	s.Promise(rl.Seal, rl.First+n)
}

// candidate returns our candidate for suspect m's last frame, or
// wire.Unknown while some live member has not reported.
func (c *Core) candidate(m bucket.Slot) bucket.Frame {
	if c.finalized&(1<<m) != 0 {
		return c.table.Closed(m)
	}
	cand := noReport
	for p := range c.cfg.Members {
		slot := bucket.Slot(p)
		if slot == m {
			continue
		}
		rep := c.reports[m][p]
		if c.live(slot) && rep == noReport {
			return wire.Unknown
		}
		cand = max(cand, rep)
		if slot != c.self && c.live(slot) {
			if r := c.peers[p]; r.hasView && r.mask&(1<<m) != 0 && r.views[m].Last != wire.Unknown {
				cand = max(cand, r.views[m].Last)
			}
		}
	}
	if left := c.leaveAt[m]; left != bucket.NoFrame {
		cand = min(cand, left)
	}
	return cand
}

// agree finalizes every suspect whose last frame all live members agree on.
func (c *Core) agree(now time.Duration) {
	pending := c.suspected &^ c.finalized
	for pending != 0 {
		m := bucket.Slot(bits.TrailingZeros64(pending))
		pending &^= 1 << m
		last := c.candidate(m)
		if last == wire.Unknown || c.table.Stream(m).Seal() < last {
			continue
		}
		agreed := true
		for _, r := range c.peers {
			if r == nil || !c.live(r.slot) {
				continue
			}
			if !r.hasView || r.mask != c.suspected || r.views[m].Last != last {
				agreed = false
				break
			}
		}
		if !agreed {
			continue
		}
		c.finalized |= 1 << m
		if closed := c.table.Closed(m); closed == bucket.NoFrame || last < closed {
			c.table.Close(m, last)
		}
		if c.leaveAt[m] == last {
			continue // its leave was reported when it was announced
		}
		c.emit(Event{Type: EventDrop, Frame: last + 1, Member: m, LastFrame: last, Detail: c.reasons[m]})
		c.cfg.Logger.Info("lockstep: member dropped", "member", m, "last_frame", last, "reason", c.reasons[m])
	}
}

// membershipView fills p's membership block with our view.
func (c *Core) membershipView(p *wire.Packet) {
	if c.suspected == 0 {
		return
	}
	p.HasMembership = true
	p.Membership.Suspected = c.suspected
	views := p.Membership.Views[:0]
	for s := range c.cfg.Members {
		if c.suspected&(1<<s) == 0 {
			continue
		}
		slot := bucket.Slot(s)
		st := c.table.Stream(slot)
		views = append(views, wire.MemberView{Held: c.held[s], Seal: st.Seal(), Next: st.Next(), Last: c.candidate(slot)})
	}
	p.Membership.Views = views
}

// relayTo fills p's relay block with commands of a suspect that r lacks,
// if we hold more than it does.
func (c *Core) relayTo(p *wire.Packet, r *remote) {
	if !r.hasView {
		return
	}
	pending := c.suspected &^ c.finalized & r.mask
	for pending != 0 {
		m := bucket.Slot(bits.TrailingZeros64(pending))
		pending &^= 1 << m
		theirs := r.views[m]
		s := c.table.Stream(m)
		if s.Next() <= theirs.Next && s.Seal() <= theirs.Seal {
			continue
		}
		if theirs.Next < s.Base() {
			continue // trimmed: someone else must relay
		}
		cmds := s.Since(theirs.Next)
		seal := s.Seal()
		rel := wire.Relay{Member: m, First: theirs.Next, Seal: seal, Commands: p.Relay.Commands[:0]}
		budget := c.cfg.MaxDatagramSize - p.Length() - 32
		for i, bc := range cmds {
			need := wire.CommandLength(bc.Frame, wire.Command{Frame: bc.Frame, Payload: bc.Payload}) + 10
			if budget < need {
				rel.Seal = min(seal, cmds[i].Frame-1)
				break
			}
			budget -= need
			rel.Commands = append(rel.Commands, wire.Command{Frame: bc.Frame, Payload: bc.Payload})
		}
		if len(rel.Commands) == 0 && s.Next() > theirs.Next {
			continue // does not fit this datagram
		}
		p.HasRelay, p.Relay = true, rel
		return
	}
}

// Leave announces that this member leaves the session after its current
// commands: it stamps no command after the returned frame, the last frame of
// its commands that counts, and Submit is refused from now on. The member
// keeps sending until every member has acknowledged its seal up to that
// frame; then Left reports true and the caller may stop driving the core.
func (c *Core) Leave(now time.Duration) (bucket.Frame, error) {
	if c.closed {
		return 0, ErrClosed
	}
	if c.leaving {
		return c.leaveFrame, nil
	}
	c.advanceClock(now)
	own := c.table.Stream(c.self)
	c.leaving = true
	c.leaveAtTime = now
	c.leaveFrame = max(own.Seal(), own.LastFrame())
	for _, r := range c.peers {
		if r != nil && !r.urgent {
			r.urgent, r.urgentAt = true, now
		}
	}
	return c.leaveFrame, nil
}

// Left reports whether this member announced its leave and every member it
// listens to has acknowledged the announcement and its commands up to the
// leave frame (or the drop timeout passed since the leave).
func (c *Core) Left() bool { return c.left }

// checkLeft notes when every live member holds our seal up to the leave
// frame and has heard of the leave.
func (c *Core) checkLeft(now time.Duration) {
	if !c.leaving || c.left {
		return
	}
	if now < c.leaveAtTime+c.cfg.DropTimeout {
		for _, r := range c.peers {
			// It must hold our commands up to the leave frame and have
			// heard that we leave: holding them is not enough, for it
			// may have acknowledged our seal before we announced the
			// leave, and would then wait for us until its drop timeout.
			if r != nil && c.live(r.slot) && (r.ackedSeal < c.leaveFrame || !r.leaveHeard) {
				return
			}
		}
	}
	c.left = true
	c.emit(Event{Type: EventLeave, Frame: c.leaveFrame + 1, Member: c.self, LastFrame: c.leaveFrame, Detail: "we left"})
}

// onLeave takes in member r's announcement that it leaves after frame last.
func (c *Core) onLeave(now time.Duration, r *remote, last bucket.Frame) {
	m := r.slot
	if prev := c.leaveAt[m]; prev != bucket.NoFrame {
		if prev != last {
			c.violation(now, m, "leave", fmt.Sprintf("leave frame changed from %d to %d", prev, last))
		}
		return
	}
	s := c.table.Stream(m)
	if last < s.LastFrame() || last < c.executed {
		c.violation(now, m, "leave", fmt.Sprintf("leave frame %d below its commands (frame %d) or our executed frame %d", last, s.LastFrame(), c.executed))
		return
	}
	c.leaveAt[m] = last
	c.table.Close(m, last)
	c.emit(Event{Type: EventLeave, Frame: last + 1, Member: m, LastFrame: last, Detail: "left"})
}

// leaveAcks is how many datagrams acknowledging a leaver's last frame a
// member sends it before it stops listening to it.
const leaveAcks = 3

// settleLeaves stops listening to members that left once we hold all their
// commands and have told them so a few times, so their silence is not taken
// for a failure.
func (c *Core) settleLeaves(now time.Duration) {
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) {
			continue
		}
		if last := c.leaveAt[r.slot]; last != bucket.NoFrame && c.table.Stream(r.slot).Seal() >= last && r.leaveAcks >= leaveAcks {
			c.gone |= 1 << r.slot
		}
	}
}

// emit queues an event for the next Ready.
func (c *Core) emit(e Event) { c.out.Events = append(c.out.Events, e) }

// violation reports that member m broke rule and stops listening to it; the
// drop is then agreed like any other.
func (c *Core) violation(now time.Duration, m bucket.Slot, rule, detail string) {
	c.stats.Violations++
	if !c.live(m) {
		return
	}
	c.emit(Event{Type: EventViolation, Frame: c.executed + 1, Member: m, Detail: rule + ": " + detail})
	c.cfg.Logger.Warn("lockstep: protocol violation", "member", m, "rule", rule, "detail", detail)
	c.suspect(now, m, "violation: "+rule)
}
