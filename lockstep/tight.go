package lockstep

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// A tight byte budget.
//
// When Config.Budget cannot carry a datagram a frame to every other member
// (tight), datagrams go out one at a time in rounds over the members, as
// the budget refills (send), paced: the budget's bucket holds only what
// one send needs (burst), since a burst after a quiet spell would queue on
// an uplink as fast as the budget and never drain. Each is as small as it
// can be: only every tightHashEvery-th checkpoint goes out, once to each
// member, our statement in at most one datagram per budgetStatementGap, the
// echo in every tightEchoEvery-th datagram to a member, and no second copy
// follows a datagram with news.
// What covers a lost datagram instead is that every datagram carries the
// seals its sender holds of the other members (heldSeals): a seal lost on
// its direct path arrives by another member's next datagram. The lead then
// covers how late each member's seal reached each frame by whichever path
// came first, measured as the lead that would have made it on time
// (sealReached), which takes in both the network's delay and the wait of a
// seal change for its turn in the round.

// tightDatagram is the payload of a typical small datagram in bytes, with
// which tight decides whether the budget carries a datagram a frame to
// every other member.
const tightDatagram = 40

// tight reports whether the byte budget cannot carry a typical datagram a
// frame to every other member.
func (c *Core) tight() bool {
	if c.cfg.Budget <= 0 {
		return false
	}
	perFrame := int64(c.cfg.Members-1) * int64(c.cfg.Overhead+tightDatagram)
	return int64(c.cfg.Budget)*int64(c.cfg.Frame) < perFrame*int64(time.Second)
}

// checkpointSends returns how many datagrams to a member carry each
// checkpoint: checkpointSends, or one under a tight budget, where every
// byte delays the next seal (a lost one is not repaired: the next
// checkpoint follows tightHashEvery intervals later).
func (c *Core) checkpointSends() int {
	if c.tight() {
		return 1
	}
	return checkpointSends
}

// tightHashEvery is, under a tight budget, which checkpoints go out: those
// of every tightHashEvery-th hash interval (every 2 s at the default 10
// frames and 20 Hz). A checkpoint costs 19 bytes, and at one every interval
// to each member it rode in two of five datagrams; a desync is then found
// up to that much later.
const tightHashEvery = 4

// checkpointDue reports whether our current checkpoint goes out at all:
// always, or under a tight budget only every tightHashEvery-th.
func (c *Core) checkpointDue() bool {
	return !c.tight() || c.checkpoint.Frame%bucket.Frame(tightHashEvery*c.cfg.HashInterval) == 0
}

// tightEchoEvery is, under a tight budget, how many datagrams to a member
// carry one echo (3–4 bytes): the round trip it measures paces repeats,
// which a tight budget's rounds pace instead.
const tightEchoEvery = 4

// tightEchoFirst is how many datagrams to a member carry an echo each
// before only every tightEchoEvery-th does: the lead follows the reports
// only once every path's round trip is measured (updatePolicy), and with an
// echo in every fourth datagram from the start the members' leads left the
// start lead seconds apart, each measuring the others' seals against its
// own lead.
const tightEchoFirst = 32

// echoDue reports whether the datagram numbered n to a member that we have
// heard carries an echo.
func (c *Core) echoDue(n uint16) bool {
	return !c.tight() || n < tightEchoFirst || n%tightEchoEvery == 0
}

// budgetStatementGap is, under a tight budget, the shortest gap between two
// datagrams that carry our statement (to any members): with one a quarter
// second, statements took a sixteenth of the budget.
const budgetStatementGap = time.Second

// statementRoom reports whether a datagram built now may carry our
// statement. Without a tight budget it always may. Under one, a statement
// (a signature of 64 bytes) goes in at most one datagram per
// budgetStatementGap, the newest one to the next member lacking it:
// sending each new statement with the commands it covers, to every member
// at once, made the round of datagrams that carries them twice as long as
// the others, and the lead covers the longest rounds. The cost is that a
// forwarder may hold an older statement than the commands it relays of a
// dropped member: those are then accepted unproven (Stats.Unproven).
func (c *Core) statementRoom(now time.Duration) bool {
	return !c.tight() || c.stmtOutAt == 0 || now-c.stmtOutAt >= budgetStatementGap
}

