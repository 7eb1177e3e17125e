package locksteptest

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/quantile"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Windows (Config.Windows): the members' cores run side by side within
// windows of virtual time shorter than the smallest one-way delay of the
// profile, a conservative parallel discrete-event scheme. No datagram sent
// within a window arrives within it, so what a member does in a window
// depends only on what was queued for it before the window and on what it
// queues for itself (its wake-ups): each member handles its own events in
// the window's order on one of the workers, and what a handling does to the
// rest of the run (the datagrams and wake-ups it queues, the commands it
// submits, the frames it steps into the history and the oracle, the
// one-way samples) is logged and carried out afterwards on one goroutine,
// in the order in which the run in turn would have handled those events
// (by time, ties in the order they were queued). So the queue holds the
// same messages in the same order, and the run is the same event for event
// as in turn.
//
// A window ends before the next fault and the end of a partition, and the
// run goes in turn near its last frame (where the run's end depends on the
// order of the members' steps) and with everything that reads the run as it
// goes or is shared between members: callbacks (OnStep, OnEvent,
// OnStatement, OnReceive), Tamper, mute, storm and perturb faults, joiners,
// rejoins, spectators, the stall window and the stream transport.

// windowEnd is how close to the last frame's time windows stop: a
// member's frame clock runs with the virtual time, corrected by
// milliseconds.
const windowEnd = time.Second

// minWindowEvents is the fewest events a window must hold to be run as one;
// below, the harness handles the next event in turn.
const minWindowEvents = 64

// windows is the state of the scheme for one run.
type windows struct {
	span    time.Duration   // the window's length: the smallest one-way delay
	faults  []time.Duration // the faults' times, sorted
	last    time.Duration   // windows end before it
	workers []*worker
	todo    []*member      // the members with events in this window
	running sync.WaitGroup // the workers' goroutines, waited for when Run ends
	heads   mergeHeap
	counter uint64 // orders the wake-ups queued within windows (merge)
}

// worker handles some of the members' events in a window and logs what
// they do to the rest of the run.
type worker struct {
	h       *harness
	end     time.Duration // the window's end
	cur     *member       // the member it handles now
	recs    []record      // this window's handlings, member after member
	effects []effect
	keys    []commandKey // the commands its members submitted and executed in the window (effects index them)
	steps   []stepped    // the frames they stepped
	pool
	lost    int64
	touched byte // what touch read, kept so that its loads are not left out
	err     any  // a panic on the worker, raised again by the harness
	// oneWay counts the one-way delays of the datagrams its members
	// received, without Config.KeepSamples (then they are effects, kept
	// in order): the run's sketch takes them at its end (countOneWays),
	// the same counts in any order.
	oneWay quantile.Sketch
}

// record is one event handled in a window: 32 bytes, which the merge
// reads on one goroutine (the member and the worker are its head's).
type record struct {
	at    time.Duration
	seq   uint64 // its place in the queue's order; for a wake-up queued within the window, set when the merge reaches the handling that queued it
	local int32  // for a wake-up queued within the window: its index in the member's local list, else -1
	from  int32  // its effects: effects[from:to]
	to    int32
	gone  bool // the member left or stopped in it
	left  bool
}

type effectKind uint8

const (
	efPush      effectKind = iota // queue e (for member n) at at
	efLocal                       // a wake-up queued within the window: local[n]
	efOneWay                      // a datagram's one-way delay at
	efSubmitted                   // command keys[n] submitted
	efStepped                     // the member stepped steps[n]
	efExecuted                    // the member executed keys[n:n2]
)

// effect is one thing a handling did to the rest of the run: 32 bytes,
// what the rarer kinds carry is in the worker's keys and steps.
type effect struct {
	at   time.Duration
	e    *event
	n    int32
	n2   int32
	kind effectKind
}

// stepped is a frame a member stepped in a window, with its hashes.
type stepped struct {
	frame bucket.Frame
	fh    frameHashes
}

// localEvent is an event a member queued for itself within the window.
type localEvent struct {
	at  time.Duration
	e   *event
	rec int // the record of its handling once handled
	seq uint64
}

