package locksteptest

import "github.com/phalanx-net/phalanx/bucket"

// NullSim is a Simulation that only hashes what it steps: its state is a
// running hash of every bucket. It measures the engine alone.
type NullSim struct {
	state uint64
}

// Step folds the bucket into the state.
func (s *NullSim) Step(frame bucket.Frame, cmds []bucket.Command) {
	s.state = s.state*1099511628211 ^ InputHash(frame, cmds)
}

// Hash returns the state.
func (s *NullSim) Hash() uint64 { return s.state }
