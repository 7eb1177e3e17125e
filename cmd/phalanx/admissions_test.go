package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSimRejoinAndLateJoin runs phalanx sim with a killed member that
// rejoins and a late joiner, checks the admissions of the JSON contract,
// and verifies a survivor's replay, admissions included.
func TestSimRejoinAndLateJoin(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "sim", "--peers", "4", "--slots", "5", "--frames", "1200", "--profile", "broadband",
		"--kill", "2@200", "--rejoin", "2@450", "--late", "4@500", "--record", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	m := lastJSON(t, out)
	if m["identical"] != true {
		t.Fatalf("not identical: %s", out)
	}
	ads, _ := m["admissions"].([]any)
	if len(ads) != 2 {
		t.Fatalf("admissions %v, want two", m["admissions"])
	}
	for i, want := range []struct {
		slot float64
		kind string
	}{{2, "rejoin"}, {4, "late"}} {
		a := ads[i].(map[string]any)
		if a["slot"] != want.slot || a["kind"] != want.kind || a["admitted_frame"].(float64) < a["requested_frame"].(float64)-40 ||
			a["catchup_frames"].(float64) <= 0 || a["bytes_received"].(float64) <= 0 || a["catchup_ms"].(float64) <= 0 {
			t.Fatalf("admission %d: %v", i, a)
		}
		if by := a["reported_by"].([]any); len(by) < 4 {
			t.Fatalf("admission %d reported by %v", i, by)
		}
		for _, k := range []string{"requested_frame", "admitted_frame", "catchup_frames", "catchup_ms", "bytes_received"} {
			if _, ok := a[k]; !ok {
				t.Fatalf("admission %d lacks %q: %v", i, k, a)
			}
		}
	}
	if got := m["survivors"].([]any); len(got) != 5 {
		t.Fatalf("survivors %v", got)
	}
	code, vout, verrs := runCLI(t, "replay", "verify", filepath.Join(dir, "member-0.phx"))
	if code != 0 || !strings.Contains(vout, "ok ") {
		t.Fatalf("replay verify: exit %d\n%s%s", code, vout, verrs)
	}
	for _, bad := range [][]string{
		{"--rejoin", "2@450"},                    // never killed
		{"--kill", "2@500", "--rejoin", "2@450"}, // killed after
		{"--late", "3@100"},                      // not open
		{"--slots", "2"},                         // fewer than the members
	} {
		usageError(t, "", append([]string{"sim", "--peers", "4", "--frames", "600"}, bad...)...)
	}
}

// TestSimSpectators: twenty spectators two seconds behind all end on the
// members' final hash, listed in the JSON of the contract.
func TestSimSpectators(t *testing.T) {
	code, out, errs := runCLI(t, "sim", "--peers", "3", "--frames", "400", "--sim", "null", "--spectators", "20", "--spectator-delay", "2s", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	m := lastJSON(t, out)
	specs, _ := m["spectators"].([]any)
	if m["identical"] != true || len(specs) != 20 {
		t.Fatalf("identical %v, %d spectators", m["identical"], len(specs))
	}
	for _, s := range specs {
		s := s.(map[string]any)
		if s["final_hash"] != m["final_hash"] || s["delay_frames"] != 40.0 {
			t.Fatalf("spectator %v, members' final hash %v", s, m["final_hash"])
		}
	}
}
