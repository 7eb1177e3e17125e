package locksteptest

import (
	"sync"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Parallel stepping (Config.Parallel): every member's simulation steps on
// a goroutine of its own while the harness goes on with the events. The
// harness hands a member's bucket to its goroutine and settles the result
// later, at a point of the run that the events alone decide (never the
// goroutines' timing), so a run is as deterministic as in turn: it reports
// the frame's state hash to the member's core (Core.Stepped) and to the
// history. A core reads the hash of a frame it stepped only when the frame
// is a checkpoint (every Config.HashInterval frames: the hash goes out
// with the next datagrams and is compared with the others') or while it
// locates a desync (the hashes of the frames since the last agreed
// checkpoint). So the harness settles a member before its core is next
// called when a checkpoint frame is among those it handed over, and
// otherwise lets up to stepQueue frames wait: every core then sees the
// same calls with the same arguments as when stepping in turn, and the
// run is the same event for event, unless a desync is being located
// between two settles (a simulation that is not deterministic), when
// the hashes of the frames between reach the core later than in turn, or
// two members are nearly the history's window apart, whose frames are
// compared a few frames later than in turn.

// stepQueue is how many buckets a member's goroutine may hold before the
// harness waits for the oldest.
const stepQueue = 16

// stepJob is one bucket for a member's goroutine, and what stepping it
// gave.
type stepJob struct {
	frame    bucket.Frame
	commands []bucket.Command // the bucket's, copied: the core reuses its own
	payloads []byte           // the commands' payloads
	input    uint64
	state    uint64
	sections []lockstep.Section
}

// stepper is a member's stepping goroutine's side in the harness.
type stepper struct {
	jobs    chan stepJob
	done    chan stepJob
	pending int
	every   bucket.Frame // the core's HashInterval
	urgent  bool         // a checkpoint frame is pending
	spare   []stepJob    // settled jobs, whose buffers are reused
}

// parallel reports whether the run can step in parallel: nothing reads a
// simulation as it steps (OnStep, perturb faults, checkpoints for
// joiners, spectators), and no member lies (Tamper) to provoke desyncs.
func (h *harness) parallel() bool {
	if !h.cfg.Parallel || h.cfg.OnStep != nil || h.cfg.Tamper != nil || h.archive != nil || h.cfg.Spectators > 0 {
		return false
	}
	for _, f := range h.cfg.Faults {
		if f.Kind == FaultPerturb {
			return false
		}
	}
	return true
}

// startSteppers starts every member's stepping goroutine; the function it
// returns stops them (after settleAll) and waits until they have ended.
func (h *harness) startSteppers() (stop func()) {
	var wg sync.WaitGroup
	for _, m := range h.members {
		st := &stepper{jobs: make(chan stepJob, stepQueue), done: make(chan stepJob, stepQueue), every: bucket.Frame(m.core.Config().HashInterval)}
		m.stepper = st
		wg.Go(func() {
			for j := range st.jobs {
				m.sim.Step(j.frame, j.commands)
				j.state = m.sim.Hash()
				if sh, ok := m.sim.(lockstep.SectionHasher); ok {
					j.sections = sh.SectionHashes(j.sections[:0])
				}
				st.done <- j
			}
		})
	}
	return func() {
		for _, m := range h.members {
			close(m.stepper.jobs)
		}
		wg.Wait()
	}
}

// dispatch hands bucket b to m's goroutine: step's work but for what
// needs the simulation, which settle does.
func (h *harness) dispatch(m *member, b lockstep.Bucket) {
	st := m.stepper
	if st.pending == stepQueue {
		h.settleOne(m)
	}
	m.stepped = b.Frame
	m.sampleHeld(b.Frame)
	if h.cfg.StallTo > 0 {
		h.stallWindow(m, b.Frame)
	}
	var j stepJob
	if n := len(st.spare); n > 0 {
		j, st.spare = st.spare[n-1], st.spare[:n-1]
	}
	j.frame, j.input = b.Frame, lockstep.InputHash(b.Frame, b.Commands)
	j.payloads, j.commands = j.payloads[:0], j.commands[:0]
	for _, c := range b.Commands {
		j.payloads = append(j.payloads, c.Payload...)
	}
	at := 0
	for _, c := range b.Commands {
		end := at + len(c.Payload)
		c.Payload = j.payloads[at:end:end]
		j.commands = append(j.commands, c)
		at = end
	}
	st.pending++
	st.urgent = st.urgent || b.Frame%st.every == 0
	st.jobs <- j
	h.executedBy(m, b)
}

// settleOne takes the oldest bucket m's goroutine stepped and does with
// its result what step does.
func (h *harness) settleOne(m *member) {
	st := m.stepper
	j := <-st.done
	st.pending--
	h.history.step(m.slot, j.frame, frameHashes{input: j.input, state: j.state})
	m.core.Stepped(j.frame, j.state, j.sections)
	if j.frame <= bucket.Frame(h.cfg.Frames-1) {
		m.final = j.state
	}
	st.spare = append(st.spare, j)
}

// settle waits for every bucket m's goroutine holds; a no-op when
// stepping in turn.
func (h *harness) settle(m *member) {
	if m.stepper == nil {
		return
	}
	for m.stepper.pending > 0 {
		h.settleOne(m)
	}
	m.stepper.urgent = false
}

// settleDue settles m if its core is to be called and needs a hash it
// holds: a checkpoint frame's.
func (h *harness) settleDue(m *member) {
	if m.stepper != nil && m.stepper.urgent {
		h.settle(m)
	}
}

// settleAll settles every member.
func (h *harness) settleAll() {
	for _, m := range h.members {
		h.settle(m)
	}
}
