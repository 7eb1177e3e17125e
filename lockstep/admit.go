package lockstep

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Admissions: a member dropped before (a rejoin) or a slot open since the
// start (a late join) is admitted at a frame every live member agrees on,
// by the same kind of agreement as a drop (faults.go).
//
// The joiner, a core made with Config.Join, asks every member to admit it
// (an admissions entry with AdmitRequest). A member that hears the request
// (another member naming the slot starts nothing: no member can make the
// others hold for a joiner that never asked), and for which the slot is
// dropped or open, proposes a frame: its own frame plus Config.AdmitMargin,
// raised, once no drop is pending there (its entry is then settled), past
// the last frame of every drop it agreed on. It steps no frame at or past
// its proposal until the admission is final. Its candidate is the largest
// proposal of the members it listens to, known once all of them named the
// slot. It finalizes the admission at its candidate A once every member it
// listens to has sent the same candidate in a settled entry under the same
// suspected set; or when a member it listens to says the admission is final
// at A, if A can be such an agreement: at or past the first Proposal we sent
// settled (the finalizer saw one of ours), within the window. A pending
// admission that waits admitPatience drop timeouts while no drop is pending
// here suspects the members that keep it from being agreed. From A on the
// member's commands count and frames wait for its seal; before A nothing of
// it counts.
//
// Each member then tells the joiner A, the sequence number of its own first
// command stamped at or after A (the joiner takes the buckets before A from
// elsewhere, see docs/architecture.md, "Rejoins and late joins")
// and the drops it agreed on. The joiner takes A once more than half of the
// members that may count announce it (tryJoin), aligns its frame clock with
// one of theirs, takes A-1 as its executed frame and seals frames from A on
// at once: the others never wait for it while its game catches up. A member
// that announces another frame afterwards is lying: the joiner stops
// listening to it.

// admitAnnounce is how long, in drop timeouts, a member keeps naming an
// admission it agreed on in its datagrams: long enough for the others to
// agree too and for the joiner to learn where each member's commands
// start.
const admitAnnounce = 2

// admitPatience is how long, in drop timeouts, a pending admission may wait
// while no drop is pending here before we stop listening to the members
// that keep it from being agreed (ReasonStalled): a member that never names
// it, never settles its entry or names another frame would otherwise hold
// every member's execution at its proposal for ever.
const admitPatience = 2

// admissions is a core's part in admissions; its arrays have one entry per
// possible slot.
type admissions struct {
	late     uint64 // slots that were open at the start
	pending  uint64 // slots whose admission we are agreeing on
	proposal [bucket.MaxMembers]bucket.Frame
	// floor is our first Proposal sent settled (NoFrame before): a member
	// that finalized saw one of our settled Proposals, and they only rise,
	// so a final entry below it is no agreement of ours.
	floor [bucket.MaxMembers]bucket.Frame
	// waitFrom is when the admission began to wait while no drop was
	// pending here (admitPatience).
	waitFrom [bucket.MaxMembers]time.Duration

	// Admissions we agreed on, named in our datagrams until announceTo;
	// ever, every slot we admitted (frame holds its latest admission).
	announce   uint64
	ever       uint64
	frame      [bucket.MaxMembers]bucket.Frame
	start      [bucket.MaxMembers]uint32
	dropped    [bucket.MaxMembers]uint64
	announceTo [bucket.MaxMembers]time.Duration

	// The joiner's side (Config.Join).
	joining    bool   // not yet admitted
	awaiting   uint64 // members whose first command for us we do not know yet
	requestAt  time.Duration
	admittedAt bucket.Frame
	// While joining: the members we heard from, those that sent a final
	// admissions entry naming us, each one's newest final entry and
	// where its frame clock's origin lay by it, and when the first came.
	heard      uint64
	finalFrom  uint64
	finals     [bucket.MaxMembers]wire.Admission
	finalStart [bucket.MaxMembers]time.Duration
	firstFinal time.Duration

	entries []wire.Admission // scratch for sending
}

// initAdmissions sets up the open slots and the joiner's state.
func (c *Core) initAdmissions() {
	c.adm.admittedAt = -1
	if c.cfg.Join {
		c.adm.joining = true
		return
	}
	open := c.cfg.Open &^ (1 << c.self) & c.all
	c.adm.late = open
	for open != 0 {
		s := bucket.Slot(bits.TrailingZeros64(open))
		open &^= 1 << s
		// An open slot is a member dropped before frame 0: it counts for
		// nothing until admitted.
		c.suspected |= 1 << s
		c.finalized |= 1 << s
		c.held[s] = -1
		c.reasons[s] = ReasonLeft
		c.table.Close(s, -1)
	}
	c.before = c.liveMask()
}

