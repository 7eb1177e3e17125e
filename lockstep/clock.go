package lockstep

import (
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/delay"
)

// advanceClock moves the frame clock to now, slowing it (by at most a tenth
// of real time) while this member runs ahead of the slowest member it hears.
func (c *Core) advanceClock(now time.Duration) {
	if now < c.lastNow {
		now = c.lastNow
	}
	if c.adm.joining {
		c.lastNow = now // no frame clock before we are admitted
		return
	}
	c.resume(now)
	if c.dueBy > 0 && now > c.dueBy+c.cfg.Frame {
		// The caller ran late: this process was paused (descheduled, a
		// collection, a frozen machine). What arrived meanwhile waited
		// for us, not for the network (sampleLateness).
		c.pausedTo = now
	}
	dt := now - c.lastNow
	c.lastNow = now
	pos := c.position(now)
	if dt > 0 && pos > 0 {
		slowest, ok := c.slowestClock(now)
		if ok && pos-slowest > c.cfg.Frame/8 {
			c.slew += min(dt/10, pos-slowest)
			c.stats.Slewed += min(dt/10, pos-slowest)
			pos = c.position(now)
		}
	}
	if f := bucket.Frame(pos / c.cfg.Frame); pos >= 0 && f > c.frame {
		c.frame = f
	}
	// Our seal: nothing further below the frame our next command would go
	// to. A seal change goes out at once: it is what the others wait for.
	own := c.table.Stream(c.self)
	seal := c.stamp(pos) - 1
	if c.sched.turns.Ahead > 0 {
		seal = c.turnSeal()
	}
	if seal > own.Seal() {
		own.SetSeal(seal)
		// When it was due: under the adaptive policy the seal passes a
		// frame at that frame's time less the lead, which the caller's
		// wake-up may have missed by a little; the others must allow for
		// that wait too.
		c.sealAt = now
		if due, ok := c.sealDue(seal); ok {
			if late := pos - due; late > 0 && late < c.cfg.Frame {
				c.sealAt = now - late
			}
		}
		c.markUrgent(now)
	}
}

// stamp returns the frame a command submitted at frame-clock position pos
// goes to, before the bounds of the seal and the executed frame: a fixed
// number of frames after the current one, or, under the adaptive policy,
// the first frame at least the lead away (delay.StampFrame), and never the
// current frame. Turns (turnSeal) override it.
func (c *Core) stamp(pos time.Duration) bucket.Frame {
	if c.sched.fixed > 0 {
		return c.frame + bucket.Frame(c.sched.fixed)
	}
	return max(delay.StampFrame(pos, c.lead.Duration(), c.cfg.Frame), c.frame+1)
}

// sealDue returns the frame-clock position at which, under the adaptive
// policy, our seal passes frame g: its time less the lead. ok is false with
// a fixed delay or turns, whose seals move at frame ticks.
func (c *Core) sealDue(g bucket.Frame) (pos time.Duration, ok bool) {
	if !c.sched.adaptive() {
		return 0, false
	}
	return time.Duration(g)*c.cfg.Frame - c.lead.Duration(), true
}

// delayFrames returns how many frames ahead a command submitted at the
// start of a frame goes, and the lead in force (zero with a fixed delay or
// turns, whose seals move at frame ticks).
func (c *Core) delayFrames() (int, time.Duration) {
	switch {
	case c.sched.turns.Ahead > 0:
		return c.stats.Delay, 0
	case c.sched.fixed > 0:
		return c.sched.fixed, 0
	}
	l := c.lead.Duration()
	return int(l/c.cfg.Frame) + 1, l
}

// turnSeal advances the schedule of turns to the frame clock and returns
// the seal it implies: the frame before the turn Ahead turns after the
// current one.
func (c *Core) turnSeal() bucket.Frame {
	if c.turnLen == 0 {
		c.turnLen = c.turnLength()
	}
	for c.frame >= c.turnStart+bucket.Frame(c.turnLen) {
		c.turnStart += bucket.Frame(c.turnLen)
		c.turnLen = c.turnLength()
	}
	ahead := c.sched.turns.Ahead * c.turnLen
	c.stats.Delay = ahead
	return c.turnStart + bucket.Frame(ahead) - 1
}

