package lockstep

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Faults: agreed member drops, leaves, protocol violations and splits.
//
// A member that stops listening to another (silence past Config.DropTimeout,
// a seal that stopped advancing for as long, a protocol violation, or because
// a member it listens to says so) suspects it: from then on it ignores the
// suspect's datagrams and sends it only its membership view. Every datagram
// to the others carries the sender's membership view: the set of members it
// suspects and, for each, what it holds of the suspect's stream now (Seal,
// Next) and its candidate for the suspect's last frame.
//
// The last frame L of a suspect m is the highest seal of m that a live member
// holds: a member's candidate is known once every member it considers live
// has sent a view naming m, and is then the largest Seal of m among its own
// and those views. Members that hold more of m's stream relay commands and
// seals to those that hold less, so every live member can reach L. A member
// finalizes m when every member it considers live suspects the same set and
// names the same candidate, and it holds m's stream sealed at L. No live
// member has executed a frame past L (it could not without m's seal), and
// while the members agree no live member's hold on m can rise past what the
// live members held: every live member reaches every agreed frame, and the
// drop takes effect at frame L+1 on every survivor.
//
// A member whose live set is no longer a strict majority of the members live
// before the suspicions began (on a tie: one without the lowest of them)
// stops instead of agreeing: it is on the minority side of a split, or the
// others dropped it. So after a partition only one side plays on (split.go).

// suspect stops listening to member m.
func (c *Core) suspect(now time.Duration, m bucket.Slot, reason Reason, detail string) {
	bit := uint64(1) << m
	if c.suspected&bit != 0 || m == c.self {
		return
	}
	c.suspected |= bit
	c.peers[m].suspectedAt = now
	s := c.table.Stream(m)
	c.held[m] = s.Seal()
	c.reasons[m], c.details[m] = reason, detail
	c.cfg.Logger.Info("lockstep: stopped listening to a member", "member", m, "reason", reason, "detail", detail, "held", s.Seal())
}

// Listening reports whether the core still listens to member slot: it is
// neither suspected, dropped nor gone after leaving.
func (c *Core) Listening(slot bucket.Slot) bool { return int(slot) < c.cfg.Members && c.live(slot) }

// live reports whether member p is one we listen to (not suspected; us
// included).
func (c *Core) live(p bucket.Slot) bool { return (c.suspected|c.gone)&(1<<p) == 0 }

// liveMask returns the set of members we listen to, us included.
func (c *Core) liveMask() uint64 { return c.all &^ (c.suspected | c.gone) }

// checkTimeouts suspects every member silent for longer than DropTimeout,
// every member whose seal has not advanced for as long while it talks, and
// every talking member whose seal lags our frame clock too far
// (lagLimits).
func (c *Core) checkTimeouts(now time.Duration) {
	if c.leaving {
		return // a member on its way out drops nobody
	}
	origin := max(c.epoch, c.cfg.Start)
	dtFrames, lagLimit := c.lagLimits()
	// The earliest time either test below can next hold for a member
	// listened to now: what they read only moves later until the members
	// listened to or the origin change (Ready skips the walk until then).
	c.timeoutsFrom = time.Duration(math.MaxInt64)
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) {
			continue
		}
		if left := c.leaveAt[r.slot]; left != bucket.NoFrame && c.table.Stream(r.slot).Seal() >= left {
			continue // it left and we hold all of it: its silence is expected
		}
		last := r.lastRecv
		if !r.heard {
			last = origin
		}
		c.timeoutsFrom = min(c.timeoutsFrom, min(last, max(r.sealMovedAt, origin))+c.cfg.DropTimeout)
		if now-last > c.cfg.DropTimeout {
			c.suspect(now, r.slot, ReasonSilent, fmt.Sprintf("silent for %v", (now-last).Round(time.Millisecond)))
			continue
		}
		// A seal held back while a backlog of its commands drains (under a
		// tight budget) is not stuck: new commands still arrive. Commands
		// alone keep it only for three timeouts.
		moved, cmds := max(r.sealMovedAt, origin), max(r.nextMovedAt, origin)
		talking := r.heard && now-last < c.cfg.DropTimeout/2
		if talking && now-moved > c.cfg.DropTimeout && (now-cmds > c.cfg.DropTimeout || now-moved > 3*c.cfg.DropTimeout) {
			c.suspect(now, r.slot, ReasonStalled, fmt.Sprintf("seal stuck at %d for %v", r.topSeal, (now-moved).Round(time.Millisecond)))
			continue
		}
		// Commands of ours it does not acknowledge, we repeat to it (up to
		// a burst of datagrams each repeat interval) and keep: an honest
		// member acknowledges them within a few round trips. Not within
		// two drop timeouts, it is stalled: after the others' tests, so
		// that a member whose own datagrams are lost (all of them; the
		// others find it silent or stalled after one) learns it was
		// dropped before it accuses anyone. (Not counting our own pause:
		// we repeated nothing then.)
		owed := max(r.owedSince, c.pausedTo)
		if talking && r.owedSince != 0 && now-owed > 2*c.cfg.DropTimeout && c.adm.awaiting&(1<<r.slot) == 0 {
			c.suspect(now, r.slot, ReasonStalled, fmt.Sprintf("acknowledges %d of our commands, owed %d for %v", r.acked, r.owedSeq, (now-owed).Round(time.Millisecond)))
			continue
		}
		if r.owedSince != 0 {
			c.timeoutsFrom = min(c.timeoutsFrom, owed+2*c.cfg.DropTimeout)
		}
		// A seal that moves, but slower than the frame clocks, holds every
		// member's execution back as surely as a stuck one, and in time
		// would carry the others' seals out of each other's window.
		lag := c.frame - max(r.topSeal, r.lagFrom)
		if talking && (lag > dtFrames && now-cmds > c.cfg.DropTimeout || lag > lagLimit) {
			c.suspect(now, r.slot, ReasonStalled, fmt.Sprintf("seal %d lags the frame clock (%d) by %d frames", r.topSeal, c.frame, lag))
			continue
		}
		// The lag grows by about a frame a frame (the clock's slew is at
		// most a tenth): look again after half the frames it still lacks
		// for the next limit, or when its commands' drop timeout runs out.
		limit := dtFrames
		if lag > dtFrames {
			limit = lagLimit
			c.timeoutsFrom = min(c.timeoutsFrom, cmds+c.cfg.DropTimeout)
		}
		c.timeoutsFrom = min(c.timeoutsFrom, now+time.Duration(limit-lag)*c.cfg.Frame/2)
	}
	c.timeoutsMask, c.timeoutsStart = c.liveMask(), c.cfg.Start
}