// Joining reports whether this core (Config.Join) is still waiting to be
// admitted.
func (c *Core) Joining() bool { return c.adm.joining }

// AdmittedAt returns the frame from which this joining core counts, or -1
// before it is admitted (and for a core that did not join).
func (c *Core) AdmittedAt() bucket.Frame { return c.adm.admittedAt }

// admissible reports whether slot m may be admitted: a member whose drop
// we agreed on, or a slot open since the start.
func (c *Core) admissible(m bucket.Slot) bool {
	bit := uint64(1) << m
	return m != c.self && int(m) < c.cfg.Members && c.finalized&bit != 0 && c.leaveAt[m] == bucket.NoFrame
}

// hold returns the first frame we must not step yet: our smallest proposal
// of a pending admission, or NoFrame.
func (c *Core) hold() bucket.Frame {
	h := bucket.NoFrame
	for p := c.adm.pending; p != 0; p &= p - 1 {
		h = min(h, c.adm.proposal[bits.TrailingZeros64(p)])
	}
	return h
}

// startAdmission begins agreeing on the admission of slot m, which asked
// us itself.
func (c *Core) startAdmission(now time.Duration, m bucket.Slot) {
	if c.adm.pending&(1<<m) != 0 || !c.admissible(m) || c.leaving {
		return
	}
	c.adm.pending |= 1 << m
	c.adm.proposal[m] = max(c.frame, c.executed) + bucket.Frame(c.cfg.AdmitMargin)
	c.adm.floor[m], c.adm.waitFrom[m] = bucket.NoFrame, now
	c.settleProposals()
	c.cfg.Logger.Info("lockstep: admitting a member", "member", m, "proposal", c.adm.proposal[m])
}

// staleView reports whether a membership view's entry v of member m, which
// we listen to, is about m's earlier incarnation: a member that has not
// admitted m yet still names its old drop, whose last frame lies at least
// two frames before the admission frame. A drop of the new incarnation
// names a last frame from the admission frame - 1 on (or none yet).
func (c *Core) staleView(m bucket.Slot, v wire.MemberView) bool {
	return c.adm.ever&(1<<m) != 0 && v.Last != wire.Unknown && v.Last < c.adm.frame[m]-1
}

// settled reports whether no drop is pending here.
func (c *Core) settled() bool { return c.suspected&^c.finalized == 0 }

// settleProposals raises our proposals, once no drop is pending, past the
// last frame of every drop we agreed on, so that the joiner, which holds
// none of a dropped member's commands, never needs one (and a view's Last
// below the admission frame - 1 names an earlier incarnation, staleView).
// A proposal rises only while our entries are not settled, so no member
// agreed on it yet.
func (c *Core) settleProposals() {
	if !c.settled() {
		return
	}
	for p := c.adm.pending; p != 0; p &= p - 1 {
		m := bits.TrailingZeros64(p)
		for f := c.finalized &^ (1 << m); f != 0; f &= f - 1 {
			if last := c.table.Closed(bucket.Slot(bits.TrailingZeros64(f))); last != bucket.NoFrame {
				c.adm.proposal[m] = max(c.adm.proposal[m], last+2)
			}
		}
	}
}

// onJoinRequest handles a datagram from slot from that asks to be admitted:
// it starts the admission if the slot is admissible, and notes that the
// joiner waits for our answer. It reports whether the datagram was a
// request (then nothing else in it counts).
func (c *Core) onJoinRequest(now time.Duration, from bucket.Slot, p *wire.Packet) bool {
	for _, a := range p.Admissions {
		if a.Slot != from || a.Flags&wire.AdmitRequest == 0 {
			continue
		}
		if c.adm.joining {
			return true
		}
		c.startAdmission(now, from)
		if r := c.peers[from]; !c.live(from) {
			r.replyDue = true
		} else {
			c.markPending(now, r) // admitted already: it needs our answer
		}
		return true
	}
	return false
}

// announcesUs reports whether p carries an admissions entry for self
// other than a request: a member announcing our admission, which it
// repeats until we echo it (onAdmissions, admitHeard).
func announcesUs(p *wire.Packet, self bucket.Slot) bool {
	for _, a := range p.Admissions {
		if a.Slot == self && a.Flags&wire.AdmitRequest == 0 {
			return true
		}
	}
	return false
}

