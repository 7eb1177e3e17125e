package locksteptest

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/quantile"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/peer/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// Config describes one virtual run.
type Config struct {
	Members int            // number of members
	Frames  int            // run until every surviving member has stepped frames 0..Frames-1
	Seed    uint64         // seeds the network and the submit times
	Profile netsim.Profile // network conditions on every path
	// Core is the template of every member's core configuration; Members,
	// Self, Session and Start are filled in by the harness. Unless the
	// template sets a Signer or Verifier, or Unsigned is set, every member
	// signs its stream with an Ed25519 key derived from Seed
	// (lockstep.Ed25519Keys) and checks the others'.
	Core lockstep.Config
	// Unsigned turns the default signing off: members sign and check
	// nothing, as cores without a Signer and Verifier.
	Unsigned bool
	// Configure, when set, alters member slot's core configuration after
	// the harness filled it in: a test's hostile member may run with other
	// limits than the rest.
	Configure func(slot bucket.Slot, cfg *lockstep.Config)
	// NewSim returns member slot's simulation. Every member's must start in
	// the same state.
	NewSim func(slot bucket.Slot) lockstep.Simulation
	// Commands returns the commands member slot issues during frame (by the
	// wall clock, not its own frame clock); the harness submits each at a
	// seeded random moment within that frame. Nil: no commands.
	Commands func(slot bucket.Slot, frame bucket.Frame) [][]byte
	// Faults are injected at their frame (by the wall clock).
	Faults []Fault
	// Perturb alters member slot's simulation state, for FaultPerturb. Nil:
	// perturbing is not supported.
	Perturb func(slot bucket.Slot, sim lockstep.Simulation)
	// Tamper, when set, may rewrite (or drop, by returning nil) every
	// datagram as it is sent: tests use it to make a member lie. The
	// returned slice may alias data.
	Tamper func(now time.Duration, from, to bucket.Slot, data []byte) []byte
	// MaxTime bounds the virtual run; 0 means ten times the nominal length
	// plus a minute.
	MaxTime time.Duration
	// OnStep, when set, is called after member slot stepped a bucket, with
	// its simulation (for recording replays). The bucket is valid only
	// during the call.
	OnStep func(slot bucket.Slot, b lockstep.Bucket, sim lockstep.Simulation)
	// OnStatement, when set, is called with every statement a member's
	// core newly holds (lockstep.Ready.Statements: others' it verified,
	// its own it signed), after the buckets of the same Ready were
	// stepped: for recording replays.
	OnStatement func(slot, member bucket.Slot, st wire.Statement)
	// OnEvent, when set, is called with every event a member's core
	// reports, as it reports it.
	OnEvent func(slot bucket.Slot, e lockstep.Event)
	// OnReceive, when set, is called with every datagram a member's core
	// receives, as it receives it: over the stream transport, as the stream
	// hands it on in order. data is valid only during the call.
	OnReceive func(now time.Duration, from, to bucket.Slot, data []byte)
	// KeepSamples, when set, keeps every command's latency and every
	// datagram's one-way delay in Result.Latencies and Result.OneWay, for
	// plots: memory that grows with the run. Unset, a run keeps only
	// their bounded sketches (Result.LatencyPercentile, OneWayPercentile).
	KeepSamples bool
	// Transport carries the cores' datagrams: "" or TransportDatagram, one
	// unreliable datagram each; TransportStream, a reliable ordered stream
	// per ordered pair of members (see Stream), whose retransmissions count
	// in the members' Stats.Datagrams and Stats.BytesSent.
	Transport string
}

// FaultKind says what a Fault does.
type FaultKind uint8

// Fault kinds.
const (
	FaultKill      FaultKind = iota + 1 // the member falls silent forever
	FaultLeave                          // the member leaves the session
	FaultPartition                      // the members split into two halves for Duration
	FaultPerturb                        // the member's simulation state is altered after it steps Frame
	FaultFreeze                         // the member does nothing for Duration (what it is sent meanwhile is lost), then resumes
	FaultMute                           // the member keeps talking but its seal stops: its datagrams carry the seal it had then, and none of its later commands
	FaultStorm                          // every datagram is lost with probability Loss for Duration
)