// lagLimits returns, in frames, how far a talking member's seal may lag
// our frame clock: a drop timeout's frames while its commands do not move
// either, and lagLimit whatever they do. lagLimit is three drop timeouts,
// but at most the window less the maximum delay and a drop timeout, so
// that the seals of the others, at most the maximum delay past the clock,
// stay within each other's window while the lagging member is dropped
// (never under a drop timeout).
func (c *Core) lagLimits() (dtFrames, lagLimit bucket.Frame) {
	dtFrames = bucket.Frame(c.cfg.DropTimeout / c.cfg.Frame)
	return dtFrames, max(dtFrames, min(3*dtFrames, bucket.Frame(c.cfg.Window-c.cfg.MaxDelay)-dtFrames))
}

// reasonCodes are the codes of the reasons in membership views
// (wire.MemberView.Reason); 0 says none.
var reasonCodes = [...]Reason{1: ReasonSilent, 2: ReasonStalled, 3: ReasonLeft, 4: ReasonViolation}

// reasonCode returns the wire code of reason, or 0.
func reasonCode(reason Reason) uint8 {
	for code, r := range reasonCodes {
		if r == reason && r != "" {
			return uint8(code)
		}
	}
	return 0
}

// spreadReason is the reason we give for suspecting m because another member
// did: the reason its view gives, or, from a sender that gives none, what our
// own evidence says.
func (c *Core) spreadReason(now time.Duration, m bucket.Slot, code uint8) Reason {
	if int(code) < len(reasonCodes) && reasonCodes[code] != "" {
		return reasonCodes[code]
	}
	r := c.peers[m]
	origin := max(c.epoch, c.cfg.Start)
	if r.heard && now-r.lastRecv < c.cfg.DropTimeout/2 && now-max(r.sealMovedAt, origin) > c.cfg.DropTimeout/2 {
		return ReasonStalled
	}
	return ReasonSilent
}

// namesUs handles a membership view from r that names us: r has stopped
// listening to us. We stop listening to r, and remember the frame it agreed
// on for us, if any, as evidence that we were dropped.
func (c *Core) namesUs(now time.Duration, r *remote, m *wire.Membership) {
	if i := bits.OnesCount64(m.Suspected & (1<<c.self - 1)); i < len(m.Views) {
		if last := m.Views[i].Last; last != wire.Unknown {
			c.namedBy |= 1 << r.slot
			c.namedLast = max(c.namedLast, last)
		}
	}
	c.suspect(now, r.slot, ReasonSilent, fmt.Sprintf("member %d stopped listening to us", r.slot))
}