// windowsFor returns the scheme's state for the run, or nil when it does
// not apply (see Config.Windows).
func (h *harness) windowsFor(frame time.Duration) *windows {
	c := &h.cfg
	if !c.Windows || h.parallel() || h.streams != nil || h.archive != nil || c.Spectators > 0 || c.Tamper != nil ||
		c.OnStep != nil || c.OnEvent != nil || c.OnStatement != nil || c.OnReceive != nil || c.OnSpectator != nil || c.StallTo > 0 {
		return nil
	}
	w := &windows{span: time.Duration(math.MaxInt64)}
	for _, ph := range c.Profile.Phases {
		w.span = min(w.span, ph.Latency)
	}
	w.span = min(w.span, frame)
	if w.span <= time.Millisecond {
		return nil
	}
	for _, f := range c.Faults {
		switch f.Kind {
		case FaultMute, FaultStorm, FaultPerturb, FaultRejoin, FaultJoin:
			return nil
		}
		w.faults = append(w.faults, time.Duration(f.Frame)*frame)
	}
	slices.Sort(w.faults)
	w.last = time.Duration(c.Frames-1)*frame - windowEnd
	for range max(1, min(runtime.GOMAXPROCS(0), len(h.members))) {
		w.workers = append(w.workers, &worker{h: h})
	}
	return w
}

// window runs the next window if one applies now, and reports whether it
// did; scheduleCommands is the run's, called as the run in turn calls it
// before each event. It returns done when the run ended within the window
// (every member left or stopped).
func (h *harness) window(maxTime time.Duration, scheduleCommands func(time.Duration)) (ran, done bool) {
	w := h.win
	start, ok := h.net.Next()
	if !ok {
		return false, false
	}
	end := min(start+w.span, w.last, maxTime+1)
	if i, found := slices.BinarySearch(w.faults, start); found || i < len(w.faults) {
		end = min(end, w.faults[i])
	}
	if start < h.splitTo {
		end = min(end, h.splitTo)
	}
	if end <= start || h.net.Len() < minWindowEvents {
		return false, false
	}
	// Hand each member the events queued for it in the window; its
	// worker puts them in the queue's order (member).
	h.net.TakeBefore(end, func(at time.Duration, seq uint64, q queued) {
		m := h.members[q.to]
		if len(m.win) == 0 {
			w.todo = append(w.todo, m)
		}
		m.win = append(m.win, localEvent{at: at, e: q.e, seq: seq})
	})
	for _, wk := range w.workers {
		wk.end = end
		wk.recs, wk.effects, wk.keys, wk.steps = wk.recs[:0], wk.effects[:0], wk.keys[:0], wk.steps[:0]
	}
	prev := h.now
	h.now = start // apart reads it: no partition begins or ends within the window
	// The members go to whichever worker asks first: a worker the
	// scheduler starts late (the machine is busy) finds the work done
	// rather than holding the window up.
	c := &claims{todo: w.todo, n: int32(len(w.todo)), finished: make(chan struct{})}
	for _, wk := range w.workers[1:] {
		w.running.Go(func() { wk.run(c) })
	}
	w.workers[0].run(c)
	if c.done.Load() < c.n {
		<-c.finished
	}
	for _, wk := range w.workers {
		if wk.err != nil {
			panic(wk.err)
		}
	}
	h.now = prev
	h.res.windows++
	return true, h.merge(scheduleCommands)
}

// countOneWays adds the one-way delays the workers counted to the run's.
// Which worker counted which delay depends on the machine, so the merged
// sum (and mean) may differ in its last bits from run to run; only the
// counts, and so the percentiles the run reports, are the same.
func (w *windows) countOneWays(res *Result) {
	for _, wk := range w.workers {
		res.oneWay.Merge(&wk.oneWay)
		wk.oneWay = quantile.Sketch{}
	}
}

// claims hands one window's members to the workers.
type claims struct {
	todo     []*member
	n        int32
	next     atomic.Int32 // the next member to hand out
	done     atomic.Int32 // the members handled
	finished chan struct{}
}