// turnLength returns the length of the next turn in frames: the configured
// one, or the largest smoothed RTT to a live member in whole frames.
func (c *Core) turnLength() int {
	if c.sched.turns.Length > 0 {
		return c.sched.turns.Length
	}
	var rtt time.Duration
	for _, r := range c.peers {
		if r != nil && c.live(r.slot) && r.rttN > 0 {
			rtt = max(rtt, r.srtt)
		}
	}
	if rtt == 0 {
		return c.cfg.InitialDelay
	}
	n := int((rtt + c.cfg.Frame - 1) / c.cfg.Frame)
	return max(1, min(n, c.cfg.MaxDelay/max(1, c.sched.turns.Ahead)))
}

// sampleLateness records how long the news in r's datagrams took to reach
// us, on the arrival of a datagram newer than any before, sent when r's
// frame clock read clock: our frame clock now minus that reading. That is
// the datagram's one-way delay plus how far r's frame clock lags ours, and it
// is exactly what r's lead must cover for its seals to arrive before we need
// them: r seals frame g when its clock passes g·frame−lead, and we need the
// seal when ours reaches g·frame. The skipped datagrams numbered in between
// were lost or overtaken: their news arrived with this one, so each counts
// from its estimated send time, spread evenly between the previous newest
// datagram's clock and this one's. A datagram before frame 0 says nothing,
// nor one sent before the path first carried anything (settled false), nor
// one sent before we last resumed from a pause of our own (advanceClock):
// its lateness is our pause, which the others' leads need not cover.
func (c *Core) sampleLateness(now time.Duration, r *remote, skipped int, clock time.Duration, settled bool) {
	pos := c.position(now)
	prev := r.newestClock
	r.newestClock = clock
	if pos < 0 || clock <= 0 || !settled || c.tight() && c.sched.adaptive() {
		// Under a tight budget the seals' own lateness counts instead
		// (sealReached).
		return
	}
	if c.beforeResume(now, pos, clock) {
		return // sent before we resumed
	}
	if prev > 0 && skipped > 0 {
		// One lost datagram is what the second copy of a seal repairs
		// (Config.SealRepeat), and its estimated send time is crude: it
		// counts in the window but does not raise the peak. A run of them
		// is a burst the peak must remember.
		n := min(skipped, maxSkippedSamples)
		for i := 1; i <= n; i++ {
			sent := prev + (clock-prev)*time.Duration(i)/time.Duration(n+1)
			c.addLateness(now, r, pos-sent, skipped > 1, false)
		}
	}
	c.addLateness(now, r, pos-clock, true, true)
}

// beforeResume reports whether at, a position of the frame clock (another
// member's, read as ours: pos is ours at now), came before we last resumed
// from a pause of our own (advanceClock): what was sent then waited for us.
func (c *Core) beforeResume(now, pos, at time.Duration) bool {
	return now-pos+at < c.pausedTo
}

