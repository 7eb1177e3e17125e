package lockstep

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/cmdstream"
	"github.com/phalanx-net/phalanx/internal/delay"
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
//     Receive was called. A call more than a frame past Deadline tells the
//     core that its process was paused: what arrived meanwhile waited for
//     it, not for the network, and does not size the adaptive lead; a
//     caller that is always that late starves the lead of measurements.
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
	table  *cmdstream.Table // commands stamped within Window frames either side of the executed frame (see trim), a suspect's until it is dropped
	window cmdstream.Window
	sched  schedule    // Config.Policy, resolved
	lead   *delay.Lead // the adaptive policy's lead (unused with Fixed or Turns)
	peers  []*remote   // indexed by slot; nil for self: Members entries of fixed size
	slab   []byte      // the copies of command payloads the core keeps are cut from it (keepPayload): payloadSlab bytes

	epoch    time.Duration // time of NewCore; Sent timestamps count from it
	lastNow  time.Duration
	slew     time.Duration // how far the frame clock has been slowed in total
	frame    bucket.Frame  // frame clock: the newest frame whose time has come
	executed bucket.Frame  // newest frame stepped
	stalled  bucket.Frame  // newest frame counted as a stall
	waiting  bool          // the next frame's time came and its bucket is incomplete
	waitFrom time.Duration // since when (Stats.Stalled)
	// when the newest frame was stepped
	steppedAt time.Duration
	sealAt    time.Duration // when our seal last advanced, or was due to
	closed    bool

	slow       slowest      // the slowest frame clock we hear (slowestClock)
	trimKeep   bucket.Frame // trim's frame and live members when it last ran, and whether an ack grew since
	trimMask   uint64
	trimFinal  uint64
	acksGrew   bool
	timeoutsAt time.Duration // when checkTimeouts runs next
	sendKnown  bool          // sendAt holds for the live members sendMask:
	sendMask   uint64        // no member is due a datagram before sendAt
	sendAt     time.Duration // (send, markUrgent, touched)
	tokens     int64         // budget tokens in byte-nanoseconds per second
	refilled   time.Duration // when tokens were last refilled
	sendNext   int           // the slot whose turn to be sent to comes first (send)
	stmtOutAt  time.Duration // when a datagram last carried our statement (statementRoom)
	// stmtNow is ownStatement's answer within one send, once it holds for
	// the rest of it (stmtKnown): our stream does not change while send
	// visits the members, so neither does the answer.
	stmtNow    wire.Statement
	stmtKnown  bool
	sealsBuf   []wire.HeldSeal
	leadHist   [8]leadChange // our recent leads (noteLead)
	levelled   bool          // a tight budget's lead has had its first level (tightBand)
	leadN      int
	waits      *delay.Samples
	lastPolicy time.Duration
	late       *delay.Tail   // how late every other member's datagrams' news reached us (addLateness), over lateBlocks × lateBlock
	lateFast   time.Duration // moving average of the newest samples of late (addLateness)
	waitHold   time.Duration // the send wait the lead covers: waits' high percentile, a lower one followed slowly (updatePolicy)
	lateReport time.Duration // what late asks of every member's lead: our Lag to all, and part of our own lead (updatePolicy)
	lateHeld   time.Duration // after a fall of the lateness emptied late, the report that stands until it refills (addLateness)
	lateRose   time.Duration // when the lateness last jumped (addLateness): for lateRiseLead after it the lead meets the largest report (updatePolicy)
	lateUp     bool          // since that jump the window has not held minLate samples: its new ones are the report (updatePolicy)
	lateMax    time.Duration // the worst sample of the window's past blocks, set at each update (updatePolicy) and read by addLateness
	lateJump   time.Duration // the largest sample that made a jump since the jump was last handled (addLateness; updatePolicy resets it)
	jumpFrom   bucket.Slot   // the member of the last sample far past lateMax (addLateness)
	jumpAt     time.Duration // and when it came
	dueBy      time.Duration // the deadline Ready last returned
	pausedTo   time.Duration // when we last resumed after the caller ran past dueBy (advanceClock)
	lossSeen   bool          // a datagram to us was lost on some path, lossAt when we last saw one (send.go, lossy)
	lossAt     time.Duration

	// No timeout can run out before timeoutsFrom while the members
	// listened to are timeoutsMask and Config.Start is timeoutsStart
	// (checkTimeouts): until then Ready skips the walk.
	timeoutsFrom  time.Duration
	timeoutsMask  uint64
	timeoutsStart time.Duration

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
	leavers     uint64         // members whose leaveAt is set
	overfull    []bucket.Frame // per member: the first frame its commands overfilled (countFrames), or NoFrame
	leaving     bool
	leaveFrame  bucket.Frame
	leaveAtTime time.Duration

	adm admissions // rejoins and late joins (admit.go)

	// Turns (Config.Policy): the current turn's first frame and length.
	turnStart bucket.Frame
	turnLen   int
	left      bool

	// Desync detection (desync.go).
	hist          []frameRecord // HashHistory frames, a ring; each record's sections as many as the simulation reports
	sectionNames  []string      // the simulation's sections, named once
	checkpoint    wire.HashReport
	hasCheckpoint bool
	desynced      bool
	anyFound      bool // some member's divergence was found (reportDesync)
	desyncAt      time.Duration

	// Signed streams (sign.go): per member, its chain and statements.
	chains []chainState
	hasher hash.Hash
	// chainCounts[m] is how many of member m's commands chains[m] hashed,
	// side by side for extendChain: a datagram without new commands reads
	// one of them rather than m's whole chain state.
	chainCounts []uint32
	// policyLags[m] is member m's lateness report once its path is
	// measured, else 0 (notePolicyLag), and ackedBy[m] how many of our
	// commands it holds (its remote's acked): what updatePolicy and trim
	// read of every member, side by side rather than in 63 remotes.
	policyLags []time.Duration
	ackedBy    []uint32

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
		sched:    scheduleOf(cfg.Policy),
		table:    cmdstream.NewTable(cfg.Members, initialSeal),
		window:   cmdstream.Window{Ahead: bucket.Frame(cfg.Window)},
		peers:    make([]*remote, cfg.Members),
		epoch:    now,
		lastNow:  now,
		frame:    -1,
		executed: -1,
		stalled:  -1,
		sealAt:   now,
		waits:    delay.NewSamples(256),
		late:     delay.NewTail(lateBlock, lateBlocks, lateKeep),
	}
	// A delay of d frames is a lead of d-1 frames: the seal of a frame
	// goes out d-1 frames before its time.
	c.lead = delay.NewLead(delay.LeadPolicy{
		Min:         time.Duration(cfg.MinDelay-1) * cfg.Frame,
		Max:         time.Duration(cfg.MaxDelay-1) * cfg.Frame,
		Margin:      cfg.Margin,
		ShrinkAfter: 40,            // two seconds at 20 Hz asking for less before shrinking
		Step:        cfg.Frame / 2, // over a frame, the lead is a whole number of half frames
	}, max(time.Duration(cfg.InitialDelay-1)*cfg.Frame, cfg.StartLead))
	if c.tight() {
		c.tightLead()
	} else {
		// A level rises only for a target a quarter frame past it; below
		// two steps too, where leads have no levels: rising for any
		// target there cost broadband's p95 (docs/benchmarks.md).
		c.lead.Policy.Hold = cfg.Frame / 4
	}
	c.peers = newRemotes(len(c.peers), c.self, initialSeal)
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
	c.chains, c.chainCounts = make([]chainState, cfg.Members), make([]uint32, cfg.Members)
	c.policyLags, c.ackedBy = make([]time.Duration, cfg.Members), make([]uint32, cfg.Members)
	c.initAdmissions()
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
	if c.adm.joining {
		return 0, ErrJoining
	}
	if len(payload) > c.cfg.MaxCommandSize {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrCommandTooLarge, len(payload), c.cfg.MaxCommandSize)
	}
	c.advanceClock(now)
	own := c.table.Stream(c.self)
	frame := max(c.stamp(c.position(now)), own.Seal()+1, c.executed+1)
	if c.sched.turns.Ahead > 0 {
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
		Payload: c.keepPayload(payload),
	})
	c.extendChain(now, c.self)
	c.markUrgent(now)
	c.stats.Submitted++
	return frame, nil
}

