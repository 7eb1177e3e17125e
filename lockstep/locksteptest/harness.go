package locksteptest

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/peer/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// Config describes one virtual run.
type Config struct {
	Members int            // number of members
	Frames  int            // run until every member has stepped frames 0..Frames-1
	Seed    uint64         // seeds the network and the submit times
	Profile netsim.Profile // network conditions on every path
	// Core is the template of every member's core configuration; Members,
	// Self, Session and Start are filled in by the harness.
	Core lockstep.Config
	// NewSim returns member slot's simulation. Every member's must start in
	// the same state.
	NewSim func(slot bucket.Slot) lockstep.Simulation
	// Commands returns the commands member slot issues during frame (by the
	// wall clock, not its own frame clock); the harness submits each at a
	// seeded random moment within that frame. Nil: no commands.
	Commands func(slot bucket.Slot, frame bucket.Frame) [][]byte
	// MaxTime bounds the virtual run; 0 means ten times the nominal length
	// plus a minute.
	MaxTime time.Duration
	// OnStep, when set, is called after member slot stepped a bucket, with
	// its simulation (for recording replays). The bucket is valid only
	// during the call.
	OnStep func(slot bucket.Slot, b lockstep.Bucket, sim lockstep.Simulation)
}

// Result is what a run measured.
type Result struct {
	Frames    int
	Members   []Member
	Identical bool         // every member stepped the same buckets and reached the same state hash on every frame
	Diverged  bucket.Frame // first frame whose buckets or hashes differ, or -1
	Desynced  int          // members whose buckets or hashes differ from member 0's on some frame
	Duration  time.Duration

	Latencies []time.Duration // per command: submit to execution on the last member
	OneWay    []time.Duration // per delivered datagram: send to arrival, queueing included
	Lost      int64           // datagrams the network lost or dropped
}

// Member is one member's view of a run.
type Member struct {
	Slot      bucket.Slot
	FinalHash uint64 // state hash after frame Frames-1
	Stats     lockstep.Stats
	Errors    []error // Submit errors
}

// ErrTimeout is returned when the run does not finish within MaxTime.
var ErrTimeout = errors.New("locksteptest: run did not finish in time")

type eventKind uint8

const (
	evWake eventKind = iota
	evDeliver
	evSubmit
)

type event struct {
	at   time.Duration
	seq  uint64
	kind eventKind
	to   bucket.Slot
	from bucket.Slot
	gen  uint64 // evWake: the member's wake generation it was set for
	data []byte
	sent time.Duration
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
	slot    bucket.Slot
	core    *lockstep.Core
	sim     lockstep.Simulation
	uplink  *netsim.Uplink
	links   []*netsim.Link
	wakeGen uint64
	wakeAt  time.Duration
	inputs  []uint64 // input hash of each frame stepped
	states  []uint64 // state hash after each frame stepped
	errs    []error
	final   uint64
	stepped bucket.Frame
}

type commandKey struct {
	slot bucket.Slot
	seq  uint32
}

type pending struct {
	submitted time.Duration
	left      int
	last      time.Duration
}

// harness is one run in progress.
type harness struct {
	cfg     Config
	q       queue
	seq     uint64
	now     time.Duration
	members []*member
	free    []*event
	cmds    map[commandKey]*pending
	res     *Result
	bufs    [][]byte
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
	h := &harness{cfg: cfg, cmds: make(map[commandKey]*pending), res: &Result{Frames: cfg.Frames, Diverged: -1}}
	root := rng.SeedFromUint64(cfg.Seed).PCG()
	for i := range cfg.Members {
		slot := bucket.Slot(i)
		cc := cfg.Core
		cc.Members, cc.Self, cc.Session, cc.Start = cfg.Members, slot, uint16(cfg.Seed), 0
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
	frame := cfg.Core.Frame
	if frame == 0 {
		frame = lockstep.DefaultFrame
	}
	maxTime := cfg.MaxTime
	if maxTime == 0 {
		maxTime = 10*time.Duration(cfg.Frames)*frame + time.Minute
	}
	submits := root.Derive("submit times")
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
					h.push(&event{at: at, kind: evSubmit, to: m.slot, data: c})
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
		m := h.members[e.to]
		switch e.kind {
		case evWake:
			if e.gen != m.wakeGen {
				h.recycle(e)
				continue
			}
		case evDeliver:
			h.res.OneWay = append(h.res.OneWay, h.now-e.sent)
			m.core.Receive(h.now, e.from, e.data)
		case evSubmit:
			if _, err := m.core.Submit(h.now, e.data); err != nil {
				m.errs = append(m.errs, err)
			} else {
				seq := uint32(m.core.Stats().Submitted - 1)
				h.cmds[commandKey{m.slot, seq}] = &pending{submitted: h.now, left: cfg.Members}
			}
		}
		h.ready(m)
		h.recycle(e)
	}
	h.finish()
	return h.res, nil
}