// Fault is one fault injected into a run.
type Fault struct {
	Kind     FaultKind
	Slot     bucket.Slot   // the member (kill, leave, perturb)
	Frame    bucket.Frame  // when: the wall-clock time of this frame, or (perturb) after this frame is stepped
	Duration time.Duration // partitions, freezes, storms: how long
	Loss     float64       // storms: the probability of losing each datagram
	// Group, for a partition, is the set of members (bit i: slot i) cut
	// off from the rest; 0 splits the members into halves.
	Group uint64
}

// Result is what a run measured.
type Result struct {
	Frames    int
	Members   []Member
	Survivors []bucket.Slot   // members neither killed, gone nor stopped
	Groups    [][]bucket.Slot // survivors grouped by identical histories, largest first
	Identical bool            // every survivor stepped the same buckets and reached the same state hash on every frame
	Diverged  bucket.Frame    // first frame whose buckets or hashes differ between survivors, or -1
	Desynced  int             // survivors whose history differs from the first survivor's
	Duration  time.Duration

	// Latencies (per command: submit to execution on the last survivor)
	// and OneWay (per delivered datagram: send to arrival, queueing
	// included) are every sample, kept only with Config.KeepSamples;
	// LatencyPercentile and OneWayPercentile answer from bounded sketches
	// of the same samples either way.
	Latencies []time.Duration
	OneWay    []time.Duration
	Lost      int64         // datagrams the network lost or dropped
	Streams   []StreamStats // over the stream transport: per member, its outgoing streams' counters summed

	latency, oneWay quantile.Sketch // nanoseconds
}

// Commands returns how many commands have a latency: those executed on
// every survivor.
func (r *Result) Commands() int { return int(r.latency.Count()) }

// LatencyPercentile returns the nearest-rank p-th percentile (p in
// [0, 100]) of the commands' latencies, within 1 % of the exact one (the
// 0th and 100th exactly), or 0 for none.
func (r *Result) LatencyPercentile(p float64) time.Duration {
	return time.Duration(math.Round(r.latency.Quantile(p)))
}

// OneWayPercentile returns the nearest-rank p-th percentile of the
// delivered datagrams' one-way delays, within 1 % of the exact one, or 0
// for none.
func (r *Result) OneWayPercentile(p float64) time.Duration {
	return time.Duration(math.Round(r.oneWay.Quantile(p)))
}

// addLatency and addOneWay count one sample.
func (r *Result) addLatency(d time.Duration, keep bool) {
	r.latency.Add(float64(d))
	if keep {
		r.Latencies = append(r.Latencies, d)
	}
}

func (r *Result) addOneWay(d time.Duration, keep bool) {
	r.oneWay.Add(float64(d))
	if keep {
		r.OneWay = append(r.OneWay, d)
	}
}

// Member is one member's view of a run.
type Member struct {
	Slot     bucket.Slot
	Killed   bool
	Left     bool
	Frozen   bool // it was frozen at some point (FaultFreeze)
	PeakHeld int  // the most payload bytes of the others' commands it held (Core.Held, sampled every ten frames, buffered ones counted at Config.MaxCommandSize)
	// MaxWait is the longest it went without stepping a frame after frame
	// 0, until it finished or stopped, counting each wait from the later of
	// its start, the end of the member's own freeze and the newest fault
	// injected: a fault that strikes while the members wait on another
	// starts a wait of its own.
	MaxWait   time.Duration
	Stopped   error        // non-nil when its core stopped (dropped, or in a minority): Core.Err
	Stepped   bucket.Frame // newest frame stepped
	FinalHash uint64       // state hash after frame Frames-1 (or the newest stepped)
	Stats     lockstep.Stats
	Events    []lockstep.Event // everything its core reported: a few per membership change or desync
	Errors    []error          // Submit and Leave errors: the first maxErrors
}

// ErrTimeout is returned when the run does not finish within MaxTime.
var ErrTimeout = errors.New("locksteptest: run did not finish in time")