// heldSealsPerDatagram is how many held seals a datagram carries under a
// tight budget, at most: each costs two or three bytes, and a member hears
// from every other member once a round, so with six (every other member of
// eight) each member's seal reaches it by six other paths a round besides
// its own. With two, the lead sat a frame higher on the modem.
const heldSealsPerDatagram = 6

// heldHorizon is how many frames past our current frame a held seal may
// need commands for: each member's held seal is cut at its first command
// stamped later than that (cappedSeal).
const heldHorizon = 4

// heldSeals adds to p, under a tight budget and while no change of the
// membership is pending (membersSettled), the seals we hold of up to
// heldSealsPerDatagram live members other than us and r, taken in turn
// from one datagram to r to the next, each cut before its newest commands
// (cappedSeal).
func (c *Core) heldSeals(p *wire.Packet, r *remote) {
	if !c.tight() || !c.membersSettled() {
		return
	}
	var cand [bucket.MaxMembers]bucket.Slot
	n := 0
	for i := range c.cfg.Members {
		m := bucket.Slot(i)
		if m != c.self && m != r.slot && c.live(m) && c.table.Stream(m).Seal() >= 0 {
			cand[n], n = m, n+1
		}
	}
	p.Seals = c.sealsBuf[:0]
	if n == 0 {
		return
	}
	first := int(r.number) * heldSealsPerDatagram % n
	for i := range n {
		if (i-first+n)%n < heldSealsPerDatagram {
			seal, next := c.cappedSeal(cand[i])
			p.Seals = append(p.Seals, wire.HeldSeal{Member: cand[i], Seal: seal, Next: uint16(next)})
		}
	}
	c.sealsBuf = p.Seals[:0]
}

// cappedSeal returns member m's seal as we hold it, and how many of its
// commands it needs, cut before m's first command stamped past
// heldHorizon frames from our current frame: m's commands numbered below
// that one's, then nothing more up to the frame before it. Commands never
// go down in frame along a stream, so that is a promise m's own implies. A
// new command reaches the others by m's own datagrams, up to a round
// apart; a held seal that needs it waits for it and is worth nothing until
// then, while one cut before it moves the receiver's frames up to the
// command's (a lead away when it was stamped).
func (c *Core) cappedSeal(m bucket.Slot) (bucket.Frame, uint32) {
	s := c.table.Stream(m)
	seal, next := s.Seal(), s.Next()
	cmds := s.Since(s.Base())
	k := len(cmds)
	for k > 0 && cmds[k-1].Frame > c.frame+heldHorizon {
		k--
	}
	if k < len(cmds) {
		seal, next = min(seal, cmds[k].Frame-1), cmds[k].Seq
	}
	return seal, next
}

// membersSettled reports whether no change of the membership is pending as
// we see it: no drop we have not finalized (a dropped member and a slot
// still open count once final), no leave announced of a member we still
// listen to, and no admission we are agreeing on. Held seals go out and are
// taken only then: while members agree on a drop or a leave, each member's
// seal of the member concerned is what it holds itself, and the agreement
// moves what others lack (faults.go, relay.go).
func (c *Core) membersSettled() bool {
	return c.suspected&^c.finalized == 0 && c.leavers&c.liveMask() == 0 && c.adm.pending == 0
}

// leadChange is the lead in force from frame-clock position pos on.
type leadChange struct{ pos, lead time.Duration }

// noteLead records our lead at position pos if it changed.
func (c *Core) noteLead(pos time.Duration) {
	l := c.lead.Duration()
	if c.leadN > 0 && c.leadHist[(c.leadN-1)%len(c.leadHist)].lead == l {
		return
	}
	c.leadHist[c.leadN%len(c.leadHist)] = leadChange{pos, l}
	c.leadN++
}

// leadFor returns the lead under which frame g was sealed, as far as our
// own recent leads tell: the newest whose start came before g's time less
// that lead.
func (c *Core) leadFor(g bucket.Frame) time.Duration {
	at := time.Duration(g) * c.cfg.Frame
	n := min(c.leadN, len(c.leadHist))
	for k := 1; k <= n; k++ {
		h := c.leadHist[(c.leadN-k)%len(c.leadHist)]
		if at-h.lead >= h.pos || k == n {
			return h.lead
		}
	}
	return c.lead.Duration()
}