// payloadSlab is the size of the blocks the copies of small command
// payloads are cut from: a block a copy at a time, so that a core keeping
// every member's commands allocates once per block, not once per command
// and member. A block lives as long as the longest-kept command cut from
// it: a few frames past its execution (trim).
const payloadSlab = 4096

// keepPayload returns a copy of p for the core to keep, cut from the
// current block when p is small (its capacity ends with it, so appending
// to it never reaches the next copy); nil for an empty p.
func (c *Core) keepPayload(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	if len(p) > payloadSlab/16 {
		return append([]byte(nil), p...)
	}
	if cap(c.slab)-len(c.slab) < len(p) {
		c.slab = make([]byte, 0, payloadSlab)
	}
	n := len(c.slab)
	c.slab = append(c.slab, p...)
	return c.slab[n:len(c.slab):len(c.slab)]
}

// heldPayload returns what a stream whose next sequence number is next
// keeps of payload p of the command numbered seq: a copy cut from the
// current block (keepPayload) for the next command; a copy of its own for
// one past a gap, which may wait long and must keep no block of others'
// payloads alive (nil for an empty p); p itself for one the stream holds
// already (it is not kept).
func (c *Core) heldPayload(seq, next uint32, p []byte) []byte {
	switch {
	case seq == next:
		return c.keepPayload(p)
	case seq > next && len(p) > 0:
		return bytes.Clone(p)
	case seq > next:
		return nil
	}
	return p
}

// Close stops the core: Submit is refused from now on and received datagrams
// are ignored. Leaving a session at an announced frame is done by Session.
func (c *Core) Close() { c.closed = true }
