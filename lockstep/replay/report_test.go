package replay_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	os.WriteFile(newer, []byte(strings.Replace(string(b), `"version": 1`, `"version": 2`, 1)), 0o644)
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