// onAdmissions takes in member r's admissions entries, from a datagram p
// newer than any before from it.
func (c *Core) onAdmissions(now time.Duration, r *remote, p *wire.Packet) {
	if r.admitSent && p.HasEcho && int16(p.Echo.Number-r.admitNum) >= 0 {
		r.admitHeard = true // the joiner has our final entry
	}
	r.admMask = 0
	for _, a := range p.Admissions {
		if int(a.Slot) >= c.cfg.Members || a.Flags&wire.AdmitRequest != 0 {
			continue
		}
		if a.Flags&wire.AdmitFinal != 0 && c.adm.ever&(1<<a.Slot) != 0 && a.Frame <= c.adm.frame[a.Slot] {
			continue // an admission we made already, still announced
		}
		r.admMask |= 1 << a.Slot
		r.adm[a.Slot] = a
		if a.Flags&wire.AdmitLate != 0 && c.admissible(a.Slot) {
			c.adm.late |= 1 << a.Slot // open since the start: a joiner learns it here
		}
		// Another member naming a slot starts nothing here: only the
		// joiner's own request does (onJoinRequest), so no member can
		// make the others hold for a joiner that never asked. A final
		// entry counts only for an admission we agree on too, at a frame
		// an agreement over our Proposal can have reached.
		if a.Flags&wire.AdmitFinal != 0 && c.adm.pending&(1<<a.Slot) != 0 && c.finalPlausible(a.Slot, a.Frame) {
			c.admit(now, a.Slot, a.Frame)
		}
	}
}

// finalPlausible reports whether a member's final entry for slot m at
// frame at can be the agreement on a pending admission of ours: an
// agreement is the largest settled Proposal of every live member, ours
// included, so it lies at or past the first we sent settled; and a frame
// we have not executed yet, within the window.
func (c *Core) finalPlausible(m bucket.Slot, at bucket.Frame) bool {
	return c.adm.floor[m] != bucket.NoFrame && at >= c.adm.floor[m] && c.ahead(at)
}

// admissionCandidate returns our candidate for slot m's admission frame,
// or wire.Unknown while a member we listen to has not named it.
func (c *Core) admissionCandidate(m bucket.Slot) bucket.Frame {
	cand := c.adm.proposal[m]
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) {
			continue
		}
		if r.admMask&(1<<m) == 0 {
			return wire.Unknown
		}
		cand = max(cand, r.adm[m].Proposal)
	}
	return cand
}

// agreeAdmissions finalizes every pending admission all live members agree
// on. Admissions wait while a drop is pending: the joiner must know whom
// not to wait for.
// A pending admission that waits longer than admitPatience drop timeouts
// while no drop is pending here suspects the members that keep it from
// being agreed (suspectBlockers).
func (c *Core) agreeAdmissions(now time.Duration) {
	if !c.settled() {
		for p := c.adm.pending; p != 0; p &= p - 1 {
			c.adm.waitFrom[bits.TrailingZeros64(p)] = now
		}
		return
	}
	c.settleProposals()
	for p := c.adm.pending; p != 0; p &= p - 1 {
		m := bucket.Slot(bits.TrailingZeros64(p))
		cand := c.admissionCandidate(m)
		if cand != wire.Unknown && c.ahead(cand) {
			agreed := true
			for _, r := range c.peers {
				if r != nil && c.live(r.slot) && (r.mask != c.suspected || r.adm[m].Frame != cand || r.adm[m].Flags&wire.AdmitSettled == 0) {
					agreed = false
					break
				}
			}
			if agreed {
				c.admit(now, m, cand)
				continue
			}
		}
		if now-c.adm.waitFrom[m] >= admitPatience*c.cfg.DropTimeout {
			c.suspectBlockers(now, m, cand)
		}
	}
}

// suspectBlockers stops listening to every live member that keeps the
// admission of slot m, whose candidate is cand, from being agreed: it names
// no admission of m, names one we cannot take as final, has not settled its
// entry, proposes a frame past the window, or names another candidate under
// the same suspicions as ours. (A member whose suspicions differ has a drop
// pending, which the drop agreement settles.)
func (c *Core) suspectBlockers(now time.Duration, m bucket.Slot, cand bucket.Frame) {
	limit := c.windowEnd()
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) || r.slot == m || c.leaveAt[r.slot] != bucket.NoFrame {
			continue // (a member on its way out admits nobody: it leaves)
		}
		a := r.adm[m]
		var detail string
		switch {
		case r.admMask&(1<<m) == 0:
			detail = fmt.Sprintf("names no admission of member %d", m)
		case a.Flags&wire.AdmitFinal != 0:
			detail = fmt.Sprintf("admitted member %d at frame %d, which no agreement over our proposal %d reaches", m, a.Frame, c.adm.floor[m])
		case a.Flags&wire.AdmitSettled == 0:
			detail = fmt.Sprintf("never settled the admission of member %d", m)
		case a.Proposal > limit:
			detail = fmt.Sprintf("proposes frame %d for member %d, past the window", a.Proposal, m)
		case r.mask == c.suspected && cand != wire.Unknown && a.Frame != cand:
			detail = fmt.Sprintf("names frame %d for member %d, not %d", a.Frame, m, cand)
		default:
			continue
		}
		c.suspect(now, r.slot, ReasonStalled, "admission: "+detail)
	}
	c.adm.waitFrom[m] = now
}

