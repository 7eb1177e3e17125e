package replayview_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/view/replayview"
)

// rtsSim builds the rts simulation of a replay's header.
func rtsSim(h replay.Header) (lockstep.Simulation, error) {
	var cfg rts.Config
	if err := cfg.UnmarshalBinary(h.SimConfig); err != nil {
		return nil, err
	}
	return rts.NewSim(cfg)
}

func cloneRTS(s lockstep.Simulation) lockstep.Simulation { return s.(*rts.Sim).Clone() }

// The fixtures: member 0's and member 1's replays of
// "phalanx sim --perturb 1@100 --record DIR --frames 300 --peers 4"; member
// 1's state was altered after frame 100.
var diverged = []string{
	filepath.Join("testdata", "diverged-member-0.phx"),
	filepath.Join("testdata", "diverged-member-1.phx"),
}

// TestReplaysFindDivergence: the first divergent frame and section, the
// last agreed checkpoint, agreeing inputs, and which file does not
// reproduce its own hashes.
func TestReplaysFindDivergence(t *testing.T) {
	rs, err := replayview.OpenReplays(replayview.ReplayConfig{Files: diverged, Sim: rtsSim, Clone: cloneRTS})
	if err != nil {
		t.Fatal(err)
	}
	if info := rs.Info(); info.Checked || info.Files[0].Reproduces {
		t.Errorf("before Check: checked %v, file 0 reproduces %v", info.Checked, info.Files[0].Reproduces)
	}
	rs.Check(context.Background())
	info := rs.Info()
	d := info.Divergence
	if d == nil {
		t.Fatal("no divergence found")
	}
	if d.Frame != 100 || d.Section != "units" || d.LastAgreed != 80 || d.InputsFrame != -1 {
		t.Errorf("divergence at frame %d section %q, last agreed %d, inputs from %d; want 100, units, 80, -1 (%s)",
			d.Frame, d.Section, d.LastAgreed, d.InputsFrame, d.Text)
	}
	if !info.Checked || info.Frames != 300 || !info.Files[0].Reproduces || info.Files[1].Reproduces ||
		info.Files[1].RerunFrame != 100 || info.Files[1].RerunSection != "units" {
		t.Errorf("files %+v", info.Files)
	}
	if info.Files[0].End != "completed" {
		t.Errorf("end %q, want completed", info.Files[0].End)
	}

	fr, err := rs.Frame(100)
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.Sides) != 2 || fr.Sides[0].Scene == nil || len(fr.Sides[0].Scene.Units) == 0 {
		t.Fatalf("frame 100: %d sides, no world", len(fr.Sides))
	}
	a, b := fr.Sides[0].Checkpoint, fr.Sides[1].Checkpoint
	if a == nil || b == nil || a.Frame != 100 || a.Hash == b.Hash {
		t.Fatalf("checkpoints %+v %+v, want frame 100's, differing", a, b)
	}
	// Re-run from the buckets, the two worlds are the same: the
	// alteration is not in the commands.
	if len(fr.Sides[1].Diff) != 0 || fr.Sides[0].Hash != fr.Sides[1].Hash {
		t.Errorf("re-run worlds differ: %d units, hashes %s %s", len(fr.Sides[1].Diff), fr.Sides[0].Hash, fr.Sides[1].Hash)
	}
	if _, err := rs.Frame(300); !errors.Is(err, replayview.ErrNoFrame) {
		t.Errorf("Frame(300): %v, want ErrNoFrame", err)
	}
}

// TestReplaysSeek: any order of frames asked gives the state a straight
// re-run has, with copies to seek from and without.
func TestReplaysSeek(t *testing.T) {
	want := map[int64]uint64{}
	sim, err := rtsSim(headerOf(t, diverged[0]))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := replay.OpenFile(diverged[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		if rec.Kind == replay.KindFrame {
			sim.Step(rec.Frame, rec.Commands)
			want[int64(rec.Frame)] = sim.Hash()
		}
	}
	// The rts game is a lockstep.Snapshotter: the viewer keeps its states.
	// Behind plain, which hides that, it keeps copies (Clone) or none.
	plain := func(h replay.Header) (lockstep.Simulation, error) {
		sim, err := rtsSim(h)
		return plainSim{sim}, err
	}
	clonePlain := func(s lockstep.Simulation) lockstep.Simulation { return plainSim{cloneRTS(s.(plainSim).Simulation)} }
	for i, c := range []struct {
		sim   func(replay.Header) (lockstep.Simulation, error)
		clone func(lockstep.Simulation) lockstep.Simulation
	}{{rtsSim, nil}, {plain, nil}, {plain, clonePlain}} {
		clone := c.clone
		rs, err := replayview.OpenReplays(replayview.ReplayConfig{Files: diverged[:1], Sim: c.sim, Clone: clone})
		if err != nil {
			t.Fatal(err)
		}
		checked := make(chan struct{})
		switch i {
		case 0:
			close(checked) // seeks without a check
		case 1:
			rs.Check(context.Background()) // seeks start from the states it kept
			close(checked)
		default:
			go func() { rs.Check(context.Background()); close(checked) }() // seeks while it runs
		}
		for _, f := range []int64{250, 17, 299, 0, 150, 149, 151, 3} {
			fr, err := rs.Frame(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := fr.Sides[0].Hash; got != hex(want[f]) {
				t.Errorf("case %d: frame %d hash %s, want %s", i, f, got, hex(want[f]))
			}
		}
		<-checked
	}
}

// plainSim hides every optional interface of the simulation it holds.
type plainSim struct{ lockstep.Simulation }

func hex(v uint64) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 16)
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b)
}

