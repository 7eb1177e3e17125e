package lockstep

import (
	"errors"
	"fmt"
	"hash"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Datagram is one datagram the core wants sent to one member.
type Datagram struct {
	To   bucket.Slot
	Data []byte
}

// Bucket is one frame's commands in canonical order (slot, then sequence).
type Bucket struct {
	Frame    bucket.Frame
	Commands []bucket.Command
}

// Ready is one batch of work for the caller, returned by Core.Ready. Its
// slices and the bytes they reference are owned by the core and valid
// until the next call of Ready, Receive, Submit or Leave: Stepped may be
// called while they are in use.
//
// The caller must:
//  1. send every Datagram (order among them does not matter; losing some is
//     fine, the protocol repeats what is not acknowledged);
//  2. step every Bucket in order, before stepping the buckets of any later
//     Ready, and report the state hash after each with Core.Stepped, in
//     order (StepBucket does both): desync detection compares these;
//  3. handle the Events (and record the Statements, if it records);
//  4. call Ready again no later than Deadline, or as soon as Submit or
//     Receive was called.
type Ready struct {
	Datagrams []Datagram
	Buckets   []Bucket
	Events    []Event
	// Statements are the statements the core newly holds since the last
	// Ready: others' it verified over their commands, and its own it
	// signed (see Config.Signer). A replay records them as evidence.
	Statements []StatementOf
	Deadline   time.Duration
}

// StatementOf is a signed statement about member Member's command stream.
type StatementOf struct {
	Member    bucket.Slot
	Statement wire.Statement
}

// Core is the sans-I/O lockstep engine of one member. It is not safe for
// concurrent use: one goroutine owns it (see Session) or a test drives it.
//
// Everything a Core keeps is bounded by its configuration, not by how long
// the session runs; each field says by what.
type Core struct {
	cfg    Config
	self   bucket.Slot
	table  *bucket.Table // commands stamped within Window frames either side of the executed frame (see trim), a suspect's until it is dropped
	window bucket.Window
	lead   *bucket.Lead // the adaptive policy's lead (unused with FixedDelay or Turns)
	peers  []*remote    // indexed by slot; nil for self: Members entries of fixed size

	epoch    time.Duration // time of NewCore; Sent timestamps count from it
	lastNow  time.Duration
	lag      time.Duration // how far the frame clock has been slowed in total
	frame    bucket.Frame  // frame clock: the newest frame whose time has come
	executed bucket.Frame  // newest frame stepped
	stalled  bucket.Frame  // newest frame counted as a stall
	sealAt   time.Duration // when our seal last advanced, or was due to
	closed   bool

	tokens     int64         // budget tokens in byte-nanoseconds per second
	refilled   time.Duration // when tokens were last refilled
	waits      *bucket.Samples
	lastPolicy time.Duration

	stats Stats

	// Faults (faults.go): members we stopped listening to, those whose drop
	// or leave is final, our seals of them when we stopped, our reasons.
	// One entry per member, set at NewCore.
	all         uint64 // every member
	suspected   uint64
	gone        uint64 // members that left and have had all we owe them
	finalized   uint64
	before      uint64 // members live when no suspicion was pending last
	held        []bucket.Frame
	reasons     []Reason
	details     []string
	namedBy     uint64       // members whose agreed view names us
	namedLast   bucket.Frame // the last frame of ours they agreed on
	stopped     bool
	stopErr     error
	resumed     bool         // frozen past the drop timeout, and not yet confirmed (faults.go)
	ownFrame    bucket.Frame // the frame of our newest command, and how many
	ownCount    int          // commands and payload bytes we stamped on it
	ownBytes    int
	leaveAt     []bucket.Frame // per member: its announced last frame, or NoFrame
	overfull    []bucket.Frame // per member: the first frame its commands overfilled (countFrames), or NoFrame
	leaving     bool
	leaveFrame  bucket.Frame
	leaveAtTime time.Duration

	// Turns (Config.Turns): the current turn's first frame and length.
	turnStart bucket.Frame
	turnLen   int
	left      bool

	// Desync detection (desync.go).
	hist          []frameRecord // HashHistory frames, a ring; each record's sections as many as the simulation reports
	sectionNames  []string      // the simulation's sections, named once
	checkpoint    wire.HashReport
	hasCheckpoint bool
	desynced      bool
	desyncAt      time.Duration

	// Signed streams (sign.go): per member, its chain and statements.
	chains []chainState
	hasher hash.Hash

	// Scratch reused across calls, so steady-state work allocates nothing.
	// Each is emptied by every Ready and sized by the largest one: the
	// datagrams of one round to every member, the buckets of the frames
	// whose time came since the previous call.
	pkt            wire.Packet
	wireCmds       []wire.Command
	views          []wire.MemberView
	relayCmds      []wire.Command
	detailFrames   []wire.FrameHashes
	detailSections []uint64
	out            Ready
	arena          []byte
	msgBuf         []byte
	cmdBuf         []bucket.Command
	bucketAt       []int
}

// NewCore returns the core of member cfg.Self, created at time now. It
// returns an error wrapping ErrInvalidConfig when cfg is invalid.
func NewCore(cfg Config, now time.Duration) (*Core, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	initialSeal := bucket.Frame(cfg.InitialDelay - 1)
	c := &Core{
		cfg:      cfg,
		self:     cfg.Self,
		table:    bucket.NewTable(cfg.Members, initialSeal),
		window:   bucket.Window{Ahead: bucket.Frame(cfg.Window)},
		peers:    make([]*remote, cfg.Members),
		epoch:    now,
		lastNow:  now,
		frame:    -1,
		executed: -1,
		stalled:  -1,
		sealAt:   now,
		waits:    bucket.NewSamples(256),
	}
	// A delay of d frames is a lead of d-1 frames: the seal of a frame
	// goes out d-1 frames before its time.
	c.lead = bucket.NewLead(bucket.LeadPolicy{
		Min:         time.Duration(cfg.MinDelay-1) * cfg.Frame,
		Max:         time.Duration(cfg.MaxDelay-1) * cfg.Frame,
		Margin:      cfg.Margin,
		ShrinkAfter: 40, // two seconds at 20 Hz asking for less before shrinking
	}, time.Duration(cfg.InitialDelay-1)*cfg.Frame)
	for i := range c.peers {
		if bucket.Slot(i) != c.self {
			c.peers[i] = newRemote(bucket.Slot(i), initialSeal)
		}
	}
	c.held = make([]bucket.Frame, cfg.Members)
	c.all = ^uint64(0) >> (64 - cfg.Members)
	c.before = c.all
	c.namedLast = -1
	c.ownFrame = -1
	c.reasons = make([]Reason, cfg.Members)
	c.details = make([]string, cfg.Members)
	c.leaveAt = make([]bucket.Frame, cfg.Members)
	c.overfull = make([]bucket.Frame, cfg.Members)
	for i := range c.leaveAt {
		c.leaveAt[i] = bucket.NoFrame
		c.overfull[i] = bucket.NoFrame
	}
	c.hist = make([]frameRecord, cfg.HashHistory)
	for i := range c.hist {
		c.hist[i].frame = -1
	}
	c.checkpoint.Frame = -1
	c.chains = make([]chainState, cfg.Members)
	c.stats.Delay, c.stats.Lead = c.delayFrames()
	return c, nil
}

// Self returns this member's slot.
func (c *Core) Self() bucket.Slot { return c.self }

// Config returns the configuration with defaults applied.
func (c *Core) Config() Config { return c.cfg }

// Executed returns the newest frame stepped, or -1.
func (c *Core) Executed() bucket.Frame { return c.executed }

// Submit stamps a local command with the frame it will execute on and queues
// it for every member. It returns that frame. The payload is copied.
//
// It returns an error wrapping ErrCommandTooLarge for a payload larger than
// Config.MaxCommandSize, ErrFrameFull when the frame would exceed
// Config.MaxFrameCommands or Config.MaxFrameBytes, ErrStopped (see Err)
// once the member stopped, and ErrClosed after Close or Leave.
func (c *Core) Submit(now time.Duration, payload []byte) (f bucket.Frame, err error) {
	defer func() {
		if err != nil && !errors.Is(err, ErrFrameFull) {
			c.stats.Refused++
		}
	}()
	if c.stopped {
		return 0, c.stopErr
	}
	if c.closed || c.leaving {
		return 0, ErrClosed
	}
	if len(payload) > c.cfg.MaxCommandSize {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrCommandTooLarge, len(payload), c.cfg.MaxCommandSize)
	}
	c.advanceClock(now)
	own := c.table.Stream(c.self)
	frame := max(c.stamp(c.position(now)), own.Seal()+1, c.executed+1)
	if c.cfg.Turns.Ahead > 0 {
		frame = max(own.Seal()+1, c.executed+1) // the first frame of a later turn
	}
	if frame != c.ownFrame {
		c.ownFrame, c.ownCount, c.ownBytes = frame, 0, 0
	}
	if c.ownCount+1 > c.cfg.MaxFrameCommands || c.ownBytes+len(payload) > c.cfg.MaxFrameBytes {
		return 0, fmt.Errorf("%w: frame %d holds %d commands of %d bytes, limits %d and %d", ErrFrameFull, frame, c.ownCount, c.ownBytes, c.cfg.MaxFrameCommands, c.cfg.MaxFrameBytes)
	}
	c.ownCount++
	c.ownBytes += len(payload)
	own.Append(bucket.Command{
		Slot:    c.self,
		Seq:     own.Next(),
		Frame:   frame,
		Payload: append([]byte(nil), payload...),
	})
	c.extendChain(now, c.self)
	for _, r := range c.peers {
		if r != nil && !r.urgent {
			r.urgent, r.urgentAt = true, now
		}
	}
	c.stats.Submitted++
	return frame, nil
}

