package peer

import (
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Phase is where a Member stands in its session.
type Phase int32

const (
	PhaseLobby   Phase = iota // meeting the others and agreeing on the session
	PhasePlaying              // the session runs
	PhaseEnded                // the session is over: its last frame stepped, or Close
	PhaseFailed               // the member stopped on an error (Status().Err)
)

var phaseNames = [...]string{
	PhaseLobby:   "lobby",
	PhasePlaying: "playing",
	PhaseEnded:   "ended",
	PhaseFailed:  "failed",
}

func (p Phase) String() string {
	if p >= 0 && int(p) < len(phaseNames) && phaseNames[p] != "" {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", int32(p))
}

// Status is a snapshot of a Member.
type Status struct {
	Phase Phase
	Slot  int          // this member's slot; -1 before the lobby ends
	Frame bucket.Frame // newest frame stepped, or -1
	Hash  uint64       // state hash after Frame
	Err   error        // why the member failed (PhaseFailed)
	// Done is set once the member has finished its session (Completed:
	// it stepped the last frame) and torn everything down.
	Done      bool
	Completed bool
	Stats     lockstep.SessionStats
}

func (s Status) String() string {
	switch s.Phase {
	case PhaseLobby:
		return "in the lobby, waiting for the others"
	case PhaseFailed:
		return fmt.Sprintf("failed: %v", s.Err)
	}
	return fmt.Sprintf("member %d %s at frame %d, hash %016x", s.Slot, s.Phase, s.Frame, s.Hash)
}

// Status returns a snapshot of the member.
func (m *Member) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.status
	if m.ls != nil && !st.Done {
		st.Stats = m.ls.Stats()
	}
	return st
}

// Phase returns where the member stands.
func (m *Member) Phase() Phase { return Phase(m.phase.Load()) }

// Agreement returns what the members agreed in the lobby, or nil before.
func (m *Member) Agreement() *Agreement {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sess
}

// TransportStats returns the figures of the member's transport (see
// Transport.Stats): what went over the wire, per member; zero before the
// lobby has ended. After the member is done they are the final ones.
func (m *Member) TransportStats() TransportStats {
	m.mu.Lock()
	tr := m.tr
	m.mu.Unlock()
	if tr == nil {
		return TransportStats{}
	}
	return tr.Stats()
}

// Events returns the session's events so far (at most 1,024).
func (m *Member) Events() []lockstep.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]lockstep.Event(nil), m.events...)
}
