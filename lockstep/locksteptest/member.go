package locksteptest

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// member is one member of a run: its core, its simulation, and what the
// run measures of it.
type member struct {
	slot      bucket.Slot
	core      *lockstep.Core
	sim       lockstep.Simulation
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
	stepper   *stepper           // its stepping goroutine, with Config.Parallel (parallel.go)
	overhead  int                // its core's Config.Overhead, the same for a rejoined core

	// Joining (catchup.go): the slot is open and nobody joined it yet; the
	// member catches up (its live buckets held until it has) and its
	// transfer began at admittedAt; its entry in Result.Admissions.
	open        bool
	catching    bool
	transfer    bool
	admittedAt  time.Duration
	pendingLive []lockstep.Bucket // the live buckets emitted while it catches up: bounded by the catch-up's length
	admission   int
	stallsAt    int64 // its stalls when it stepped Config.StallFrom, or -1

	// Within a window (window.go): its events, the range of its records
	// in its worker's log, and whether it left or stopped in the window
	// (made known to the rest of the run as the merge reaches it).
	win               []localEvent
	winWorker         *worker
	winFirst, winLast int
	winGone           bool
}

func (m *member) active() bool { return !m.killed && !m.left && !m.stopped && !m.open }

// sampleHeld notes, every tenth frame, the most m's core held for others
// (Result's peak).
func (m *member) sampleHeld(frame bucket.Frame) {
	if frame%10 == 0 {
		_, bytes, buffered := m.core.Held()
		m.peakHeld = max(m.peakHeld, bytes+buffered*m.core.Config().MaxCommandSize)
	}
}

// handOver gives m's core the state hash of the frame it stepped in turn,
// with the simulation's sections, and keeps it as the final state while
// the frame is within the run's frames.
func (m *member) handOver(frame bucket.Frame, state uint64, frames int) {
	m.sections = m.sections[:0]
	if sh, ok := m.sim.(lockstep.SectionHasher); ok {
		m.sections = sh.SectionHashes(m.sections)
	}
	m.core.Stepped(frame, state, m.sections)
	if frame <= bucket.Frame(frames-1) {
		m.final = state
	}
}

// fate is what becomes of an event for its member (member.fate).
type fate uint8

const (
	handleIt fate = iota // the member handles it now
	holdIt               // a datagram its frozen socket holds until it resumes
	loseIt               // a datagram its frozen, full socket loses
	dropIt               // nothing to do: the member stopped or is frozen, or a stale wake-up
)

// fate decides what becomes of e for m at time at, counting a datagram it
// holds; active is whether m takes part in the run (in a window, also
// whether it has not left within it). The harness in turn and a window's
// worker decide alike.
func (m *member) fate(at time.Duration, e *event, active bool) fate {
	frozen := at < m.frozen
	switch {
	case e.kind == evDeliver && active && frozen:
		// A frozen member's socket holds a few datagrams until it
		// resumes; the rest are lost.
		if m.queued < frozenQueue {
			m.queued++
			return holdIt
		}
		return loseIt
	case !active || frozen, e.kind == evWake && e.gen != m.wakeGen:
		return dropIt
	}
	return handleIt
}

// maxErrors is how many errors a member keeps: the first ones.
const maxErrors = 64

func (m *member) fail(err error) {
	if len(m.errs) < maxErrors {
		m.errs = append(m.errs, err)
	}
}

// waited records, at at, how long m went without stepping a frame,
// counting from frame 0, from the end of its last freeze and from the
// newest fault (lastFault).
func (m *member) waited(at, lastFault time.Duration) {
	if m.stepped >= 0 {
		m.maxWait = max(m.maxWait, at-max(m.lastStep, m.frozen, lastFault))
	}
	m.lastStep = at
}