// Receive hands the core a datagram that arrived from member from, as
// authenticated by the transport. A datagram that does not decode, carries
// another session's tag or claims another sender is counted in Stats and
// ignored. Receive never panics on any input. data is not retained.
func (c *Core) Receive(now time.Duration, from bucket.Slot, data []byte) {
	c.stats.DatagramsReceived++
	c.stats.BytesReceived += int64(len(data) + c.cfg.Overhead)
	if c.closed || c.stopped {
		return
	}
	if int(from) >= len(c.peers) || from == c.self {
		c.stats.Foreign++
		return
	}
	p := &c.pkt
	if err := wire.Parse(data, p); err != nil {
		c.stats.Malformed++
		return
	}
	if p.Session != c.cfg.Session || p.From != from {
		c.stats.Foreign++
		return
	}
	c.advanceClock(now)
	r := c.peers[from]
	if !c.live(from) {
		c.stats.Ignored++
		if c.suspected&(1<<from) != 0 {
			r.replyDue = true // it may not know: tell it (send.go)
		}
		return
	}
	if p.HasMembership && p.Membership.Suspected&(1<<c.self) != 0 {
		// It stopped listening to us: the session has split between us,
		// or it dropped us. Nothing else it says counts for us.
		if bits.OnesCount64(p.Membership.Suspected) == len(p.Membership.Views) {
			c.namesUs(now, r, &p.Membership)
		}
		return
	}
	first := !r.heard
	r.heard = true
	r.lastRecv = now
	if first {
		r.heardPos = c.position(now)
	}

	// Timing: echo of our datagram, one-way delay variation, clock.
	if p.HasEcho {
		r.echo(now, p.Echo)
		if c.resumed && int16(p.Echo.Number-r.resumeNum) >= 0 {
			r.confirmed = true
		}
		if r.leaveSent && int16(p.Echo.Number-r.leaveNum) >= 0 {
			r.leaveHeard = true
		}
	}
	newer := first || int16(p.Number-r.newest) > 0
	var skipped int // datagrams numbered between the newest before this one and this one
	if newer {
		if !first {
			skipped = int(p.Number-r.newest) - 1
		}
		r.newest, r.newestAt = p.Number, now
	}
	// A datagram sent before the path first carried anything waited for
	// the connection to be set up (handshakes lost and repeated): its delay
	// says nothing of the path, so it is not a sample.
	sent := ticksDuration(p.Sent)
	clock := ticksDuration(p.Clock)
	settled := clock >= r.heardPos
	if settled {
		r.offsets.Add(now - c.epoch - sent)
	}
	r.clockOff[r.clockN%clockSamples] = clock - now
	r.clockN++
	if newer {
		c.sampleLateness(now, r, skipped, clock, settled)
	}
	r.reportedLag = ticksDuration(p.Lag)

	// What it holds of ours. It cannot hold what we never sent.
	own := c.table.Stream(c.self)
	ack := wire.Unwrap16(own.Next(), p.Ack)
	if ack > own.Next() {
		c.violation(now, from, "ack", fmt.Sprintf("acknowledges %d of our commands, we sent %d", ack, own.Next()))
		return
	}
	if p.AckSeal > own.Seal() {
		c.violation(now, from, "ack", fmt.Sprintf("acknowledges our seal %d, we sealed %d", p.AckSeal, own.Seal()))
		return
	}
	r.acked = max(r.acked, ack)
	r.ackedSeal = max(r.ackedSeal, p.AckSeal)

	// Its commands and seal.
	s := c.table.Stream(from)
	next := wire.Unwrap16(s.Next(), p.Next)
	if uint32(len(p.Commands)) > next {
		c.violation(now, from, "sequence", "more commands than sequence numbers")
		return
	}
	if newer && next >= r.newestNext && p.Seal < r.newestSeal {
		c.violation(now, from, "seal", fmt.Sprintf("seal moved backwards from %d to %d", r.newestSeal, p.Seal))
		return
	}
	if newer {
		r.newestSeal, r.newestNext = p.Seal, next
	}
	if p.Seal > r.topSeal {
		r.topSeal, r.sealMovedAt = p.Seal, now
	}
	if next > r.topNext {
		r.topNext, r.nextMovedAt = next, now
	}
	limit := c.executed + c.window.Ahead
	firstSeq := next - uint32(len(p.Commands))
	before := s.Next()
	for i, wc := range p.Commands {
		seq := firstSeq + uint32(i)
		if wc.Frame > limit {
			c.violation(now, from, "window", fmt.Sprintf("command %d at frame %d outside the window (executed %d)", seq, wc.Frame, c.executed))
			return
		}
		if len(wc.Payload) > c.cfg.MaxCommandSize {
			c.violation(now, from, "limit", fmt.Sprintf("command %d has %d bytes, limit %d", seq, len(wc.Payload), c.cfg.MaxCommandSize))
			return
		}
		cmd := bucket.Command{Slot: from, Seq: seq, Frame: wc.Frame, Payload: wc.Payload}
		if seq >= s.Next() {
			cmd.Payload = append([]byte(nil), wc.Payload...)
		}
		if _, err := s.Insert(cmd); err != nil {
			c.violation(now, from, "commands", err.Error())
			return
		}
	}
	if detail := c.countFrames(from, before); detail != "" {
		c.violation(now, from, "limit", detail)
		return
	}
	if p.Seal > limit {
		c.violation(now, from, "window", fmt.Sprintf("seal %d outside the window (executed %d)", p.Seal, c.executed))
		return
	}
	s.Promise(p.Seal, next)
	c.extendChain(now, from)
	if p.HasStatement {
		c.onStatement(now, from, from, p.Statement)
		if !c.live(from) {
			return
		}
	}

	if p.HasLeave {
		c.onLeave(now, r, p.LeaveFrame)
	}
	if p.HasMembership && newer {
		c.onMembership(now, r, &p.Membership)
	}
	if p.HasRelay && c.live(from) {
		c.onRelay(now, r, &p.Relay)
	}
	if p.HasHash {
		c.onHash(r, p.Hash)
	}
	if p.HasDetail {
		c.onDetail(now, r, &p.Detail)
	}
}

