package replayview_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

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