// frozenQueue is how many datagrams a frozen member's socket holds: quic-go's
// receive queue.
const frozenQueue = 128

type eventKind uint8

const (
	evWake eventKind = iota
	evDeliver
	evSubmit
	evFault
	evSegment // stream transport: a segment reaches member to
	evAck     // stream transport: member to learns that from has segment gen
	evRTO     // stream transport: member to's timer for segment gen to from fires
)

type event struct {
	at    time.Duration
	seq   uint64
	kind  eventKind
	to    bucket.Slot
	from  bucket.Slot
	gen   uint64 // evWake: the member's wake generation it was set for; stream events: the segment's sequence number
	data  []byte
	sent  time.Duration
	fault int
}

type queue []*event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

type member struct {
	slot      bucket.Slot
	core      *lockstep.Core
	sim       lockstep.Simulation
	uplink    *netsim.Uplink
	links     []*netsim.Link
	wakeGen   uint64
	wakeAt    time.Duration
	errs      []error          // Submit and Leave errors: the first maxErrors
	events    []lockstep.Event // a few per membership change or desync
	final     uint64
	stepped   bucket.Frame
	killed    bool
	left      bool
	stopped   bool          // its core stopped: dropped by the others, or in a minority
	frozen    time.Duration // frozen until then (FaultFreeze)
	queued    int           // datagrams held for it while frozen
	wasFrozen bool
	muted     bool
	muteSeal  bucket.Frame // its seal when it was muted (FaultMute)
	lastStep  time.Duration
	maxWait   time.Duration
	peakHeld  int
	sections  []lockstep.Section // reused every frame
}

func (m *member) active() bool { return !m.killed && !m.left && !m.stopped }

// maxErrors is how many errors a member keeps: the first ones.
const maxErrors = 64

func (m *member) fail(err error) {
	if len(m.errs) < maxErrors {
		m.errs = append(m.errs, err)
	}
}

type commandKey struct {
	slot bucket.Slot
	seq  uint32
}

type pending struct {
	submitted time.Duration
	executed  []time.Duration // per member, -1 until executed there
}

// harness is one run in progress. What it keeps is bounded by the
// configuration, not by the run's length: the queue and the free lists by
// the events in flight (datagrams on the way, one wake-up per member,
// commands scheduled two frames ahead), cmds by the commands in flight
// (and those a killed member left unexecuted), history by its window.
type harness struct {
	cfg        Config
	q          queue
	seq        uint64
	now        time.Duration
	members    []*member
	free       []*event                // recycled events: at most the queue's largest size
	cmds       map[commandKey]*pending // commands submitted, not yet executed by every active member
	history    *history                // the members' newest frames' hashes, compared as they step
	res        *Result
	bufs       [][]byte      // recycled datagram buffers: at most the queue's largest size
	splitFrom  time.Duration // a partition is in force in [splitFrom, splitTo)
	splitTo    time.Duration
	splitGroup uint64        // the members cut off from the rest, or 0 for halves
	lastFault  time.Duration // when the newest fault was injected
	stormTo    time.Duration // a storm is in force until then, losing datagrams with probability stormLoss
	stormLoss  float64
	storms     *rng.PCG
	pkt        wire.Packet // scratch for muting
	streams    *streamNet  // the stream transport, or nil
}