// Close stops the core: Submit is refused from now on and received datagrams
// are ignored. Leaving a session at an announced frame is done by Session.
func (c *Core) Close() { c.closed = true }

// advanceClock moves the frame clock to now, slowing it (by at most a tenth
// of real time) while this member runs ahead of the slowest member it hears.
func (c *Core) advanceClock(now time.Duration) {
	if now < c.lastNow {
		now = c.lastNow
	}
	c.resume(now)
	dt := now - c.lastNow
	c.lastNow = now
	pos := c.position(now)
	if dt > 0 && pos > 0 {
		slowest, ok := c.slowestClock(now)
		if ok && pos-slowest > c.cfg.Frame/8 {
			c.lag += min(dt/10, pos-slowest)
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
	if c.cfg.Turns.Ahead > 0 {
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
		for _, r := range c.peers {
			if r != nil && !r.urgent {
				r.urgent, r.urgentAt = true, now
			}
		}
	}
}

// stamp returns the frame a command submitted at frame-clock position pos
// goes to, before the bounds of the seal and the executed frame: a fixed
// number of frames after the current one, or, under the adaptive policy,
// the first frame at least the lead away (bucket.StampFrame), and never the
// current frame. Turns (turnSeal) override it.
func (c *Core) stamp(pos time.Duration) bucket.Frame {
	if c.cfg.FixedDelay > 0 {
		return c.frame + bucket.Frame(c.cfg.FixedDelay)
	}
	return max(bucket.StampFrame(pos, c.lead.Duration(), c.cfg.Frame), c.frame+1)
}

// sealDue returns the frame-clock position at which, under the adaptive
// policy, our seal passes frame g: its time less the lead. ok is false with
// a fixed delay or turns, whose seals move at frame ticks.
func (c *Core) sealDue(g bucket.Frame) (pos time.Duration, ok bool) {
	if c.cfg.FixedDelay > 0 || c.cfg.Turns.Ahead > 0 {
		return 0, false
	}
	return time.Duration(g)*c.cfg.Frame - c.lead.Duration(), true
}

// delayFrames returns how many frames ahead a command submitted at the
// start of a frame goes, and the lead in force (zero with a fixed delay or
// turns, whose seals move at frame ticks).
func (c *Core) delayFrames() (int, time.Duration) {
	switch {
	case c.cfg.Turns.Ahead > 0:
		return c.stats.Delay, 0
	case c.cfg.FixedDelay > 0:
		return c.cfg.FixedDelay, 0
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
	ahead := c.cfg.Turns.Ahead * c.turnLen
	c.stats.Delay = ahead
	return c.turnStart + bucket.Frame(ahead) - 1
}

// turnLength returns the length of the next turn in frames: the configured
// one, or the largest smoothed RTT to a live member in whole frames.
func (c *Core) turnLength() int {
	if c.cfg.Turns.Length > 0 {
		return c.cfg.Turns.Length
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
	return max(1, min(n, c.cfg.MaxDelay/max(1, c.cfg.Turns.Ahead)))
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
// nor one sent before the path first carried anything (settled false).
func (c *Core) sampleLateness(now time.Duration, r *remote, skipped int, clock time.Duration, settled bool) {
	pos := c.position(now)
	prev := r.newestClock
	r.newestClock = clock
	if pos < 0 || clock <= 0 || !settled {
		return
	}
	if prev > 0 && skipped > 0 {
		// One lost datagram is what the second copy of a seal repairs
		// (Config.SealRepeat), and its estimated send time is crude: it
		// counts in the window but does not raise the peak. A run of them
		// is a burst the peak must remember.
		n := min(skipped, maxSkippedSamples)
		for i := 1; i <= n; i++ {
			sent := prev + (clock-prev)*time.Duration(i)/time.Duration(n+1)
			r.addLateness(pos-sent, skipped > 1)
		}
	}
	r.addLateness(pos-clock, true)
}

// maxSkippedSamples bounds the samples one arrival adds for the datagrams
// it skipped, so a long outage does not flush the whole window at once.
const maxSkippedSamples = 16

// position returns the frame-clock position at now: time since frame 0
// began, less the slowing applied so far.
func (c *Core) position(now time.Duration) time.Duration {
	return now - c.cfg.Start - c.lag
}

func (c *Core) slowestClock(now time.Duration) (time.Duration, bool) {
	var slowest time.Duration
	found := false
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) {
			continue
		}
		if at, ok := r.clockAt(now); ok && (!found || at < slowest) {
			slowest, found = at, true
		}
	}
	return slowest, found
}

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
	c.advanceClock(now)
	c.checkTimeouts(now)
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
	c.updatePolicy(now)
	if c.confirmed() {
		c.execute()
	}
	c.reportDesync(now)
	c.checkLeft(now)
	c.trim()
	c.send(now)
	c.out.Deadline = c.deadline(now)
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
// complete.
func (c *Core) execute() {
	for c.executed < c.frame {
		f := c.executed + 1
		if !c.table.Ready(f) {
			if f > c.stalled {
				c.stalled = f
				c.stats.Stalls++
			}
			return
		}
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
	own := c.table.Stream(c.self)
	acked := own.Next()
	for _, r := range c.peers {
		if r != nil && c.live(r.slot) {
			acked = min(acked, r.acked)
		}
	}
	// Keep what this Ready's buckets reference: trimming clears payloads.
	keepFrom := c.executed - bucket.Frame(len(c.out.Buckets))
	own.Trim(min(acked, seqAfter(own, keepFrom)))
	for i := range c.cfg.Members {
		slot := bucket.Slot(i)
		if slot == c.self || (!c.live(slot) && c.finalized&(1<<slot) == 0) {
			continue // a suspect's commands may have to be relayed
		}
		s := c.table.Stream(slot)
		s.Trim(seqAfter(s, keepFrom-c.window.Ahead))
	}
}

// seqAfter returns the first held sequence number of s stamped after frame.
func seqAfter(s *bucket.Stream, frame bucket.Frame) uint32 {
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

// updatePolicy resizes the delay from fresh measurements, at most once a
// frame.
func (c *Core) updatePolicy(now time.Duration) {
	if now-c.lastPolicy < c.cfg.Frame {
		return
	}
	c.lastPolicy = now
	for _, r := range c.peers {
		if r == nil {
			continue
		}
		// Our report of its lateness, sent back to it; sorting the window
		// is the costliest thing the core does, so only every tenth frame.
		if r.lags.Len() > 0 && (r.lagHigh == 0 || c.frame%10 == 0) {
			r.lagHigh = r.lags.Percentile(99)
			r.lagPeak = max(r.lagHigh, r.lagPeak-(r.lagPeak-r.lagHigh)*10*c.cfg.Frame/peakMemory)
		}
	}
	if c.cfg.FixedDelay > 0 || c.cfg.Turns.Ahead > 0 {
		return // the delay is not ours to adapt
	}
	if c.frame%10 == 0 {
		c.stats.SendWait = c.waits.Percentile(99)
	}
	var lag time.Duration
	partial := false
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) {
			continue
		}
		if r.rttN < 8 || r.reportedLag == 0 {
			// Not measured yet; its one-way delay as we see it is a
			// lower bound.
			partial = true
			if r.rttN > 0 {
				lag = max(lag, r.oneWay())
			}
			continue
		}
		lag = max(lag, r.reportedLag)
	}
	// The lead covers the lateness, a seal change's wait for its send, and
	// the second copy of a seal whose first datagram was lost. Until every
	// path is measured it can only grow.
	wait := c.stats.SendWait + max(c.cfg.SealRepeat, 0)
	if partial {
		c.lead.Raise(lag, wait)
	} else {
		c.lead.Update(lag, wait)
	}
	c.stats.Delay, c.stats.Lead = c.delayFrames()
	c.stats.Lag = lag
}