// admit makes slot m a live member again from frame at on.
func (c *Core) admit(now time.Duration, m bucket.Slot, at bucket.Frame) {
	bit := uint64(1) << m
	kind, detail := EventRejoin, "rejoined"
	if c.adm.late&bit != 0 {
		kind, detail = EventJoin, "joined late"
	}
	c.adm.pending &^= bit
	c.suspected &^= bit
	c.finalized &^= bit
	c.gone &^= bit
	c.held[m], c.reasons[m], c.details[m] = -1, "", ""
	c.leaveAt[m], c.overfull[m] = bucket.NoFrame, bucket.NoFrame
	c.leavers &^= bit
	c.table.Stream(m).Reset(0, at-1)
	c.table.Reopen(m)
	c.chains[m], c.chainCounts[m] = chainState{}, 0
	// The joiner gets our commands from the first stamped at or after the
	// admission frame (we may have stamped some already, and keep them
	// until executed): the ones before are in the buckets it catches up
	// from.
	own := c.table.Stream(c.self)
	first := seqAfter(own, at-1)
	r := newRemote(m, at-1)
	// Our datagrams to it keep their numbering: the joiner heard the ones
	// we sent before (our answers to its requests) and takes only newer
	// ones as news.
	old := c.peers[m]
	r.number, r.sends, r.sent, r.lastSend = old.number, old.sends, old.sent, old.lastSend
	r.acked, r.ackedSeal = first, -1
	r.heard, r.heardPos, r.lastRecv = true, c.position(now), now
	// Its join requests were numbered too, but we kept none of their
	// numbers (r.numbered is false): the gap before its first datagram
	// after them is no loss.
	// Its seal need not move before the admission frame comes near: its
	// stall clock starts then.
	// (A frame is at most a window ahead: no overflow.)
	r.sealMovedAt = now + time.Duration(min(max(at-c.frame, 0), bucket.Frame(c.cfg.Window)))*c.cfg.Frame
	r.nextMovedAt = r.sealMovedAt
	c.markPending(now, r)
	c.peers[m] = r
	c.notePolicyLag(r)
	c.ackedBy[m] = r.acked
	c.adm.announce |= bit
	c.adm.ever |= bit
	c.adm.frame[m], c.adm.start[m], c.adm.dropped[m] = at, first, c.finalized
	c.adm.announceTo[m] = now + admitAnnounce*c.cfg.DropTimeout
	if c.suspected&^c.finalized == 0 {
		c.before = c.liveMask()
	}
	c.emit(Event{Type: kind, Frame: at, Member: m, Detail: detail})
	c.cfg.Logger.Info("lockstep: member admitted", "member", m, "frame", at, "kind", kind)
}

// admissionsView fills p's admissions block for a datagram to r: our
// pending admissions with our proposal and candidate, those we agreed on
// while we announce them, and nothing else.
func (c *Core) admissionsView(now time.Duration, p *wire.Packet, r *remote) {
	as := c.adm.entries[:0]
	// Only the members with an admission pending or announced: the
	// others give no entry, and this runs for every datagram.
	for mask := c.adm.pending | c.adm.announce; mask != 0; mask &= mask - 1 {
		s := bits.TrailingZeros64(mask)
		bit := uint64(1) << s
		m := bucket.Slot(s)
		var flags uint8
		if c.adm.late&bit != 0 {
			flags = wire.AdmitLate
		}
		switch {
		case c.adm.pending&bit != 0:
			if c.settled() {
				flags |= wire.AdmitSettled
				c.adm.floor[s] = min(c.adm.floor[s], c.adm.proposal[s])
			}
			as = append(as, wire.Admission{Slot: m, Flags: flags, Proposal: c.adm.proposal[s], Frame: c.admissionCandidate(m)})
		case c.adm.announce&bit != 0 && (now < c.adm.announceTo[s] || r.slot == m && !r.admitHeard):
			// The joiner itself hears it until it has shown it did: it
			// ignores our datagrams until then.
			at := c.adm.frame[s]
			as = append(as, wire.Admission{Slot: m, Flags: flags | wire.AdmitFinal, Proposal: at, Frame: at, Start: c.adm.start[s], Dropped: c.adm.dropped[s]})
			if r.slot == m && !r.admitSent {
				r.admitSent, r.admitNum = true, r.number // this datagram's number (recordSend)
			}
		case c.adm.announce&bit != 0:
			c.adm.announce &^= bit
		}
	}
	c.adm.entries = as
	p.Admissions = as
}