// Run performs one virtual run.
func Run(cfg Config) (*Result, error) {
	if cfg.Members < 1 || cfg.Members > bucket.MaxMembers {
		return nil, fmt.Errorf("locksteptest: %d members", cfg.Members)
	}
	if cfg.Frames < 1 {
		return nil, fmt.Errorf("locksteptest: %d frames", cfg.Frames)
	}
	if cfg.NewSim == nil {
		return nil, errors.New("locksteptest: NewSim is nil")
	}
	if err := cfg.Profile.Validate(); err != nil {
		return nil, fmt.Errorf("locksteptest: %w", err)
	}
	for _, f := range cfg.Faults {
		if f.Kind != FaultPartition && int(f.Slot) >= cfg.Members {
			return nil, fmt.Errorf("locksteptest: fault on member %d of %d", f.Slot, cfg.Members)
		}
		if f.Kind == FaultPerturb && cfg.Perturb == nil {
			return nil, errors.New("locksteptest: perturb fault without a Perturb function")
		}
		if f.Frame < 0 {
			return nil, fmt.Errorf("locksteptest: fault at frame %d", f.Frame)
		}
	}
	if cfg.Transport != "" && cfg.Transport != TransportDatagram && cfg.Transport != TransportStream {
		return nil, fmt.Errorf("locksteptest: unknown transport %q", cfg.Transport)
	}
	h := &harness{cfg: cfg, cmds: make(map[commandKey]*pending), history: newHistory(cfg.Members), res: &Result{Frames: cfg.Frames, Diverged: -1}}
	root := rng.SeedFromUint64(cfg.Seed).PCG()
	if cfg.Transport == TransportStream {
		h.streams = newStreamNet(cfg.Members, cfg.Profile, root)
	}
	sign := !cfg.Unsigned && cfg.Core.Signer == nil && cfg.Core.Verifier == nil
	seed := rng.SeedFromUint64(cfg.Seed)
	signers, verifier := lockstep.Ed25519Keys(cfg.Members, seed[:])
	for i := range cfg.Members {
		slot := bucket.Slot(i)
		cc := cfg.Core
		cc.Members, cc.Self, cc.Session, cc.Start = cfg.Members, slot, uint16(cfg.Seed), 0
		if sign {
			cc.Signer, cc.Verifier = signers[i], verifier
		}
		if cfg.Configure != nil {
			cfg.Configure(slot, &cc)
		}
		core, err := lockstep.NewCore(cc, 0)
		if err != nil {
			return nil, err
		}
		m := &member{slot: slot, core: core, sim: cfg.NewSim(slot), uplink: netsim.NewUplink(cfg.Profile), stepped: -1}
		m.links = make([]*netsim.Link, cfg.Members)
		for j := range cfg.Members {
			if j != i {
				m.links[j] = netsim.NewLink(cfg.Profile, root.Derive(fmt.Sprintf("link %d->%d", i, j)))
			}
		}
		h.members = append(h.members, m)
	}
	frame := h.members[0].core.Config().Frame
	maxTime := cfg.MaxTime
	if maxTime == 0 {
		maxTime = 10*time.Duration(cfg.Frames)*frame + time.Minute
	}
	for i, f := range cfg.Faults {
		if f.Kind != FaultPerturb {
			h.push(&event{at: time.Duration(f.Frame) * frame, kind: evFault, fault: i})
		}
	}
	submits := root.Derive("submit times")
	h.storms = root.Derive("storms")
	for _, m := range h.members {
		h.wake(m, 0)
	}
	// Commands are scheduled a frame at a time, just ahead of the clock, so
	// the queue stays small.
	nextCmdFrame := bucket.Frame(0)
	scheduleCommands := func(upTo bucket.Frame) {
		for ; nextCmdFrame <= upTo && cfg.Commands != nil; nextCmdFrame++ {
			for _, m := range h.members {
				for _, c := range cfg.Commands(m.slot, nextCmdFrame) {
					at := time.Duration(nextCmdFrame)*frame + time.Duration(submits.Uint64n(uint64(frame)))
					e := h.newEvent()
					e.at, e.kind, e.to, e.data = at, evSubmit, m.slot, c
					h.push(e)
				}
			}
		}
	}
	for {
		scheduleCommands(bucket.Frame(h.now/frame) + 2)
		if h.done() {
			break
		}
		if len(h.q) == 0 {
			return h.res, errors.New("locksteptest: event queue ran dry")
		}
		e := heap.Pop(&h.q).(*event)
		h.now = e.at
		if h.now > maxTime {
			h.finish()
			return h.res, fmt.Errorf("%w: %v virtual, slowest member at frame %d of %d", ErrTimeout, maxTime, h.slowest(), cfg.Frames)
		}
		if e.kind == evFault {
			h.inject(cfg.Faults[e.fault])
			h.recycle(e)
			continue
		}
		m := h.members[e.to]
		if e.kind == evDeliver && m.active() && h.now < m.frozen {
			// A frozen member's socket holds a few datagrams until it
			// resumes; the rest are lost.
			if m.queued < frozenQueue {
				m.queued++
				e.at = m.frozen
				h.push(e)
			} else {
				h.res.Lost++
				h.recycle(e)
			}
			continue
		}
		if !m.active() || h.now < m.frozen {
			h.recycle(e)
			continue
		}
		switch e.kind {
		case evWake:
			if e.gen != m.wakeGen {
				h.recycle(e)
				continue
			}
		case evDeliver:
			h.res.addOneWay(h.now-e.sent, h.cfg.KeepSamples)
			if h.cfg.OnReceive != nil {
				h.cfg.OnReceive(h.now, e.from, e.to, e.data)
			}
			m.core.Receive(h.now, e.from, e.data)
		case evSegment, evAck, evRTO:
			if !h.streamEvent(m, e) {
				h.recycle(e)
				continue
			}
		case evSubmit:
			if _, err := m.core.Submit(h.now, e.data); err != nil {
				if !errors.Is(err, lockstep.ErrClosed) {
					m.fail(err)
				}
			} else {
				seq := uint32(m.core.Stats().Submitted - 1)
				p := &pending{submitted: h.now, executed: make([]time.Duration, cfg.Members)}
				for i := range p.executed {
					p.executed[i] = -1
				}
				h.cmds[commandKey{m.slot, seq}] = p
			}
		}
		h.ready(m)
		h.recycle(e)
	}
	h.finish()
	return h.res, nil
}

