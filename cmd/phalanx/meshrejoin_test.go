package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMeshRejoin: three member processes play the example RTS over QUIC on
// loopback; one is killed with SIGKILL, and a new process with its key
// comes back, is admitted at a frame every member reports, catches up
// from a checkpoint the survivors vouched for, and ends on the same final
// hash as the survivors. A spectator (phalanx watch) served by the killed
// member and another watches the whole session and ends on that hash too.
func TestMeshRejoin(t *testing.T) {
	m, _, errs := meshJSON(t, "four processes for a 25 s session", "--peers", "3", "--frames", "480", "--frame-ms", "40", "--profile", "lan",
		"--kill", "1@60", "--rejoin", "1@190", "--spectators", "1")
	if m["identical"] != true || len(m["survivors"].([]any)) != 3 {
		t.Fatalf("identical %v, survivors %v (the one that came back included)\n%s", m["identical"], m["survivors"], errs)
	}
	adms, _ := m["admissions"].([]any)
	if len(adms) != 1 {
		t.Fatalf("admissions %v, want one", m["admissions"])
	}
	a := adms[0].(map[string]any)
	if a["kind"] != "rejoin" || a["requested_frame"] != 190.0 || a["admitted_frame"].(float64) < 190 ||
		a["snapshot_verified"] != true || a["bytes_received"].(float64) <= 0 || len(a["reported_by"].([]any)) != 3 {
		t.Fatalf("admission %v", a)
	}
	specs, _ := m["spectators"].([]any)
	if len(specs) != 1 || specs[0].(map[string]any)["final_hash"] != m["final_hash"] || specs[0].(map[string]any)["stepped"] != 479.0 {
		t.Fatalf("spectators %v, final hash %v", m["spectators"], m["final_hash"])
	}
	if !strings.Contains(errs, "comes back as process 4 with the same key") {
		t.Errorf("stderr does not say the member came back:\n%s", errs)
	}
}

// TestMeshLate: three member processes start a session of four slots;
// once one stepped frame 100, a fourth process with a new identity joins
// late into the open slot, is admitted at a frame every member reports,
// catches up from a vouched checkpoint and ends on the members' final
// hash.
func TestMeshLate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "replays")
	// A spectator watches too: a session with open slots still serves
	// spectators (they ask as spectators, not as joiners).
	m, _, errs := meshJSON(t, "five processes for a 19 s session", "--peers", "3", "--frames", "480", "--frame-ms", "40", "--profile", "lan",
		"--slots", "4", "--late", "3@100", "--checkpoint-every", "50", "--record", dir, "--spectators", "1")
	if m["identical"] != true || len(m["survivors"].([]any)) != 4 || len(m["events"].([]any)) != 0 {
		t.Fatalf("identical %v, survivors %v (the late joiner included), events %v\n%s", m["identical"], m["survivors"], m["events"], errs)
	}
	if sp, _ := m["spectators"].([]any); len(sp) != 1 || sp[0].(map[string]any)["final_hash"] != m["final_hash"] {
		t.Fatalf("spectators %v, want one on the final hash %v\n%s", m["spectators"], m["final_hash"], errs)
	}
	adms, _ := m["admissions"].([]any)
	if len(adms) != 1 {
		t.Fatalf("admissions %v, want one", m["admissions"])
	}
	a := adms[0].(map[string]any)
	if a["kind"] != "late" || a["slot"] != 3.0 || a["requested_frame"] != 100.0 || a["admitted_frame"].(float64) < 100 ||
		a["snapshot_verified"] != true || a["bytes_received"].(float64) <= 0 || len(a["reported_by"].([]any)) != 4 {
		t.Fatalf("admission %v", a)
	}
	// The members' replays name who joined, verify, and hold the late
	// joiner's signed commands: it played.
	files, _ := filepath.Glob(filepath.Join(dir, "*.phx"))
	code, out, _ := runCLI(t, append([]string{"replay", "verify"}, files...)...)
	if code != 0 || len(files) != 3 || strings.Count(out, "vouching for the commands of 4 of 4 members") != 3 {
		t.Fatalf("replay verify of %d files: exit %d\n%s", len(files), code, out)
	}
}

func TestWatchAndRejoinBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"watch"}, {"watch", "--join", "nowhere"}, {"watch", "--join", "/ip4/127.0.0.1/udp/1/quic-v1", "--delay", "-1s"},
		{"mesh", "--rejoin", "1@100"}, {"mesh", "--kill", "1@200", "--rejoin", "1@100"}, {"mesh", "--spectators", "-1"},
		{"mesh", "--slots", "2"}, {"mesh", "--slots", "5", "--late", "2@100"}, {"mesh", "--late", "4@100"},
		{"peer", "--late"}, {"peer", "--slots", "1"},
		{"peer", "--rejoin", "--join", "/ip4/127.0.0.1/udp/1/quic-v1/p2p/12D3KooWQqaFagYvzDqZykmetymSERo8HkyuR6DPRmaduB73QYhm"},
	} {
		if code, _, errs := runCLI(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

// TestMeshWatchTree: two members serve one spectator each; of three
// spectators started together, those the members have no room for follow
// a spectator that serves, and all end on the members' final hash.
func TestMeshWatchTree(t *testing.T) {
	m, _, errs := meshJSON(t, "five processes for a 12 s session", "--peers", "2", "--frames", "300", "--frame-ms", "40", "--profile", "lan",
		"--spectators", "3", "--spectators-per-member", "1", "--spectators-at", "50")
	specs, _ := m["spectators"].([]any)
	byMembers, bySpectators := 0, 0
	for _, s := range specs {
		s := s.(map[string]any)
		if s["final_hash"] != m["final_hash"] || s["stepped"] != 299.0 {
			t.Errorf("spectator %v, members' final hash %v", s, m["final_hash"])
		}
		switch s["served_by"] {
		case "members":
			byMembers++
		case "spectators":
			bySpectators++
		}
	}
	if m["identical"] != true || len(specs) != 3 || byMembers > 2 || bySpectators < 1 {
		t.Fatalf("identical %v; %d spectators, %d served by members, %d by spectators\n%s", m["identical"], len(specs), byMembers, bySpectators, errs)
	}
}