func (h *harness) done() bool {
	for _, m := range h.members {
		if m.stepped < bucket.Frame(h.cfg.Frames-1) {
			return false
		}
	}
	return true
}

func (h *harness) slowest() bucket.Frame {
	s := bucket.NoFrame
	for _, m := range h.members {
		s = min(s, m.stepped)
	}
	return s
}

func (h *harness) push(e *event) {
	e.seq = h.seq
	h.seq++
	heap.Push(&h.q, e)
}

func (h *harness) recycle(e *event) {
	if e.kind == evDeliver {
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
	if rd.Deadline != m.wakeAt || m.wakeGen == 0 {
		h.wake(m, rd.Deadline)
	}
}

func (h *harness) transmit(m *member, d lockstep.Datagram) {
	size := len(d.Data) + m.core.Config().Overhead
	depart, ok := m.uplink.Admit(h.now, size)
	if !ok {
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

func (h *harness) step(m *member, b lockstep.Bucket) {
	if b.Frame != m.stepped+1 {
		panic(fmt.Sprintf("locksteptest: member %d got frame %d after %d", m.slot, b.Frame, m.stepped))
	}
	m.sim.Step(b.Frame, b.Commands)
	m.stepped = b.Frame
	m.inputs = append(m.inputs, InputHash(b.Frame, b.Commands))
	state := m.sim.Hash()
	m.states = append(m.states, state)
	if h.cfg.OnStep != nil {
		h.cfg.OnStep(m.slot, b, m.sim)
	}
	if b.Frame == bucket.Frame(h.cfg.Frames-1) {
		m.final = state
	}
	for _, c := range b.Commands {
		k := commandKey{c.Slot, c.Seq}
		if p := h.cmds[k]; p != nil {
			p.left--
			p.last = h.now
			if p.left == 0 {
				h.res.Latencies = append(h.res.Latencies, p.last-p.submitted)
				delete(h.cmds, k)
			}
		}
	}
}

func (h *harness) finish() {
	h.res.Duration = h.now
	h.res.Identical = true
	for _, m := range h.members {
		h.res.Members = append(h.res.Members, Member{Slot: m.slot, FinalHash: m.final, Stats: m.core.Stats(), Errors: m.errs})
	}
	ref := h.members[0]
	n := len(ref.states)
	for _, m := range h.members[1:] {
		n = min(n, len(m.states))
	}
	for _, m := range h.members[1:] {
		for f := range n {
			if m.states[f] != ref.states[f] || m.inputs[f] != ref.inputs[f] {
				h.res.Identical = false
				h.res.Desynced++
				if h.res.Diverged < 0 || bucket.Frame(f) < h.res.Diverged {
					h.res.Diverged = bucket.Frame(f)
				}
				break
			}
		}
	}
	for _, m := range h.members {
		if len(m.states) < h.cfg.Frames {
			h.res.Identical = false
		}
	}
}

// InputHash returns the FNV-1a 64 hash of a bucket: its frame, then each
// command's slot, sequence number, payload length and payload, all integers
// little-endian.
func InputHash(frame bucket.Frame, cmds []bucket.Command) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64, n int) {
		for i := range n {
			h ^= (v >> (8 * i)) & 0xff
			h *= 1099511628211
		}
	}
	mix(uint64(frame), 8)
	for _, c := range cmds {
		mix(uint64(c.Slot), 1)
		mix(uint64(c.Seq), 4)
		mix(uint64(len(c.Payload)), 4)
		for _, b := range c.Payload {
			h ^= uint64(b)
			h *= 1099511628211
		}
	}
	return h
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