// inject carries out a fault whose time has come.
func (h *harness) inject(f Fault) {
	h.lastFault = h.now
	switch f.Kind {
	case FaultKill:
		h.members[f.Slot].killed = true
	case FaultLeave:
		m := h.members[f.Slot]
		if m.active() {
			if _, err := m.core.Leave(h.now); err != nil {
				m.fail(err)
			}
			h.ready(m)
		}
	case FaultPartition:
		h.splitFrom, h.splitTo, h.splitGroup = h.now, h.now+f.Duration, f.Group
	case FaultFreeze:
		m := h.members[f.Slot]
		if m.active() {
			m.frozen, m.wasFrozen, m.queued = h.now+f.Duration, true, 0
			// The wakes set before are stale now; it wakes after the
			// datagrams its socket held are read.
			h.wake(m, m.frozen+time.Microsecond)
		}
	case FaultMute:
		m := h.members[f.Slot]
		m.muted, m.muteSeal = true, m.core.Stats().Seal
	case FaultStorm:
		h.stormTo, h.stormLoss = h.now+f.Duration, f.Loss
	}
}

// apart reports whether a partition separates members a and b now: the
// members of its Group from the rest or, without a group, a lower half
// (slots below Members/2) from an upper half.
func (h *harness) apart(a, b bucket.Slot) bool {
	if h.now < h.splitFrom || h.now >= h.splitTo {
		return false
	}
	if g := h.splitGroup; g != 0 {
		return (g>>a)&1 != (g>>b)&1
	}
	half := bucket.Slot(h.cfg.Members / 2)
	return (a < half) != (b < half)
}

func (h *harness) done() bool {
	for _, m := range h.members {
		if m.active() && m.stepped < bucket.Frame(h.cfg.Frames-1) {
			return false
		}
	}
	return true
}

func (h *harness) slowest() bucket.Frame {
	s := bucket.NoFrame
	for _, m := range h.members {
		if m.active() {
			s = min(s, m.stepped)
		}
	}
	return s
}

func (h *harness) push(e *event) {
	e.seq = h.seq
	h.seq++
	heap.Push(&h.q, e)
}

func (h *harness) recycle(e *event) {
	if e.kind == evDeliver || e.kind == evSegment {
		h.bufs = append(h.bufs, e.data[:0])
	}
	*e = event{}
	h.free = append(h.free, e)
}

func (h *harness) newEvent() *event {
	if n := len(h.free); n > 0 {
		e := h.free[n-1]
		h.free = h.free[:n-1]
		return e
	}
	return &event{}
}

