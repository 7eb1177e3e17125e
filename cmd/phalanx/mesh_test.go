package main

import (
	"os"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for the phalanx binary: phalanx
// mesh starts its member processes from its own executable, which in a test
// is this binary, so with PHALANX_TEST_MEMBER set it runs the command-line
// arguments instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("PHALANX_TEST_MEMBER") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// meshJSON runs phalanx mesh with args and --json, its members processes
// of this test binary, and returns the JSON object it printed last and its
// output, failing the test unless it exits 0. It is skipped in -short
// mode, where starting what says would take too long.
func meshJSON(t *testing.T, what string, args ...string) (m map[string]any, out, errs string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts " + what)
	}
	t.Setenv("PHALANX_TEST_MEMBER", "1")
	code, out, errs := runCLI(t, append(append([]string{"mesh"}, args...), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	return lastJSON(t, out), out, errs
}

// TestMeshKilledMember: four member processes play over QUIC on loopback;
// one is killed mid-game; the survivors drop it with agreement and end
// identical.
func TestMeshKilledMember(t *testing.T) {
	m, _, errs := meshJSON(t, "four processes for a 15 s session", "--peers", "4", "--frames", "300", "--profile", "lan", "--sim", "null", "--kill", "1@80")
	if m["identical"] != true || len(m["survivors"].([]any)) != 3 {
		t.Fatalf("identical %v, survivors %v", m["identical"], m["survivors"])
	}
	var drops []map[string]any
	for _, e := range m["events"].([]any) {
		ev := e.(map[string]any)
		if ev["type"] == "drop" {
			drops = append(drops, ev)
		}
	}
	if len(drops) != 3 {
		t.Fatalf("drop events %v, want one per survivor", drops)
	}
	for _, d := range drops {
		if d["member"] != drops[0]["member"] || d["last_frame"] != drops[0]["last_frame"] || d["frame"] != drops[0]["frame"] {
			t.Fatalf("survivors disagree: %v", drops)
		}
	}
	if !strings.Contains(errs, "killed member process 1") {
		t.Errorf("stderr does not say a member was killed:\n%s", errs)
	}
}

// TestMeshStream: three member processes play over QUIC streams, the
// baseline, on the bad profile and end identical; the JSON says how.
func TestMeshStream(t *testing.T) {
	m, out, _ := meshJSON(t, "three processes for a 2 s session", "--peers", "3", "--frames", "80", "--frame-ms", "25", "--profile", "bad", "--sim", "null", "--transport", "stream")
	if m["identical"] != true || m["transport"] != "stream" || len(m["survivors"].([]any)) != 3 {
		t.Fatalf("identical %v, transport %v, survivors %v", m["identical"], m["transport"], m["survivors"])
	}
	if !strings.Contains(out, "over QUIC streams") {
		t.Errorf("the output does not say the members used streams:\n%s", out)
	}
}

func TestMeshBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--peers", "0"}, {"--kill", "9@10"}, {"--profile", "nowhere"}, {"--transport", "pigeon"}, {"extra"}} {
		usageError(t, "", append([]string{"mesh"}, args...)...)
	}
	usageError(t, "need 2 --join", "peer", "--peers", "3", "--join", "/ip4/127.0.0.1/udp/1/quic-v1")
}

// TestMeshFrozenMember: one of three member processes is stopped (SIGSTOP)
// for twice the drop timeout and then continued. The other two drop it and
// finish identical; it learns it was dropped, stops and exits with
// exitStopped, and the mesh counts it as stopped, not as a failure.
func TestMeshFrozenMember(t *testing.T) {
	if !canFreeze {
		t.Skip("no SIGSTOP here to freeze a process with")
	}
	m, _, errs := meshJSON(t, "three processes for a 20 s session", "--peers", "3", "--frames", "400", "--profile", "lan", "--sim", "null", "--freeze", "1@60:10s")
	if m["identical"] != true || len(m["survivors"].([]any)) != 2 {
		t.Fatalf("identical %v, survivors %v\n%s", m["identical"], m["survivors"], errs)
	}
	var frozen map[string]any
	for _, e := range m["members"].([]any) {
		if e := e.(map[string]any); e["index"] == float64(1) {
			frozen = e
		}
	}
	if frozen == nil || frozen["exit"] != float64(exitStopped) || frozen["reason"] != "dropped" || !strings.Contains(frozen["error"].(string), "dropped at frame") {
		t.Fatalf("the frozen member ended %v, want exit %d, reason dropped", frozen, exitStopped)
	}
	if st := m["stopped"].([]any); len(st) != 1 || st[0].(map[string]any)["reason"] != "dropped" {
		t.Fatalf("stopped %v", st)
	}
	if !strings.Contains(errs, "this member stopped (dropped): lockstep: stopped: dropped at frame") {
		t.Errorf("the frozen member does not say it was dropped:\n%s", errs)
	}
}
