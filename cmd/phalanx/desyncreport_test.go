package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/view"
)

// checkReport reads a desync report and checks that it names the frame
// and section, holds both sides' section hashes differing in that section
// only, and a replay that reaches the frame.
func checkReport(t *testing.T, path string, frame int64, section string) replay.Report {
	t.Helper()
	r, err := replay.ReadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.Frame != frame || r.Section != section || r.SimName != "rts" || r.Engine == "" || len(r.Ours) == 0 || len(r.Ours) != len(r.Theirs) {
		t.Fatalf("%s: %+v", path, r)
	}
	for i := range r.Ours {
		if (r.Ours[i].Hash != r.Theirs[i].Hash) != (r.Ours[i].Name == section) {
			t.Errorf("%s: section %s: ours %s, theirs %s", path, r.Ours[i].Name, r.Ours[i].Hash, r.Theirs[i].Hash)
		}
	}
	rd, err := replay.NewReader(bytes.NewReader(r.Replay))
	if err != nil {
		t.Fatalf("%s: its replay: %v", path, err)
	}
	last := int64(-1)
	for {
		rec, err := rd.Next()
		if err != nil {
			break // it ends without a trailer
		}
		if rec.Kind == replay.KindFrame {
			last = int64(rec.Frame)
		}
	}
	if last < frame {
		t.Errorf("%s: its replay ends at frame %d, before the divergent frame %d", path, last, frame)
	}
	return r
}

// TestSimDesyncReports: with --record, every member of a perturbed run
// writes a desync report beside its replay; replay view opens one at its
// divergence.
func TestSimDesyncReports(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := runCLI(t, "sim", "--perturb", "1@100", "--record", dir, "--frames", "300")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (diverged): %s", code, errs)
	}
	for slot := range 4 {
		path := filepath.Join(dir, "desync-member-"+string(rune('0'+slot))+"-frame-100.json")
		if !strings.Contains(errs, path) {
			t.Errorf("stderr does not name %s:\n%s", path, errs)
		}
		r := checkReport(t, path, 100, "units")
		if r.Self != slot || r.Member != 1 || r.WorldFrame <= 100 || len(r.World) == 0 || len(r.State) == 0 {
			t.Errorf("%s: written by %d naming %d, world after %d frames (%d bytes); want %d naming 1, a world past frame 100",
				path, r.Self, r.Member, r.WorldFrame, len(r.World), slot)
		}
	}

	// One report alone opens at its divergence.
	url := startServing(t, "replay", "view", "--linger", "1m", filepath.Join(dir, "desync-member-0-frame-100.json"))
	var info view.ReplaysInfo
	getJSON(t, url+"api/replay", &info)
	if d := info.Divergence; d == nil || d.Frame != 100 || d.Section != "units" || len(info.Reports) != 1 || len(info.Files) != 1 {
		t.Fatalf("replay view of a report: %+v", info)
	}
	// Both sides' reports: the perturbed member's own world differs from
	// the one its commands give, in the unit whose hit points it altered;
	// the other member's does not.
	url = startServing(t, "replay", "view", "--linger", "1m",
		filepath.Join(dir, "desync-member-0-frame-100.json"), filepath.Join(dir, "desync-member-1-frame-100.json"))
	getJSON(t, url+"api/replay", &info)
	at := info.Files[1].WorldFrame
	if at < 100 {
		t.Fatalf("member 1's world at frame %d", at)
	}
	var fr view.ReplayFrame
	getJSON(t, fmt.Sprintf("%sapi/replay/frame?f=%d", url, at), &fr)
	if len(fr.Sides) != 2 || fr.Sides[1].Recorded == nil {
		t.Fatalf("frame %d: no recorded world: %+v", at, fr.Sides)
	}
	if d := fr.Sides[1].RecordedDiff; len(d) != 1 || d[0].What != "hp" {
		t.Errorf("member 1's recorded world differs by %+v, want one unit's hit points", d)
	}
	if info.Files[0].WorldFrame == at && len(fr.Sides[0].RecordedDiff) != 0 {
		t.Errorf("member 0's recorded world differs by %+v, want nothing", fr.Sides[0].RecordedDiff)
	}
}

// TestMeshDesyncReports: over real QUIC, a member perturbed after frame
// 60 makes each of two members write a report beside its replay.
func TestMeshDesyncReports(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a 10 s session of two member processes")
	}
	t.Setenv("PHALANX_TEST_MEMBER", "1")
	dir := t.TempDir()
	code, _, errs := runCLI(t, "mesh", "--peers", "2", "--frames", "200", "--perturb", "1@60", "--record", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (diverged): %s", code, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "desync-member-*-frame-61.json"))
	if len(files) != 2 {
		t.Fatalf("reports %v, want one per member at frame 61\n%s", files, errs)
	}
	for _, f := range files {
		checkReport(t, f, 61, "units")
	}
}