func (h *harness) wake(m *member, at time.Duration) {
	m.wakeGen++
	m.wakeAt = at
	e := h.newEvent()
	e.at, e.kind, e.to, e.gen = at, evWake, m.slot, m.wakeGen
	h.push(e)
}

// ready runs one Ready of m and carries out its work.
func (h *harness) ready(m *member) {
	rd := m.core.Ready(h.now)
	for _, d := range rd.Datagrams {
		h.transmit(m, d)
	}
	for _, b := range rd.Buckets {
		h.step(m, b)
	}
	if h.cfg.OnStatement != nil {
		for _, s := range rd.Statements {
			h.cfg.OnStatement(m.slot, s.Member, s.Statement)
		}
	}
	m.events = append(m.events, rd.Events...)
	if h.cfg.OnEvent != nil {
		for _, e := range rd.Events {
			h.cfg.OnEvent(m.slot, e)
		}
	}
	if m.core.Left() {
		m.left = true
		return
	}
	if m.core.Stopped() {
		m.stopped = true
		h.waited(m)
		return
	}
	if rd.Deadline != m.wakeAt || m.wakeGen == 0 {
		h.wake(m, rd.Deadline)
	}
}

func (h *harness) transmit(m *member, d lockstep.Datagram) {
	if m.muted {
		d.Data = h.mute(m, d.Data)
	}
	if h.now < h.stormTo && float64(h.storms.Uint32())/(1<<32) < h.stormLoss {
		h.res.Lost++
		return
	}
	if h.cfg.Tamper != nil {
		if d.Data = h.cfg.Tamper(h.now, m.slot, d.To, d.Data); d.Data == nil {
			return
		}
	}
	if h.streams != nil {
		h.streamSend(m, d.To, d.Data)
		return
	}
	size := len(d.Data) + m.core.Config().Overhead
	depart, ok := m.uplink.Admit(h.now, size)
	if !ok || h.apart(m.slot, d.To) {
		h.res.Lost++
		return
	}
	del := m.links[d.To].Send(depart, size)
	if del.Lost() {
		h.res.Lost++
		return
	}
	for i := range del.Copies {
		var buf []byte
		if n := len(h.bufs); n > 0 {
			buf = h.bufs[n-1]
			h.bufs = h.bufs[:n-1]
		}
		e := h.newEvent()
		e.at, e.kind, e.to, e.from, e.sent = del.Arrival[i], evDeliver, d.To, m.slot, h.now
		e.data = append(buf, d.Data...)
		h.push(e)
	}
}

// mute rewrites a muted member's datagram: its seal stays where it was when
// it was muted, and its commands past that seal are left out.
func (h *harness) mute(m *member, data []byte) []byte {
	p := &h.pkt
	if err := wire.Parse(data, p); err != nil {
		return data
	}
	p.Seal = min(p.Seal, m.muteSeal)
	n := len(p.Commands)
	for n > 0 && p.Commands[n-1].Frame > m.muteSeal {
		n--
	}
	p.Next -= uint16(len(p.Commands) - n)
	p.Commands = p.Commands[:n]
	out, err := p.Append(nil)
	if err != nil {
		panic("locksteptest: muting a datagram: " + err.Error())
	}
	return out
}