// addLateness records one sample of how late r's datagrams' news reached
// us: in r's window (its PeerStats) and in the tail of every member's
// lateness our reports come from (Core.late). A sample that is not a
// candidate counts in the tail's size but does not set it; one not measured
// (a skipped datagram's, from its estimated send time) is never a jump
// (below).
//
// When the lateness shifts (the moving average of the newest samples
// exceeds twice the window's mean by lateShift and, but under a tight
// budget, the worst sample of the window's past blocks; or it falls under
// half of the mean by as much), the network changed and the window's older
// blocks describe a network that is gone: they are forgotten, so that the
// report follows the new samples alone at once rather than as they
// outnumber the old ones over the window. (Bursts of loss on a steady
// network move the average of 32 samples far less, and stay within the
// worst of its past.) When it falls, the current block goes too (but under
// a tight budget): it holds the worse network's last seconds, which would
// hold the report up for the whole window.
func (c *Core) addLateness(now time.Duration, r *remote, d time.Duration, candidate, measured bool) {
	r.lags.Add(d)
	if c.lateFast == 0 {
		c.lateFast = d
	}
	c.lateFast += (d - c.lateFast) / lateFastSamples
	// Measured samples far past the worst of the window's past blocks from
	// two members within lateRiseLead (or from the only other live one)
	// are a changed network too, seen a few samples sooner than the
	// average sees it: every frame sealed meanwhile under the old lead
	// stalls. (One member's alone may be its own silence, which the others
	// need not pay for; our own pause never reaches here, sampleLateness.)
	// A past worst of 0 or below (PastWorst's 0) is no reference: a
	// window of news only a little late or early jumps on nothing.
	jump := false
	if candidate && measured && c.lateMax > 0 && d > 2*c.lateMax+lateShift && !c.tight() && c.late.Len(now) >= lateShiftSamples {
		jump = bits.OnesCount64(c.liveMask()&^(1<<c.self)) <= 1 || c.jumpFrom != r.slot && now-c.jumpAt < lateRiseLead
		c.jumpFrom, c.jumpAt = r.slot, now
	}
	if c.late.Len(now) >= lateShiftSamples { // a jump needs as many
		switch m := c.late.Mean(now); {
		case jump || c.lateFast > 2*m+lateShift && (c.lateFast > c.lateMax || c.tight()) || (c.lateFast < m/2-lateShift && c.tight()):
			c.late.Forget()
			c.lateHeld = 0
			if jump {
				c.lateRose, c.lateUp, c.lateJump = now, true, max(c.lateJump, d)
				c.lastPolicy = min(c.lastPolicy, now-c.cfg.Frame) // update the lead now, not at the next frame
			}
		case c.lateFast < m/2-lateShift:
			c.late.Reset()
			c.lateHeld = c.lateReport
		}
	}
	c.late.Add(now, d, candidate)
}

// lateShiftSamples is how many samples the window of lateness must hold
// before a shift of the newest ones forgets the older (addLateness).
const lateShiftSamples = 800

// maxSkippedSamples bounds the samples one arrival adds for the datagrams
// it skipped, so a long outage does not flush the whole window at once.
const maxSkippedSamples = 16

// position returns the frame-clock position at now: time since frame 0
// began, less the slowing applied so far.
func (c *Core) position(now time.Duration) time.Duration {
	return now - c.cfg.Start - c.slew
}

// slowestClock estimates the slowest frame clock of a live member at our
// time now. The member with the slowest clock is remembered, so a datagram
// costs a scan of every member only when it makes that member's clock
// faster or the live members change (clockMoved).
func (c *Core) slowestClock(now time.Duration) (time.Duration, bool) {
	if live := c.liveMask(); !c.slow.valid || c.slow.mask != live {
		c.slow = slowest{valid: true, mask: live, slot: -1}
		for _, r := range c.peers {
			if r == nil || !c.live(r.slot) || r.clockN == 0 {
				continue
			}
			if k := r.clockKey(); c.slow.slot < 0 || k < c.slow.key {
				c.slow.key, c.slow.slot = k, int(r.slot)
			}
		}
	}
	if c.slow.slot < 0 {
		return 0, false
	}
	return now + c.slow.key, true
}

// slowest is the member with the slowest frame clock among the live
// members mask, and its clockKey; slot -1 when none has a clock yet.
type slowest struct {
	valid bool
	mask  uint64
	slot  int
	key   time.Duration
}

// clockMoved updates the slowest clock after a datagram from r changed
// r's clock estimate.
func (c *Core) clockMoved(r *remote) {
	if !c.slow.valid || !c.live(r.slot) {
		return
	}
	switch k := r.clockKey(); {
	case int(r.slot) == c.slow.slot && k > c.slow.key:
		c.slow.valid = false // it may no longer be the slowest
	case c.slow.slot < 0 || k <= c.slow.key:
		c.slow.key, c.slow.slot = k, int(r.slot)
	}
}

// notePolicyLag notes r's lateness report for updatePolicy after its
// report or its round trips changed: the report once its path is measured
// (eight round trips or more, and a report), else 0.
func (c *Core) notePolicyLag(r *remote) {
	lag := r.reportedLag
	if r.rttN < 8 {
		lag = 0
	}
	c.policyLags[r.slot] = lag
}