// run handles members of the window, one at a time, until none is left.
// It touches the worker only once it has a member: a goroutine started for
// an earlier window that ran late finds that window's members all handed
// out.
func (wk *worker) run(c *claims) {
	for {
		i := c.next.Add(1) - 1
		if i >= c.n {
			return
		}
		wk.member(c.todo[i])
		if c.done.Add(1) == c.n {
			close(c.finished)
		}
	}
}

// member handles m's events of the window in order.
func (wk *worker) member(m *member) {
	defer func() {
		if r := recover(); r != nil {
			wk.err = r
		}
	}()
	m.winWorker = wk
	m.winFirst = len(wk.recs)
	wk.cur = m
	pre := len(m.win) // m.win[:pre] was queued before the window; the rest by m within it
	sortEvents(m.win)
	wk.touch(m.win[:pre])
	next, lo := 0, pre
	for {
		// The first of the events queued before the window and
		// the wake-ups m queued within it: by time, the former
		// first at the same time, the latter in the order queued.
		i := -1
		if next < pre {
			i = next
		}
		for lo < len(m.win) && m.win[lo].rec >= 0 {
			lo++
		}
		for j := lo; j < len(m.win); j++ {
			if m.win[j].rec >= 0 {
				continue
			}
			if i < 0 || m.win[j].at < m.win[i].at {
				i = j
			}
		}
		if i < 0 {
			break
		}
		if i == next && next < pre {
			next++
		}
		le := &m.win[i]
		le.rec = len(wk.recs)
		local := int32(-1)
		if i >= pre {
			local = int32(i)
		}
		wk.recs = append(wk.recs, record{at: le.at, seq: le.seq, local: local, from: int32(len(wk.effects))})
		wk.handle(m, le.at, le.e)
		r := &wk.recs[len(wk.recs)-1]
		r.to = int32(len(wk.effects))
	}
	m.winLast = len(wk.recs)
}

// sortEvents puts evs in the queue's order: by time, ties in the order
// queued. They come as the queue's heap held them, in which an event is
// never before those above it, so that an insertion sort moves each only
// a little way.
func sortEvents(evs []localEvent) {
	for i := 1; i < len(evs); i++ {
		x := evs[i]
		j := i
		for j > 0 && (x.at < evs[j-1].at || x.at == evs[j-1].at && x.seq < evs[j-1].seq) {
			evs[j] = evs[j-1]
			j--
		}
		evs[j] = x
	}
}

// touch reads the events and the first byte of their datagrams before
// they are handled, and nothing of what it reads is used: they were
// written on another goroutine a window or more ago and are mostly not in
// this core's caches, and these loads, independent of one another, wait
// for memory together rather than one at a time as each event's handling
// reaches them.
func (wk *worker) touch(evs []localEvent) {
	var sum byte
	for i := range evs {
		sum += byte(evs[i].e.kind)
	}
	for i := range evs {
		if d := evs[i].e.data; len(d) > 0 {
			sum += d[0]
		}
	}
	wk.touched += sum
}

func (wk *worker) effect(ef effect) { wk.effects = append(wk.effects, ef) }

// push queues e for member to at time at: within the window (a member's
// own wake-up) on the member's local list, after it in the run's queue
// when the merge reaches this handling.
func (wk *worker) push(at time.Duration, e *event) {
	if at >= wk.end {
		wk.effect(effect{kind: efPush, at: at, e: e, n: int32(e.to)})
		return
	}
	m := wk.cur
	if e.kind != evWake && e.kind != evDeliver || e.to != m.slot {
		panic(fmt.Sprintf("locksteptest: an event of kind %d for member %d within member %d's window", e.kind, e.to, m.slot))
	}
	m.win = append(m.win, localEvent{at: at, e: e, rec: -1})
	wk.effect(effect{kind: efLocal, n: int32(len(m.win) - 1)})
}

