package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/lockstep/replay"
)

// record runs phalanx sim with --record and returns the replay files.
func record(t *testing.T, args ...string) []string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "replays")
	code, out, errs := runCLI(t, append([]string{"sim", "--record", dir}, args...)...)
	if code != 0 {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.phx"))
	return files
}

// contents decodes a replay: its header and every record, deep-copied.
func contents(t *testing.T, name string) (replay.Header, []replay.Record) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := replay.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var recs []replay.Record
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			return rd.Header(), recs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := rec.Clone()
		c.Trailer.Offset, c.Trailer.Chunks = 0, 0 // where members flush may differ
		recs = append(recs, c)
	}
}

// withoutStatements returns recs without the statement records, which
// differ between members: each records the statements its core held, as
// it came to hold them.
func withoutStatements(recs []replay.Record) []replay.Record {
	return slices.DeleteFunc(recs, func(r replay.Record) bool { return r.Kind == replay.KindStatement })
}

// TestSimRecordMembersAgree checks that every member of a session records
// the same buckets, hashes and end (the statements aside); their headers
// differ only in the recording member's slot.
func TestSimRecordMembersAgree(t *testing.T) {
	for _, sim := range []string{"rts", "null"} {
		files := record(t, "--peers", "3", "--frames", "300", "--profile", "bad", "--sim", sim)
		if len(files) != 3 || filepath.Base(files[2]) != "member-2.phx" {
			t.Fatalf("%s: files %v", sim, files)
		}
		h0, recs0 := contents(t, files[0])
		if h0.SimName != sim || len(h0.Members) != 3 || h0.FrameLength != 50*time.Millisecond {
			t.Errorf("%s: header %+v", sim, h0)
		}
		frames, commands := 0, 0
		for _, r := range recs0 {
			if r.Kind == replay.KindFrame {
				frames++
				commands += len(r.Commands)
			}
		}
		end := recs0[len(recs0)-1]
		if frames != 300 || commands == 0 || end.Kind != replay.KindEnd || end.Trailer.Reason != replay.EndCompleted {
			t.Errorf("%s: %d frames, %d commands, last record %+v", sim, frames, commands, end)
		}
		recs0 = withoutStatements(recs0)
		for i, name := range files[1:] {
			h, recs := contents(t, name)
			recs = withoutStatements(recs)
			if int(h.Self) != i+1 {
				t.Errorf("%s: recorded by member %d", name, h.Self)
			}
			h.Self = 0
			if !reflect.DeepEqual(h, h0) {
				t.Errorf("%s: header %+v, member 0's %+v", name, h, h0)
			}
			if !reflect.DeepEqual(recs, recs0) {
				t.Errorf("%s: records differ from member 0's", name)
			}
		}
	}
}

func TestReplayVerify(t *testing.T) {
	files := record(t, "--peers", "2", "--frames", "200", "--profile", "bad")
	code, out, errs := runCLI(t, append([]string{"replay", "verify"}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ok "+files[0]+": 200 frames, final hash ") {
		t.Errorf("output %q", out)
	}
	if errs != "" {
		t.Errorf("stderr is not a terminal, yet it shows %q", errs)
	}

	// A cut copy and a copy with a flipped byte fail; the good one still
	// passes; exit 1.
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cut, flipped := filepath.Join(dir, "cut.phx"), filepath.Join(dir, "flipped.phx")
	os.WriteFile(cut, data[:len(data)/2], 0o644)
	data[len(data)/2] ^= 0x04
	os.WriteFile(flipped, data, 0o644)
	code, out, _ = runCLI(t, "replay", "verify", cut, files[1], flipped)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"FAIL " + cut + ": replay: truncated: the file ends at byte",
		"last good frame",
		"ok " + files[1],
		"FAIL " + flipped + ": replay: checksum mismatch: chunk",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestReplayVerifyRefusesOtherSimulation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chess.phx")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := replay.NewWriter(f, replay.Header{FrameLength: time.Second, SimName: "chess", SimVersion: "2", Members: []string{"a", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	w.Close(-1, 0, replay.EndCompleted)
	f.Close()
	code, out, _ := runCLI(t, "replay", "verify", path)
	if code != 1 || !strings.Contains(out, `simulation mismatch: the replay was recorded with simulation "chess" version "2"; this build runs "rts" version "1"`) {
		t.Errorf("exit %d, output %q", code, out)
	}
}

func TestReplayInspect(t *testing.T) {
	files := record(t, "--peers", "2", "--frames", "200")
	code, out, errs := runCLI(t, "replay", "inspect", files[1])
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"Phalanx replay, format version 4",
		"simulation   rts version 1",
		"signatures   ",
		"recorded by  member 1",
		"member-0",
		"frames       200 (10s of play)",
		"checkpoints  10, 10 with sections frame, map, units, rng, players",
		"end          completed at frame 199",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	data, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.phx")
	os.WriteFile(cut, data[:len(data)-100], 0o644)
	code, out, _ = runCLI(t, "replay", "inspect", cut)
	if code != 1 || !strings.Contains(out, "damaged      readable up to frame") || !strings.Contains(out, "trailer      none: replay: truncated") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	code, out, _ = runCLI(t, "replay", "inspect", "replay.go")
	if code != 1 || !strings.Contains(out, "not a Phalanx replay") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestReplayBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"replay"},
		{"replay", "play"},
		{"replay", "verify"},
		{"replay", "inspect"},
		{"replay", "inspect", "a", "b"},
		{"replay", "verify", "--bogus", "a"},
	} {
		usageError(t, "", args...)
	}
	if code, _, errs := runCLI(t, "replay", "-h"); code != 0 || !strings.Contains(errs, "phalanx replay verify [--signed] FILE...") {
		t.Errorf("replay -h: exit %d, %q", code, errs)
	}
	// --record into a directory that cannot be created.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if code, _, errs := runCLI(t, "sim", "--frames", "10", "--record", filepath.Join(file, "dir")); code != 1 || !strings.Contains(errs, "--record") {
		t.Errorf("--record under a file: exit %d, %q", code, errs)
	}
}

