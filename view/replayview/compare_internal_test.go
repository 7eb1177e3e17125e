package replayview

import (
	"fmt"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/view"
)

// TestCompareInputs: buckets that differ before any recorded hash does
// make the divergence one of inputs, at that frame.
func TestCompareInputs(t *testing.T) {
	mk := func(payload byte) *replayFile {
		f := &replayFile{name: "x", checks: map[bucket.Frame]lockstep.Section{}, secs: map[bucket.Frame][]lockstep.Section{}}
		for fr := range 40 {
			var cmds []bucket.Command
			if fr == 25 {
				cmds = []bucket.Command{{Slot: 1, Seq: 0, Payload: []byte{payload}}}
			}
			f.buckets = append(f.buckets, cmds)
		}
		f.checks[20] = lockstep.Section{Hash: 7}
		f.checks[30] = lockstep.Section{Hash: uint64(payload)}
		return f
	}
	if d := compare(mk(1), mk(1), 0, 1); d != nil {
		t.Fatalf("identical replays: %+v", d)
	}
	d := compare(mk(1), mk(2), 0, 1)
	if d == nil || d.Frame != 25 || d.InputsFrame != 25 || d.LastAgreed != 20 {
		t.Fatalf("divergence %+v, want inputs from frame 25, checkpoint 20 agreed", d)
	}
}

// TestDiffScenes: units on one side only, moved, and hurt are told apart.
func TestDiffScenes(t *testing.T) {
	a := &view.Scene{Units: []view.Unit{{ID: 1, X: 1}, {ID: 2, X: 2, HP: 5}, {ID: 3}, {ID: 4}}}
	b := &view.Scene{Units: []view.Unit{{ID: 1, X: 1.5}, {ID: 2, X: 2, HP: 4}, {ID: 4}, {ID: 5}}}
	got := map[uint32]string{}
	for _, d := range diffScenes(a, b) {
		got[d.ID] = d.What
	}
	want := map[uint32]string{1: "moved", 2: "hp", 3: "missing here", 5: "only here"}
	if len(got) != len(want) {
		t.Fatalf("diff %v, want %v", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("unit %d: %q, want %q", id, got[id], w)
		}
	}
}

// TestSameRun: files are re-run as one only with the same header but for
// Self, and buckets of which one's are the start of the other's.
func TestSameRun(t *testing.T) {
	mk := func(self bucket.Slot, frames int, payload byte, config string) *replayFile {
		f := &replayFile{header: replay.Header{SimName: "rts", SimConfig: []byte(config), Members: []string{"a", "b"}, Self: self}}
		for fr := range frames {
			var cmds []bucket.Command
			if fr == 5 {
				cmds = []bucket.Command{{Slot: 1, Frame: 5, Payload: []byte{payload}}}
			}
			f.buckets = append(f.buckets, cmds)
		}
		return f
	}
	a := mk(0, 20, 1, "x")
	for _, c := range []struct {
		b    *replayFile
		want bool
	}{
		{mk(1, 20, 1, "x"), true},  // another member's
		{mk(1, 8, 1, "x"), true},   // shorter: a report's replay
		{mk(1, 20, 2, "x"), false}, // the inputs diverged
		{mk(1, 3, 2, "x"), true},   // ... after it ends
		{mk(1, 20, 1, "y"), false}, // another game
	} {
		if got := sameRun(a, c.b); got != c.want {
			t.Errorf("sameRun with %d frames, payload %d, config %s: %v, want %v", len(c.b.buckets), c.b.buckets[min(5, len(c.b.buckets)-1)], c.b.header.SimConfig, got, c.want)
		}
	}
	rs := &Replays{files: []*replayFile{mk(0, 8, 1, "x"), mk(1, 20, 2, "x"), mk(2, 20, 1, "x"), mk(3, 20, 1, "y")}}
	if got := fmt.Sprint(rs.runs()); got != "[[2 0] [1] [3]]" {
		t.Errorf("runs %s, want [[2 0] [1] [3]]: the longest of a run first", got)
	}
}