// updatePolicy resizes the delay from fresh measurements, at most once a
// frame.
func (c *Core) updatePolicy(now time.Duration) {
	if now-c.lastPolicy < c.cfg.Frame {
		return
	}
	c.lastPolicy = now
	// Until the window holds minLate samples the report is too thin to
	// give, and zero says "not measured yet" (partial, below): every
	// member's lead then follows the largest report, which meets a rise of
	// the lateness at once. After a fall emptied the window (addLateness)
	// the last report stands instead until it refills: a report of zero
	// would raise the leads just as the network got better. After a jump
	// forgot the window (addLateness), its samples are the report however
	// few they are (the largest, at first): every member's lead must meet
	// the jump now.
	c.lateReport = c.lateHeld
	n := c.late.Len(now)
	if n >= c.minLate() {
		c.lateUp = false
	}
	if n >= c.minLate() || c.lateUp && n > 0 {
		c.lateHeld = 0
		share := lateShare / float64(max(1, c.cfg.Members-1))
		c.lateReport = c.late.Quantile(now, share)
	}
	if !c.tight() {
		c.lateMax = c.late.PastWorst(now) // (addLateness)
	}
	if !c.sched.adaptive() {
		return // the delay is not ours to adapt
	}
	// When the seal changes wait a frame or more for their send, that is
	// the byte budget's queue, and the wait is held like the lateness: a
	// higher one at once, a lower one only over waitMemory, so the lead
	// does not follow every swing of the queue (which would cost both its
	// highs and its lows, as a wandering lateness does). A shorter wait is
	// timer slack, followed as measured.
	if c.frame%10 == 0 {
		w := c.waits.Percentile(99)
		c.stats.SendWait = w
		if c.cfg.Budget > 0 && c.waitHold >= c.cfg.Frame {
			w = max(w, c.waitHold-(c.waitHold-w)*10*c.cfg.Frame/waitMemory)
		}
		c.waitHold = w
	}
	lag := c.lateReport
	partial := lag == 0
	sum, reports, largest := lag, 1, time.Duration(0)
	for i, reported := range c.policyLags {
		r := c.peers[i]
		if r == nil || !c.live(bucket.Slot(i)) {
			continue
		}
		if reported == 0 {
			// Not measured yet; its one-way delay as we see it is a
			// lower bound.
			partial = true
			if r.rttN > 0 {
				lag = max(lag, r.oneWay())
			}
			continue
		}
		lag = max(lag, reported)
		sum += reported
		reports++
	}
	if !partial && !c.tight() {
		// The mean of the reports, our own included: each is the
		// lateness its member's frames need covered, estimated from a
		// few dozen of the worst samples of its window, and the largest
		// of several such estimates is mostly the noisiest. Every member
		// averages the same reports, so the leads still agree. (Under a
		// tight budget the largest, tight.go.)
		largest = lag
		lag = sum / time.Duration(reports)
	}
	// The lead covers the lateness, a seal change's wait for its send, and
	// the second copy of a seal whose first datagram was lost. Until every
	// path is measured it can only grow.
	wait := c.waitHold + max(c.cfg.SealRepeat, 0)
	if c.tight() {
		wait = 0 // the seals' lateness includes their wait (sealReached)
		if !partial {
			lag = c.tightBand(lag)
		}
	}
	// A jump of the lateness (addLateness) is met at once, past the band
	// the lead holds against a steady network's wandering (Hold), and for
	// lateRiseLead from the largest report, our own included: the others'
	// reports of it come in over their datagrams' way here, and their mean
	// would reach it later still. Every frame sealed meanwhile under the
	// old lead stalls. Samples that jumped far past the window's worst
	// raise the lead to twice the jump: the first late datagrams of a
	// worse network arrive before its queues have filled, and
	// underestimate it. The lead comes down from there as from any level
	// (delay.Lead.Update).
	rose := c.lateRose > 0 && now-c.lateRose < lateRiseLead && !c.tight()
	if rose {
		lag = max(lag, largest, c.lateReport, 2*c.lateJump)
		c.lateJump = 0
	}
	if partial || rose {
		c.lead.Raise(lag, wait)
	}
	if !partial {
		c.lead.Update(lag, wait)
	}
	c.noteLead(c.position(now))
	c.stats.Delay, c.stats.Lead = c.delayFrames()
	c.stats.Lag = lag
}