// onMembership takes in member r's view, from a datagram newer than any
// before from it.
func (c *Core) onMembership(now time.Duration, r *remote, m *wire.Membership) {
	if bits.OnesCount64(m.Suspected) != len(m.Views) || m.Suspected>>uint(c.cfg.Members) != 0 {
		c.violation(now, r.slot, "membership", "membership view names members that do not exist")
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
		if c.suspected&(1<<slot) == 0 && !c.staleView(slot, v) {
			c.suspect(now, slot, c.spreadReason(now, slot, v.Reason), fmt.Sprintf("member %d stopped listening to it", r.slot))
		}
	}
}

// countFrames counts the commands of member m that entered its stream's
// prefix since sequence number from against the limits per frame, and
// returns what was exceeded, or "".
func (c *Core) countFrames(m bucket.Slot, from uint32) string {
	r := c.peers[m]
	for _, cmd := range c.table.Stream(m).Since(from) {
		if cmd.Frame != r.countFrame {
			r.countFrame, r.countN, r.countBytes = cmd.Frame, 0, 0
		}
		r.countN++
		r.countBytes += len(cmd.Payload)
		if r.countN > c.cfg.MaxFrameCommands || r.countBytes > c.cfg.MaxFrameBytes {
			c.overfull[m] = min(c.overfull[m], cmd.Frame)
			return fmt.Sprintf("more than %d commands or %d bytes on frame %d", c.cfg.MaxFrameCommands, c.cfg.MaxFrameBytes, cmd.Frame)
		}
	}
	return ""
}

// holds returns our seal of member m as we report it: capped at its leave
// frame when it announced one. A member that holds m's seal past its leave
// frame heard the leave (every datagram after the leave carries it), so with
// the cap no report passes the leave frame, and members that missed the
// leave agree with those that heard it. It is capped too below the first
// frame m's commands overfilled: every member that holds that frame finds
// the same one, and none relays it (relayTo), so no honest forwarder
// passes on commands past the limits.
func (c *Core) holds(m bucket.Slot) bucket.Frame {
	seal := c.table.Stream(m).Seal()
	if left := c.leaveAt[m]; left != bucket.NoFrame {
		seal = min(seal, left)
	}
	if of := c.overfull[m]; of != bucket.NoFrame {
		seal = min(seal, of-1)
	}
	return seal
}

// candidate returns our candidate for suspect m's last frame, or
// wire.Unknown while some live member has not sent a view naming m.
func (c *Core) candidate(m bucket.Slot) bucket.Frame {
	if c.finalized&(1<<m) != 0 {
		return c.table.Closed(m)
	}
	cand := c.holds(m)
	for _, r := range c.peers {
		if r == nil || r.slot == m || !c.live(r.slot) {
			continue
		}
		if !r.hasView || r.mask&(1<<m) == 0 {
			return wire.Unknown
		}
		cand = max(cand, r.views[m].Seal)
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
		if last == wire.Unknown || c.holds(m) < last {
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
		c.emit(Event{Type: EventDrop, Frame: last + 1, Member: m, LastFrame: last, Reason: c.reasons[m], Detail: c.details[m]})
		c.cfg.Logger.Info("lockstep: member dropped", "member", m, "last_frame", last, "reason", c.reasons[m], "detail", c.details[m])
	}
	if c.suspected&^c.finalized == 0 {
		c.before = c.liveMask() // settled: the members live before any new suspicion
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
		views = append(views, wire.MemberView{Held: c.held[s], Seal: c.holds(slot), Next: st.Next(), Last: c.candidate(slot), Reason: reasonCode(c.reasons[s])})
	}
	p.Membership.Views = views
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
	c.markUrgent(now)
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
	c.emit(Event{Type: EventLeave, Frame: c.leaveFrame + 1, Member: c.self, LastFrame: c.leaveFrame, Reason: ReasonLeft, Detail: "we left"})
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
	c.leavers |= 1 << m
	c.table.Close(m, last)
	c.emit(Event{Type: EventLeave, Frame: last + 1, Member: m, LastFrame: last, Reason: ReasonLeft, Detail: "left"})
}

// leaveAcks is how many datagrams acknowledging a leaver's last frame a
// member sends it before it stops listening to it.
const leaveAcks = 3

// settleLeaves stops listening to members that left once we hold all their
// commands and have told them so a few times, so their silence is not taken
// for a failure.
func (c *Core) settleLeaves(now time.Duration) {
	for m := c.leavers & c.liveMask(); m != 0; m &= m - 1 {
		r := c.peers[bits.TrailingZeros64(m)]
		if r == nil {
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
	c.suspect(now, m, ReasonViolation, rule+": "+detail)
}