func (h *harness) step(m *member, b lockstep.Bucket) {
	if b.Frame != m.stepped+1 {
		panic(fmt.Sprintf("locksteptest: member %d got frame %d after %d", m.slot, b.Frame, m.stepped))
	}
	h.waited(m)
	m.sim.Step(b.Frame, b.Commands)
	m.stepped = b.Frame
	if b.Frame%10 == 0 {
		_, bytes, buffered := m.core.Held()
		m.peakHeld = max(m.peakHeld, bytes+buffered*m.core.Config().MaxCommandSize)
	}
	for _, f := range h.cfg.Faults {
		if f.Kind == FaultPerturb && f.Slot == m.slot && f.Frame == b.Frame {
			h.cfg.Perturb(m.slot, m.sim)
		}
	}
	input := lockstep.InputHash(b.Frame, b.Commands)
	state := m.sim.Hash()
	h.history.step(m.slot, b.Frame, frameHashes{input: input, state: state})
	m.sections = m.sections[:0]
	if sh, ok := m.sim.(lockstep.SectionHasher); ok {
		m.sections = sh.SectionHashes(m.sections)
	}
	m.core.Stepped(b.Frame, state, m.sections)
	if b.Frame <= bucket.Frame(h.cfg.Frames-1) {
		m.final = state
	}
	if h.cfg.OnStep != nil {
		h.cfg.OnStep(m.slot, b, m.sim)
	}
	for _, c := range b.Commands {
		k := commandKey{c.Slot, c.Seq}
		if p := h.cmds[k]; p != nil {
			p.executed[m.slot] = h.now
			if h.completed(p) {
				delete(h.cmds, k)
			}
		}
	}
}

// waited records how long m went without stepping a frame, counting from
// frame 0, from the end of its last freeze and from the newest fault.
func (h *harness) waited(m *member) {
	if m.stepped >= 0 {
		m.maxWait = max(m.maxWait, h.now-max(m.lastStep, m.frozen, h.lastFault))
	}
	m.lastStep = h.now
}

// completed records a command's latency once every active member executed
// it.
func (h *harness) completed(p *pending) bool {
	var last time.Duration
	for i, m := range h.members {
		if !m.active() {
			continue
		}
		if p.executed[i] < 0 {
			return false
		}
		last = max(last, p.executed[i])
	}
	h.res.addLatency(last-p.submitted, h.cfg.KeepSamples)
	return true
}

func (h *harness) finish() {
	h.res.Duration = h.now
	// Commands that waited for a member that has since gone.
	keys := make([]commandKey, 0, len(h.cmds))
	for k := range h.cmds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b commandKey) int {
		if a.slot != b.slot {
			return int(a.slot) - int(b.slot)
		}
		return int(a.seq) - int(b.seq)
	})
	for _, k := range keys {
		h.completed(h.cmds[k])
	}
	for _, m := range h.members {
		h.res.Members = append(h.res.Members, Member{
			Slot: m.slot, Killed: m.killed, Left: m.left, Stopped: m.core.Err(), Frozen: m.wasFrozen, MaxWait: m.maxWait, PeakHeld: m.peakHeld,
			Stepped: m.stepped, FinalHash: m.final,
			Stats: m.core.Stats(), Events: m.events, Errors: m.errs,
		})
		if m.active() {
			h.res.Survivors = append(h.res.Survivors, m.slot)
		}
	}
	if h.streams != nil {
		h.streams.account(h.res)
	}
	// Group survivors by identical histories.
	n := h.cfg.Frames
	for _, s := range h.res.Survivors {
		n = min(n, int(h.members[s].stepped)+1)
	}
	same := func(a, b *member) (bool, bucket.Frame) { return h.history.same(a.slot, b.slot, n) }
	for _, s := range h.res.Survivors {
		placed := false
		for gi, g := range h.res.Groups {
			if ok, _ := same(h.members[g[0]], h.members[s]); ok {
				h.res.Groups[gi] = append(g, s)
				placed = true
				break
			}
		}
		if !placed {
			h.res.Groups = append(h.res.Groups, []bucket.Slot{s})
		}
	}
	slices.SortStableFunc(h.res.Groups, func(a, b []bucket.Slot) int { return len(b) - len(a) })
	h.res.Identical = len(h.res.Groups) <= 1
	if len(h.res.Survivors) > 0 {
		ref := h.members[h.res.Survivors[0]]
		for _, s := range h.res.Survivors[1:] {
			if ok, f := same(ref, h.members[s]); !ok {
				h.res.Desynced++
				if h.res.Diverged < 0 || f < h.res.Diverged {
					h.res.Diverged = f
				}
			}
		}
		for _, s := range h.res.Survivors {
			if int(h.members[s].stepped)+1 < h.cfg.Frames {
				h.res.Identical = false
			}
		}
	}
}

// Percentile returns the nearest-rank p-th percentile of ds (sorting a copy),
// or 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}