// TestSimRecordFaults records a run in which member 2 is killed and member
// 1's state is perturbed: the survivors' replays record the drop and
// verify; the killed member's ends early and verifies up to there; the
// perturbed member's fails at the first checkpoint after the perturbation.
func TestSimRecordFaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "replays")
	code, out, errs := runCLI(t, "sim", "--peers", "4", "--frames", "400", "--kill", "2@100", "--perturb", "1@150", "--record", dir)
	if code != 1 || !strings.Contains(out, "DIVERGED") {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.phx"))
	code, out, _ = runCLI(t, append([]string{"replay", "verify"}, files...)...)
	if code != 1 {
		t.Errorf("verify: exit %d", code)
	}
	for _, want := range []string{
		"ok " + files[0] + ": 400 frames",
		"FAIL " + files[1] + `: replay: diverged: at frame 160 the simulation's state hash is`,
		`first divergent section "units" (the checkpoint of frame 140 matched)`,
		"ok " + files[3] + ": 400 frames",
		"(closed early)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = runCLI(t, "replay", "inspect", files[2])
	if !strings.Contains(out, "end          closed early at frame") {
		t.Errorf("killed member's replay:\n%s", out)
	}
	_, out, _ = runCLI(t, "replay", "inspect", files[0])
	if !strings.Contains(out, "membership   drop of member 2 at frame") {
		t.Errorf("survivor's replay does not record the drop:\n%s", out)
	}
}

// TestReplayVerifyRejectsAlteredCommand rewrites a recorded replay with one
// command of another member altered, checksums and all, as a forger would:
// replay verify fails it because that member's signature no longer holds,
// naming the member; the untouched replays verify with their signatures.
func TestReplayVerifyRejectsAlteredCommand(t *testing.T) {
	files := record(t, "--peers", "3", "--frames", "300", "--profile", "broadband")
	h, recs := contents(t, files[0])
	altered := -1
	for i := range recs {
		r := &recs[i]
		if r.Kind != replay.KindFrame || r.Frame < 100 || altered >= 0 {
			continue
		}
		for j, c := range r.Commands {
			if c.Slot == 1 && len(c.Payload) > 0 {
				r.Commands[j].Payload[0] ^= 0x01
				altered = int(r.Frame)
				break
			}
		}
	}
	if altered < 0 {
		t.Fatal("no command of member 1 after frame 100")
	}
	forged := filepath.Join(t.TempDir(), "forged.phx")
	writeReplay(t, forged, h, recs)
	code, out, errs := runCLI(t, "replay", "verify", "--signed", files[1], forged)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"ok " + files[1] + ": 300 frames",
		"signatures hold: ",
		"FAIL " + forged + ": replay: signature mismatch: member 1's statement",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("command of member 1 on frame %d altered:\n%s", altered, out)
}

// writeReplay writes a replay of header h and records recs.
func writeReplay(t *testing.T, name string, h replay.Header, recs []replay.Record) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := replay.NewWriter(f, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSimRecordSpectators: spectators' admissions are in the replays, each
// in the file of the member its tree hangs from, at the frame they arrive,
// and replay verify still proves every file.
func TestSimRecordSpectators(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "replays")
	code, out, errs := runCLI(t, "sim", "--peers", "3", "--frames", "300", "--spectators", "8", "--spectators-at", "100", "--record", dir)
	if code != 0 {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.phx"))
	code, out, _ = runCLI(t, append([]string{"replay", "verify"}, files...)...)
	if code != 0 || strings.Count(out, "ok ") != 3 {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	spectators := 0
	for _, f := range files {
		_, out, _ = runCLI(t, "replay", "inspect", f)
		spectators += strings.Count(out, "membership   spectator served by member")
		// They arrive at 5 s, frame 100's time, after the members stepped
		// frame 100 at that same instant: from frame 101 (the run is the
		// same for every run of the seed).
		if n := strings.Count(out, "from frame 101: spectator-"); n != strings.Count(out, ": spectator-") {
			t.Errorf("%s: %d of the spectators from frame 101:\n%s", f, n, out)
		}
	}
	if spectators != 8 {
		t.Fatalf("%d spectators recorded, want 8", spectators)
	}
}
