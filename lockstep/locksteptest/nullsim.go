package locksteptest

import (
	"encoding/binary"
	"fmt"

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

// AppendSnapshot appends the state (lockstep.Snapshotter): 8 bytes.
func (s *NullSim) AppendSnapshot(dst []byte) []byte {
	return binary.LittleEndian.AppendUint64(dst, s.state)
}

// Restore replaces the state with a snapshot's.
func (s *NullSim) Restore(data []byte) error {
	if len(data) != 8 {
		return fmt.Errorf("locksteptest: a null simulation snapshot of %d bytes, want 8", len(data))
	}
	s.state = binary.LittleEndian.Uint64(data)
	return nil
}