// onHeldSeals takes, while no change of the membership is pending
// (membersSettled), the seals a datagram from live member from carries of
// the other live members as their promises: each holds once we have that
// member's commands below its Next. A held seal beyond our window is
// ignored (a direct seal there is a violation; a forwarded one may be a
// forwarder's error).
func (c *Core) onHeldSeals(now time.Duration, from bucket.Slot, hs []wire.HeldSeal) {
	if !c.membersSettled() {
		return
	}
	limit := c.windowEnd()
	for _, h := range hs {
		m := h.Member
		if int(m) >= c.cfg.Members || m == c.self || m == from || !c.live(m) || h.Seal > limit {
			continue
		}
		s := c.table.Stream(m)
		old := s.Seal()
		s.Promise(h.Seal, wire.Unwrap16(s.Next(), h.Next))
		c.sealReached(now, m, old)
	}
}

// sealReached notes, under a tight budget, that member m's seal as we hold
// it may have moved on from old: the first frame it newly covers, old+1,
// reached us now, by our frame clock, how long after m sealed it: m sealed
// that frame when its frame clock passed the frame's time less its lead
// (our own lead at the time stands for m's: the members' leads agree
// within the time a report travels, leadFor). That is the lead that would
// have brought this seal on time, by whichever path it came first. It counts in the lateness our reports come
// from (addLateness) in place of the direct datagrams' samples.
func (c *Core) sealReached(now time.Duration, m bucket.Slot, old bucket.Frame) {
	if !c.tight() || !c.sched.adaptive() {
		return
	}
	s := c.table.Stream(m)
	if s.Seal() <= old || old < 0 {
		return
	}
	pos := c.position(now)
	if pos < 0 {
		return
	}
	// m sealed old+1 at its time less the lead, or when its frame clock
	// started if that was later.
	sealed := time.Duration(old+1)*c.cfg.Frame - c.leadFor(old+1)
	if sealed < tightWarmUp {
		return // the first datagrams wait for everything the start sends
	}
	if c.beforeResume(now, pos, sealed) {
		return // sealed before we resumed: it waited for us
	}
	c.addLateness(now, c.peers[m], pos-sealed, true, true)
}

// minLate returns how many samples of lateness it takes before we report
// any: minLateSamples, or under a tight budget tightLateSamples.
func (c *Core) minLate() int {
	if c.tight() {
		return tightLateSamples
	}
	return minLateSamples
}

// Under a tight budget: how many samples of the seals' lateness it takes
// before we report any, and how long after frame 0 a seal's lateness
// starts to count (the first datagrams wait behind everything a start
// sends, statements and checkpoints to every member).
const (
	tightLateSamples = 100
	tightWarmUp      = time.Second
)

// tightBand returns the lateness the lead follows under a tight budget,
// given the largest report lag, once every path is measured: the first
// time lag plus half a step, so that the lead's first level is not a
// report of the first few hundred samples rounded up by a hair; after
// that lag itself, except that a report above the lead by less than half
// a step leaves the lead where it is. The lead then rises only for a
// report half a step above it, as it falls only for one half a step below
// the level under it (delay.LeadPolicy): a single late seal in the window
// of lateness held the lead a step up for a minute (40 s of window and 800
// frames of asking for less), which cost a fixed delay's p95 against a
// fixed delay with the same stalls.
func (c *Core) tightBand(lag time.Duration) time.Duration {
	half := c.lead.Policy.Step / 2
	if !c.levelled {
		c.levelled = true
		return lag + half
	}
	cur, m := c.lead.Duration(), c.lead.Policy.Margin
	if lag+m > cur && lag+m <= cur+half {
		return cur - m
	}
	return lag
}

// tightLead sets the lead's steps for a tight budget. A round of datagrams
// takes about as long as the network's delay, so the seals' lateness
// spreads over a few frames, and a lead that follows it in half frames
// moves among three or four values: the p95 of the commands follows its
// highest, the stalls its lowest, and a fixed delay between them beats it
// on both. Whole frames, a lower one only after tightShrinkAfter frames
// asking for it, and the lateness all but the usual share stayed
// within (updatePolicy), keep it on one value.
func (c *Core) tightLead() {
	c.lead.Policy.Step = c.cfg.Frame
	c.lead.Policy.ShrinkAfter = tightShrinkAfter
}

// tightShrinkAfter is how many frames in a row (80 s at 20 Hz, two windows
// of lateness) must ask for a lower lead under a tight budget before it
// falls. After one window (800 frames), a spell of lower lateness that
// lasted a window took the lead a frame down late in a session, where it
// stalled as often as a fixed delay of that lead without its p95.
const tightShrinkAfter = 1600
