package locksteptest

import (
	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// NullSim is a Simulation that only hashes what it steps: its state is a
// running hash of every bucket. It measures the engine alone.
type NullSim struct {
	state uint64
}

// Step folds the bucket into the state.
func (s *NullSim) Step(frame bucket.Frame, cmds []bucket.Command) {
	s.state = s.state*1099511628211 ^ lockstep.InputHash(frame, cmds)
}

// Hash returns the state.
func (s *NullSim) Hash() uint64 { return s.state }

// Perturb alters the state, as a bug or a cheat would.
func (s *NullSim) Perturb() { s.state++ }
