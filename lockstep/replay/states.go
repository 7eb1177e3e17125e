package replay

import (
	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// DefaultStateFrames is how many frames of states a StateRing made with
// NewStateRing(0) keeps: about three seconds at 20 Hz, enough for the
// members to compare a checkpoint and locate a divergence in it.
const DefaultStateFrames = 64

// StateRing keeps a lockstep.Snapshotter simulation's state after each of
// the last frames stepped, so that a desync report can hold the state at
// the last agreed checkpoint and at the divergent frame, found only some
// frames later. It reuses its buffers: after the first laps, keeping a
// state allocates only when the state grew. It is not safe for concurrent
// use.
type StateRing struct {
	slots []keptState
}

// keptState is one frame's state in a StateRing.
type keptState struct {
	frame bucket.Frame
	hash  uint64
	data  []byte
	held  bool
}

// NewStateRing returns a ring that keeps the states of the last n frames
// (n ≤ 0: DefaultStateFrames).
func NewStateRing(n int) *StateRing {
	if n <= 0 {
		n = DefaultStateFrames
	}
	return &StateRing{slots: make([]keptState, n)}
}

// Keep saves sim's state after frame f, whose state hash is hash. Frames
// are kept by number: keeping f replaces the state of f − n.
func (r *StateRing) Keep(f bucket.Frame, sim lockstep.Snapshotter, hash uint64) {
	if f < 0 {
		return
	}
	s := &r.slots[int(f)%len(r.slots)]
	s.frame, s.hash, s.held = f, hash, true
	s.data = sim.AppendSnapshot(s.data[:0])
}

// At returns a copy of the state kept after frame f and its hash, and
// false when the ring does not hold f.
func (r *StateRing) At(f bucket.Frame) ([]byte, uint64, bool) {
	if f < 0 {
		return nil, 0, false
	}
	s := &r.slots[int(f)%len(r.slots)]
	if !s.held || s.frame != f {
		return nil, 0, false
	}
	return append([]byte(nil), s.data...), s.hash, true
}

// LastAgreedCheckpoint returns the last checkpoint before divergent frame
// f, for checkpoints every interval frames (interval < 1: every
// lockstep.DefaultHashInterval): the newest frame below f whose hash
// reports every member agreed on, since f is the first that differs.
func LastAgreedCheckpoint(f bucket.Frame, interval int) bucket.Frame {
	if interval < 1 {
		interval = lockstep.DefaultHashInterval
	}
	if f <= 0 {
		return -1
	}
	return (f - 1) / bucket.Frame(interval) * bucket.Frame(interval)
}

// AddStates adds member's states kept in ring (nil: none) at the report's
// last agreed checkpoint (r.Agreed) and divergent frame (r.Frame), those
// the ring still holds.
func (r *Report) AddStates(member int, ring *StateRing) {
	if ring == nil {
		return
	}
	for _, f := range []int64{r.Agreed, r.Frame} {
		if data, hash, ok := ring.At(bucket.Frame(f)); ok {
			r.AddState(ReportState{Member: member, Frame: f, Hash: hashText(hash), Data: data})
		}
	}
}

// AddState adds s to the report's states, replacing one of the same
// member and frame.
func (r *Report) AddState(s ReportState) {
	for i, x := range r.States {
		if x.Member == s.Member && x.Frame == s.Frame {
			r.States[i] = s
			return
		}
	}
	r.States = append(r.States, s)
}

// StateOf returns member's state after frame f in the report, if it holds
// one.
func (r *Report) StateOf(member int, f int64) (ReportState, bool) {
	for _, s := range r.States {
		if s.Member == member && s.Frame == f {
			return s, true
		}
	}
	return ReportState{}, false
}