func headerOf(t *testing.T, name string) replay.Header {
	t.Helper()
	f, err := replay.OpenFile(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.Header()
}

// TestReplaysSeekDuringCheck: while Check runs, a seek far beyond the
// states it has kept does not re-run the way there itself: it shows the
// nearest kept world at once, marked pending; once Check has passed the
// frame, the same seek is whole and steps fewer than 250 frames. The two
// files, of one session, are re-run once. Steps are counted, not timed:
// Check is held at a frame of the test's choosing.
func TestReplaysSeekDuringCheck(t *testing.T) {
	var seekSteps, checkSteps atomic.Int64
	gates := map[bucket.Frame]gate{20: newGate(), 260: newGate()}
	opened, holding := false, false // set once OpenReplays has built the seeks' simulations; once one of Check's holds
	factory := func(h replay.Header) (lockstep.Simulation, error) {
		sim, err := rtsSim(h)
		if err != nil {
			return nil, err
		}
		c := &countedSim{Sim: sim.(*rts.Sim), steps: &seekSteps}
		if opened {
			c.steps = &checkSteps
			if !holding {
				c.gates, holding = gates, true
			}
		}
		return c, nil
	}
	rs, err := replayview.OpenReplays(replayview.ReplayConfig{Files: diverged, Sim: factory})
	if err != nil {
		t.Fatal(err)
	}
	opened = true
	done := make(chan struct{})
	go func() { rs.Check(context.Background()); close(done) }()
	<-gates[20].held // Check has re-run 20 frames and waits: the only states kept are frame 0's

	fr, err := rs.Frame(299)
	if err != nil {
		t.Fatal(err)
	}
	if n := seekSteps.Load(); n != 0 {
		t.Errorf("a seek to frame 299 while Check is at frame 20 stepped %d frames itself, want 0 (it re-ran the way)", n)
	}
	for i, s := range fr.Sides {
		if !fr.Pending || s.At != -1 || s.Scene == nil || s.Scene.Frame != 0 {
			t.Errorf("file %d at frame 299 during the check: pending %v, world after frame %d; want pending, the world before frame 0", i, fr.Pending, s.At)
		}
	}
	// Within 250 frames of a kept state a seek is whole: it steps from there.
	if fr, err = rs.Frame(40); err != nil || fr.Pending || fr.Sides[0].At != 40 || fr.Sides[1].At != 40 {
		t.Errorf("frame 40 during the check: pending %v, %v; want whole", fr.Pending, err)
	}
	close(gates[20].hold)
	<-gates[260].held // Check has kept the states after 250 frames
	// A seek steps from the newest kept state, not on from where its
	// simulation was (frame 41): it does not re-run what Check re-ran.
	seekSteps.Store(0)
	if fr, err = rs.Frame(260); err != nil || fr.Pending || fr.Sides[0].At != 260 {
		t.Errorf("frame 260 during the check: pending %v, %v; want whole", fr.Pending, err)
	}
	if n := seekSteps.Load(); n != 2*11 {
		t.Errorf("frame 260, with the state after 250 frames kept, stepped %d frames, want 2×11", n)
	}
	close(gates[260].hold)
	<-done
	if got := checkSteps.Load(); got != 300 {
		t.Errorf("Check stepped %d frames, want 300 (the two files re-run once)", got)
	}
	seekSteps.Store(0)
	if fr, err = rs.Frame(299); err != nil || fr.Pending || fr.Sides[0].At != 299 || fr.Sides[1].At != 299 {
		t.Fatalf("frame 299 after the check: pending %v, %v; want whole", fr.Pending, err)
	}
	if n := seekSteps.Load(); n != 2*39 {
		t.Errorf("frame 299 after the check stepped %d frames, want 2×39 (on from frame 260)", n)
	}
	seekSteps.Store(0)
	if _, err = rs.Frame(3); err != nil || seekSteps.Load() != 2*4 {
		t.Errorf("frame 3 after the check stepped %d frames (%v), want 2×4 (from the start)", seekSteps.Load(), err)
	}
	info := rs.Info()
	if !info.Checked || info.Files[0].CheckedTo != 300 || info.Files[1].CheckedTo != 300 {
		t.Errorf("checked %v, files to frames %d and %d; want true, 300", info.Checked, info.Files[0].CheckedTo, info.Files[1].CheckedTo)
	}
	if !info.Files[0].Reproduces || info.Files[1].Reproduces || info.Files[1].RerunFrame != 100 || info.Files[1].RerunSection != "units" {
		t.Errorf("files %+v; want file 1 alone not to reproduce its hashes, from frame 100, section units", info.Files)
	}
}

// countedSim counts its steps; before stepping a frame that has a gate
// it closes the gate's held and waits until its hold is closed.
type countedSim struct {
	*rts.Sim
	steps *atomic.Int64
	gates map[bucket.Frame]gate
}

type gate struct{ hold, held chan struct{} }

func newGate() gate { return gate{make(chan struct{}), make(chan struct{})} }

func (s *countedSim) Step(f bucket.Frame, cmds []bucket.Command) {
	if g, ok := s.gates[f]; ok {
		close(g.held)
		<-g.hold
	}
	s.steps.Add(1)
	s.Sim.Step(f, cmds)
}