// handle is one pass of Run's loop for member m's event e at time at.
func (wk *worker) handle(m *member, at time.Duration, e *event) {
	switch m.fate(at, e, m.active() && !m.winGone) {
	case holdIt:
		wk.push(m.frozen, e)
		return
	case loseIt:
		wk.lost++
		wk.recycle(e)
		return
	case dropIt:
		wk.recycle(e)
		return
	}
	switch e.kind {
	case evWake:
	case evDeliver:
		if wk.h.cfg.KeepSamples {
			wk.effect(effect{kind: efOneWay, at: at - e.sent})
		} else {
			wk.oneWay.Add(float64(at - e.sent))
		}
		m.core.Receive(at, e.from, e.data)
	case evSubmit:
		if _, err := m.core.Submit(at, e.data); err != nil {
			if !errors.Is(err, lockstep.ErrClosed) {
				m.fail(err)
			}
		} else {
			wk.keys = append(wk.keys, commandKey{m.slot, uint32(m.core.Stats().Submitted - 1)})
			wk.effect(effect{kind: efSubmitted, n: int32(len(wk.keys) - 1)})
		}
	default:
		panic(fmt.Sprintf("locksteptest: an event of kind %d within a window", e.kind))
	}
	wk.ready(m, at)
	wk.recycle(e)
}

// ready is harness.ready within a window.
func (wk *worker) ready(m *member, at time.Duration) {
	rd := m.core.Ready(at)
	for _, d := range rd.Datagrams {
		wk.carry(m, at, d)
	}
	for _, b := range rd.Buckets {
		wk.step(m, at, b)
	}
	m.events = append(m.events, rd.Events...)
	r := &wk.recs[len(wk.recs)-1]
	if m.core.Left() {
		m.winGone, r.gone, r.left = true, true, true
		return
	}
	if m.core.Stopped() {
		m.winGone, r.gone = true, true
		m.waited(at, wk.h.lastFault)
		return
	}
	if rd.Deadline != m.wakeAt || m.wakeGen == 0 {
		m.wakeGen++
		m.wakeAt = rd.Deadline
		e := wk.newEvent()
		e.kind, e.to, e.gen = evWake, m.slot, m.wakeGen
		wk.push(rd.Deadline, e)
	}
}

// carry is harness.carry of a datagram within a window.
func (wk *worker) carry(m *member, at time.Duration, d lockstep.Datagram) {
	e := wk.newEvent()
	e.kind, e.to, e.from, e.sent = evDeliver, d.To, m.slot, at
	e.data = append(wk.buf(), d.Data...)
	dl := wk.h.net.Transit(at, int(m.slot), int(d.To), len(d.Data)+m.overhead)
	if dl.Lost() {
		wk.lost++
		wk.recycle(e)
		return
	}
	for i := range dl.Copies {
		if i > 0 {
			c := wk.newEvent()
			*c = *e
			c.data = append(wk.buf(), e.data...)
			e = c
		}
		if dl.Arrival[i] < wk.end {
			panic("locksteptest: a datagram arrives within the window it was sent in")
		}
		wk.effect(effect{kind: efPush, at: dl.Arrival[i], e: e, n: int32(d.To)})
	}
}

// step is harness.step within a window.
func (wk *worker) step(m *member, at time.Duration, b lockstep.Bucket) {
	h := wk.h
	if b.Frame != m.stepped+1 {
		panic(fmt.Sprintf("locksteptest: member %d got frame %d after %d", m.slot, b.Frame, m.stepped))
	}
	m.waited(at, wk.h.lastFault)
	m.sim.Step(b.Frame, b.Commands)
	m.stepped = b.Frame
	m.sampleHeld(b.Frame)
	input := lockstep.InputHash(b.Frame, b.Commands)
	state := m.sim.Hash()
	wk.steps = append(wk.steps, stepped{frame: b.Frame, fh: frameHashes{input: input, state: state}})
	wk.effect(effect{kind: efStepped, n: int32(len(wk.steps) - 1)})
	m.handOver(b.Frame, state, h.cfg.Frames)
	if len(b.Commands) > 0 {
		from := len(wk.keys)
		for _, c := range b.Commands {
			wk.keys = append(wk.keys, commandKey{c.Slot, c.Seq})
		}
		wk.effect(effect{kind: efExecuted, n: int32(from), n2: int32(len(wk.keys))})
	}
}
