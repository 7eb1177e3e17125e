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
// only, a replay that reaches the frame, and both sides' states at the
// last agreed checkpoint (equal) and at the frame (different: member 1 was
// perturbed, and the report pairs it with another).
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
	if r.Agreed != (frame-1)/10*10 || len(r.States) != 4 {
		t.Fatalf("%s: last agreed checkpoint %d, %d states; want %d and both sides' at it and at %d", path, r.Agreed, len(r.States), (frame-1)/10*10, frame)
	}
	for _, f := range []int64{r.Agreed, frame} {
		a, ok1 := r.StateOf(r.Self, f)
		b, ok2 := r.StateOf(r.With, f)
		if !ok1 || !ok2 || len(a.Data) == 0 || (a.Hash == b.Hash) != (f == r.Agreed) {
			t.Errorf("%s: at frame %d, member %d's state %v (hash %s), member %d's %v (hash %s)", path, f, r.Self, ok1, a.Hash, r.With, ok2, b.Hash)
		}
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
	// Both sides' states, restored from member 1's report: the same at
	// the last agreed checkpoint, one unit's hit points apart (section
	// units) at the divergent frame.
	for _, c := range []struct {
		frame   int64
		section string
		diff    int
	}{{90, "", 0}, {100, "units", 1}} {
		getJSON(t, fmt.Sprintf("%sapi/replay/frame?f=%d", url, c.frame), &fr)
		p := fr.Sides[1].Restored
		if p == nil || len(p.Worlds) != 2 || p.Worlds[0].Member != 1 || p.Worlds[1].Member != 0 {
			t.Fatalf("frame %d: restored %+v, want members 1 and 0", c.frame, p)
		}
		for _, w := range p.Worlds {
			if w.Error != "" || w.Scene == nil || len(w.Scene.Units) == 0 {
				t.Errorf("frame %d: member %d's state restored with error %q, scene %v", c.frame, w.Member, w.Error, w.Scene != nil)
			}
		}
		if p.Section != c.section || len(p.Diff) != c.diff || (c.diff > 0 && p.Diff[0].What != "hp") {
			t.Errorf("frame %d: restored states differ in section %q by %+v, want section %q, %d unit(s)' hit points", c.frame, p.Section, p.Diff, c.section, c.diff)
		}
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
