package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/internal/chart"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

func TestBenchBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--peers", "1"}, "--peers 1"},
		{[]string{"--frames", "-5"}, "--frames -5"},
		{[]string{"--profiles", "lan,moon"}, "unknown profile"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		usageError(t, tt.want, append([]string{"bench"}, tt.args...)...)
	}
	if code, _, errs := runCLI(t, "bench", "-h"); code != 0 || !strings.Contains(errs, "--quick") {
		t.Errorf("bench -h: exit %d, %q", code, errs)
	}
}

func TestBenchFrameCount(t *testing.T) {
	for _, tt := range []struct {
		f    benchFlags
		want int
	}{
		{benchFlags{}, benchFullFrames},
		{benchFlags{quick: true}, benchQuickFrames},
		{benchFlags{quick: true, frames: 77}, 77},
	} {
		if got := tt.f.frameCount(); got != tt.want {
			t.Errorf("%+v: %d frames, want %d", tt.f, got, tt.want)
		}
	}
}

// TestBenchTiny runs a tiny bench (two profiles, a few frames) and checks
// the JSON, the markdown and the plots.
func TestBenchTiny(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "bench", "--frames", "100", "--profiles", "lan,bad", "--json", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res struct {
		Runs   []map[string]any `json:"runs"`
		Netlib []map[string]any `json:"netlib"`
		Goals  []map[string]any `json:"goals"`
		Plots  []string         `json:"plots"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not the JSON object: %v", err)
	}
	if len(res.Runs) != 2*len(benchTransports)*len(benchPolicies) {
		t.Fatalf("%d runs, want %d", len(res.Runs), 2*len(benchTransports)*len(benchPolicies))
	}
	seen := map[string]bool{}
	for _, r := range res.Runs {
		for _, k := range []string{"policy", "transport", "profile", "peers", "latency_ms", "oneway_ms", "stall_rate",
			"bytes_per_peer_per_s", "identical", "desyncs", "over_floor_ms", "stalled_frames", "stalled_ms", "stall_ms_per_min", "frames"} {
			if _, ok := r[k]; !ok {
				t.Errorf("run %v %v %v: missing %q", r["profile"], r["transport"], r["policy"], k)
			}
		}
		for _, k := range []string{"p50", "p95", "p99", "max"} {
			if _, ok := r["latency_ms"].(map[string]any)[k]; !ok {
				t.Errorf("latency_ms lacks %q", k)
			}
		}
		if (r["transport"] == "datagram" && r["identical"] != true) || r["frames"] != float64(100) {
			t.Errorf("run %v", r)
		}
		seen[r["profile"].(string)+"/"+r["transport"].(string)+"/"+r["policy"].(string)] = true
	}
	if !seen["bad/stream/adaptive"] || !seen["lan/datagram/fixed:4"] {
		t.Errorf("combinations missing: %v", seen)
	}
	if len(res.Netlib) != 2 {
		t.Fatalf("netlib %v", res.Netlib)
	}
	for _, n := range res.Netlib {
		for _, k := range []string{"transport", "samples", "within_100", "within_200", "within_300", "delay_ms", "latency_ms"} {
			if _, ok := n[k]; !ok {
				t.Errorf("netlib run lacks %q", k)
			}
		}
		if n["samples"].(float64) < 100 {
			t.Errorf("netlib run measured %v deliveries", n["samples"])
		}
	}
	if len(res.Goals) == 0 || !strings.Contains(out, "### Goals") || !strings.Contains(out, "| bad | stream | adaptive | 4 | ") {
		t.Errorf("markdown or goals missing:\n%s", out)
	}
	if !strings.Contains(errs, "[18/18]") {
		t.Errorf("no progress on stderr:\n%s", errs)
	}
	want := []string{"bench-cdf-lan.svg", "bench-cdf-bad.svg", "bench-stalls.svg", "bench-bandwidth.svg", "bench-netlib.svg"}
	if len(res.Plots) != len(want) {
		t.Fatalf("plots %v, want %v", res.Plots, want)
	}
	for _, name := range want {
		checkSVG(t, filepath.Join(dir, name))
	}
}

// checkSVG checks that path is well-formed XML with an svg root.
func checkSVG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := chart.CheckSVG(f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestJudgeGoals(t *testing.T) {
	mk := func(profile, transport, policy string, p95, stall float64, stalled int64, up float64, peers int) *benchRun {
		r := &benchRun{Policy: policy, Transport: transport, report: &report{Profile: profile, Peers: peers, StallRate: stall, Identical: true}, StalledFrames: stalled}
		r.Latency.P95, r.Bytes.Up = p95, up
		return r
	}
	runs := []*benchRun{
		mk("bad", "datagram", "adaptive", 300, 0.01, 10, 5000, 4),
		mk("bad", "datagram", "aoe", 400, 0.01, 10, 5000, 4),
		mk("bad", "datagram", "bucket-rtt", 250, 0.5, 500, 5000, 4),
		mk("bad", "stream", "adaptive", 900, 0.05, 100, 5000, 4),
		mk("modem", "datagram", "adaptive", 600, 0.03, 30, 3597, 8),
		mk("modem", "stream", "adaptive", 600, 0.03, 30, 3700, 8),
	}
	got := map[string]bool{}
	for _, g := range judgeGoals(runs) {
		got[g.Goal] = g.Met
	}
	want := map[string]bool{
		"bad: adaptive p95 below aoe's at an equal or lower stall rate (datagram)":        true,
		"bad: adaptive p95 below bucket-rtt's at an equal or lower stall rate (datagram)": false,
		"bad: datagram stalls ≥10× fewer frames than stream (adaptive)":                   true,
		"modem, 8 members: adaptive over datagram within the 28.8 kbit/s budget":          true,
		"modem, 8 members: adaptive over stream within the 28.8 kbit/s budget":            false,
	}
	for k, v := range want {
		if met, ok := got[k]; !ok || met != v {
			t.Errorf("%q: met %v (judged: %v), want %v", k, met, ok, v)
		}
	}
}

func TestSimTransport(t *testing.T) {
	code, out, errs := runCLI(t, "sim", "--peers", "3", "--frames", "200", "--sim", "null", "--profile", "bad", "--transport", "stream", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if m := lastJSON(t, out); m["identical"] != true {
		t.Fatalf("not identical over the stream: %v", m)
	}
	usageError(t, `--transport "pigeon"`, "sim", "--transport", "pigeon")
	if d := (&runFlags{transport: "stream", frameMS: 50}).coreConfig(netsim.Profile{}).DropTimeout; d != lockstep.ReliableDropTimeout {
		t.Errorf("drop timeout over the stream %v, want %v", d, lockstep.ReliableDropTimeout)
	}
}
