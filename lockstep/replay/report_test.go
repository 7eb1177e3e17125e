package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
)

// TestReportRoundTrip: a report written is read back as it was; a file
// that is not a report, or a newer one, is refused.
func TestReportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	h := replay.Header{Session: []byte{1, 0}, SimName: "rts", SimVersion: "1", Members: []string{"a", "b", "c"}, Self: 2}
	e := lockstep.Event{Type: lockstep.EventDesync, Frame: 140, Member: 2, With: 0, Section: "units", Detail: "states diverged",
		Ours:   []lockstep.Section{{Name: "map", Hash: 1}, {Name: "units", Hash: 2}},
		Theirs: []lockstep.Section{{Name: "map", Hash: 1}, {Name: "units", Hash: 3}}}
	rec := []byte("PHXREPLAY and the rest")
	path, err := replay.WriteReport(dir, replay.NewReport(h, e, rec))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(path) != "desync-member-2-frame-140.json" {
		t.Errorf("written as %s", path)
	}
	b, err := os.ReadFile(path)
	if err != nil || !replay.IsReport(b) {
		t.Fatalf("IsReport: %v", err)
	}
	r, err := replay.ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != replay.EngineVersion || r.SimName != "rts" || r.Session != "0100" || r.Self != 2 || r.Frame != 140 ||
		r.Section != "units" || r.With != 0 || !bytes.Equal(r.Replay, rec) || len(r.Ours) != 2 ||
		r.Ours[1].Hash != "0000000000000002" || r.Theirs[1].Hash != "0000000000000003" {
		t.Errorf("read back %+v", r)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the directory, want the report alone", len(entries))
	}

	newer := filepath.Join(dir, "newer.json")
	os.WriteFile(newer, []byte(strings.Replace(string(b), `"version": 2`, `"version": 3`, 1)), 0o644)
	if _, err := replay.ReadReport(newer); !errors.Is(err, replay.ErrVersion) {
		t.Errorf("a newer report: %v, want ErrVersion", err)
	}
	other := filepath.Join(dir, "other.json")
	os.WriteFile(other, []byte(`{"format": "something else"}`), 0o644)
	if _, err := replay.ReadReport(other); !errors.Is(err, replay.ErrMalformed) {
		t.Errorf("another JSON file: %v, want ErrMalformed", err)
	}
	if replay.IsReport([]byte("PHXREPLAY")) {
		t.Error("a replay taken for a report")
	}
}

// ringSim is a lockstep.Snapshotter whose state is one number.
type ringSim struct{ n uint64 }

func (s *ringSim) AppendSnapshot(dst []byte) []byte { return append(dst, byte(s.n), byte(s.n>>8)) }
func (s *ringSim) Restore(data []byte) error        { s.n = uint64(data[0]) | uint64(data[1])<<8; return nil }

// TestStateRingReport: a ring keeps the last frames' states; a report
// takes, from each side's ring, the states at its last agreed checkpoint
// and divergent frame, and keeps them through a round trip.
func TestStateRingReport(t *testing.T) {
	ours, theirs := replay.NewStateRing(16), replay.NewStateRing(16)
	for f := range bucket.Frame(50) {
		ours.Keep(f, &ringSim{uint64(f)}, uint64(f))
		theirs.Keep(f, &ringSim{uint64(f) + 1000*uint64(f/45)}, uint64(f)) // parts at frame 45
	}
	if _, _, ok := ours.At(33); ok {
		t.Error("frame 33 held by a ring of 16 at frame 49")
	}
	if got := replay.LastAgreedCheckpoint(45, 10); got != 40 {
		t.Errorf("last agreed checkpoint before 45: %d", got)
	}
	e := lockstep.Event{Type: lockstep.EventDesync, Frame: 45, Member: 1, With: 1}
	r := replay.NewReport(replay.Header{SimName: "ring", Members: []string{"a", "b"}}, e, nil)
	r.AddStates(0, ours)
	r.AddStates(1, theirs)
	r.AddStates(1, theirs) // again: replaced, not doubled
	path, err := replay.WriteReport(t.TempDir(), r)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = replay.ReadReport(path); err != nil {
		t.Fatal(err)
	}
	if r.Agreed != 40 || len(r.States) != 4 {
		t.Fatalf("agreed %d, %d states; want 40 and 4", r.Agreed, len(r.States))
	}
	for _, c := range []struct {
		member int
		frame  int64
		n      uint64
	}{{0, 40, 40}, {0, 45, 45}, {1, 40, 40}, {1, 45, 1045}} {
		st, ok := r.StateOf(c.member, c.frame)
		var s ringSim
		if !ok || s.Restore(st.Data) != nil || s.n != c.n || st.Hash != fmt.Sprintf("%016x", c.frame) {
			t.Errorf("member %d at frame %d: %+v (held %v), restores to %d; want %d", c.member, c.frame, st, ok, s.n, c.n)
		}
	}
}
