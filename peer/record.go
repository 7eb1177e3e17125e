package peer

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
)

// Recording asks a Member to record its replay as the session runs (see
// docs/replay-format.md): into Dir, as member-SLOT.phx, once the lobby has
// given this member its slot.
type Recording struct {
	Dir string
	// SimConfig, when set, returns the simulation's own parameters for the
	// session (as NewSim builds it from s), recorded in the header for
	// whatever rebuilds the simulation to verify the replay.
	SimConfig func(s *Agreement) []byte
}

// recorder writes one member's replay. Its methods are called with the
// member's mutex held.
type recorder struct {
	file *os.File
	w    *replay.Writer
	err  error // the first write error, reported at close
}

func (r *Recording) start(sess *Agreement, sim, version string) (*recorder, error) {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	f, err := os.Create(filepath.Join(r.Dir, fmt.Sprintf("member-%d.phx", sess.Self)))
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	h := replay.Header{
		Session: []byte(sess.ID), FrameLength: sess.Frame(), SimName: sim, SimVersion: version,
		Seed: sess.Seed, Self: sess.Self,
	}
	if r.SimConfig != nil {
		h.SimConfig = r.SimConfig(sess)
	}
	for _, id := range sess.Members {
		h.Members = append(h.Members, id.String())
	}
	w, err := replay.NewWriter(f, h)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("recording: %w", err)
	}
	return &recorder{file: f, w: w}, nil
}

// step records a stepped frame, with a checkpoint at the header's interval.
func (r *recorder) step(f bucket.Frame, cmds []bucket.Command, hash uint64, sections func() []lockstep.Section) {
	if r.err != nil {
		return
	}
	if r.err = r.w.Step(f, cmds); r.err == nil && f%bucket.Frame(r.w.Header().HashInterval) == 0 {
		r.err = r.w.Checkpoint(f, hash, sections())
	}
}

// spectator records that the member began serving spectator id, at frame
// f, the next frame it records.
func (r *recorder) spectator(f bucket.Frame, id peer.ID) {
	if r.err == nil {
		r.err = r.w.Membership(replay.Change{Kind: replay.ChangeSpectator, Frame: f, Member: r.w.Header().Self, LastFrame: -1, Detail: id.String()})
	}
}

// event records a membership change.
func (r *recorder) event(e lockstep.Event) {
	if c, ok := replay.ChangeOf(e); ok && r.err == nil {
		r.err = r.w.Membership(c)
	}
}

// statement records a signed statement the core newly holds.
func (r *recorder) statement(tag uint16, s lockstep.StatementOf) {
	if r.err == nil {
		r.err = r.w.Statement(replay.Statement{Member: s.Member, Tag: tag, Seal: s.Statement.Seal, Count: s.Statement.Count, Signature: s.Statement.Signature})
	}
}

// close writes the trailer and closes the file.
func (r *recorder) close(st Status) error {
	reason := replay.EndClosedEarly
	if st.Completed {
		reason = replay.EndCompleted
	}
	if r.err == nil {
		r.err = r.w.Close(st.Frame, st.Hash, reason)
	}
	if err := r.file.Close(); r.err == nil && err != nil {
		r.err = err
	}
	if r.err != nil {
		return fmt.Errorf("recording: %w", r.err)
	}
	return nil
}

// endedSim steps a simulation up to the session's last frame and no
// further, so that a member's world stays at its final frame while the
// members leave.
type endedSim struct {
	inner lockstep.Simulation
	end   bucket.Frame
}

func (s *endedSim) Step(f bucket.Frame, cmds []bucket.Command) {
	if f < s.end {
		s.inner.Step(f, cmds)
	}
}

func (s *endedSim) Hash() uint64 { return s.inner.Hash() }

func (s *endedSim) SectionHashes(dst []lockstep.Section) []lockstep.Section {
	if sh, ok := s.inner.(lockstep.SectionHasher); ok {
		return sh.SectionHashes(dst)
	}
	return dst
}

// sectionsOf returns sim's section hashes, or nil.
func sectionsOf(sim lockstep.Simulation) []lockstep.Section {
	if sh, ok := sim.(lockstep.SectionHasher); ok {
		return sh.SectionHashes(nil)
	}
	return nil
}
