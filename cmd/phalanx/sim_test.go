package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// usageError runs the CLI with args and fails t unless it exits 2 (a
// usage error) and says so on stderr, in words containing want.
func usageError(t *testing.T, want string, args ...string) {
	t.Helper()
	if code, _, errs := runCLI(t, args...); code != 2 || errs == "" || !strings.Contains(errs, want) {
		t.Errorf("%v: exit %d, stderr %q; want 2 and %q", args, code, errs, want)
	}
}

func lastJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	return m
}

func TestSimJSONContract(t *testing.T) {
	for _, sim := range []string{"rts", "null"} {
		code, out, errs := runCLI(t, "sim", "--peers", "3", "--frames", "200", "--sim", sim, "--profile", "bad", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", sim, code, out, errs)
		}
		m := lastJSON(t, out)
		for _, k := range []string{"peers", "frames", "frame_ms", "identical", "final_hash", "desyncs", "stall_rate",
			"stalled_ms", "stall_ms_per_min", "latency_ms", "oneway_ms", "bytes_per_peer_per_s", "datagrams_per_peer_per_s"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s: missing %q", sim, k)
			}
		}
		// Stall time goes with stalled frames, and per member-minute is
		// the sum over 3 members of 200 frames of 50 ms (10 s).
		rate, stalled, perMin := m["stall_rate"].(float64), m["stalled_ms"].(float64), m["stall_ms_per_min"].(float64)
		if (rate > 0) != (stalled > 0) || math.Abs(perMin-stalled/3/(10.0/60)) > 0.01 {
			t.Errorf("%s: stall rate %v, stalled %v ms, %v ms per member-minute: inconsistent", sim, rate, stalled, perMin)
		}
		if m["identical"] != true || m["peers"] != float64(3) || m["frames"] != float64(200) {
			t.Errorf("%s: %v", sim, m)
		}
		lat := m["latency_ms"].(map[string]any)
		if lat["p50"].(float64) <= 0 || lat["p99"].(float64) < lat["p50"].(float64) {
			t.Errorf("%s: implausible latency %v", sim, lat)
		}
	}
}

func TestSimSameSeedSameHash(t *testing.T) {
	hash := func(seed string) any {
		_, out, _ := runCLI(t, "sim", "--peers", "2", "--frames", "100", "--seed", seed, "--json")
		return lastJSON(t, out)["final_hash"]
	}
	if a, b := hash("5"), hash("5"); a != b {
		t.Fatalf("same seed, different hashes: %v %v", a, b)
	}
	if a, b := hash("5"), hash("6"); a == b {
		t.Fatalf("different seeds, same hash %v", a)
	}
}

func TestSimProfileFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "flaky")
	if err := os.WriteFile(path, []byte("# two phases\n2s latency=20ms jitter=5ms\n1s latency=20ms loss=50%\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "sim", "--peers", "2", "--frames", "120", "--profile", path, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if m := lastJSON(t, out); m["profile"] != "flaky" {
		t.Errorf("profile = %v", m["profile"])
	}
}

func TestSimBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--peers", "0"}, "--peers 0"},
		{[]string{"--frames", "0"}, "--frames 0"},
		{[]string{"--profile", "nowhere"}, "unknown profile"},
		{[]string{"--sim", "chess"}, `unknown simulation "chess"`},
		{[]string{"--delay", "-1"}, "--delay -1"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		usageError(t, tt.want, append([]string{"sim"}, tt.args...)...)
	}
}

func TestUnknownCommand(t *testing.T) {
	usageError(t, "unknown command", "frobnicate")
}

func TestSimFaults(t *testing.T) {
	type ev = map[string]any
	events := func(m map[string]any) []ev {
		var out []ev
		for _, e := range m["events"].([]any) {
			out = append(out, e.(ev))
		}
		return out
	}
	t.Run("kill", func(t *testing.T) {
		code, out, errs := runCLI(t, "sim", "--peers", "4", "--frames", "400", "--sim", "null", "--kill", "1@150", "--json")
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		m := lastJSON(t, out)
		if fmt.Sprint(m["survivors"]) != "[0 2 3]" {
			t.Fatalf("survivors %v", m["survivors"])
		}
		evs := events(m)
		if len(evs) != 3 {
			t.Fatalf("events %v, want one drop per survivor", evs)
		}
		for _, e := range evs {
			if e["type"] != "drop" || e["member"] != float64(1) || e["last_frame"] != evs[0]["last_frame"] || e["frame"] != evs[0]["frame"] {
				t.Fatalf("events %v", evs)
			}
		}
	})
	t.Run("perturb", func(t *testing.T) {
		code, out, _ := runCLI(t, "sim", "--peers", "3", "--frames", "300", "--perturb", "2@100", "--json")
		if code != 1 {
			t.Fatalf("exit %d for a perturbed run, want 1", code)
		}
		m := lastJSON(t, out)
		evs := events(m)
		if m["identical"] != false || len(evs) != 3 {
			t.Fatalf("identical %v, events %v", m["identical"], evs)
		}
		for _, e := range evs {
			if e["type"] != "desync" || e["frame"] != float64(100) || e["member"] != float64(2) || e["section"] == "" {
				t.Fatalf("events %v", evs)
			}
		}
	})
	t.Run("partition", func(t *testing.T) {
		code, out, errs := runCLI(t, "sim", "--peers", "4", "--frames", "400", "--sim", "null", "--partition", "100:8000", "--json")
		m := lastJSON(t, out)
		if code != 0 || m["identical"] != true || fmt.Sprint(m["survivors"]) != "[0 1]" {
			t.Fatalf("exit %d, identical %v, survivors %v\n%s%s", code, m["identical"], m["survivors"], out, errs)
		}
		st := m["stopped"].([]any)
		if len(st) != 2 {
			t.Fatalf("stopped %v, want members 2 and 3", st)
		}
		for i, s := range st {
			s := s.(map[string]any)
			if s["member"] != float64(2+i) || s["reason"] != "minority" {
				t.Fatalf("stopped %v, want members 2 and 3 for minority", st)
			}
		}
		if !strings.Contains(out, "member 2 stopped at frame") {
			t.Fatalf("the report does not say who stopped:\n%s", out)
		}
	})
	for _, tt := range []struct {
		name, flag, reason string
		victim             float64
		dropReason         string
	}{
		{"freeze", "--freeze=2@150:8s", "dropped", 2, "silent"},
		{"mute", "--mute=3@150", "dropped", 3, "stalled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCLI(t, "sim", "--peers", "5", "--frames", "450", "--sim", "null", tt.flag, "--json")
			m := lastJSON(t, out)
			if code != 0 || m["identical"] != true || len(m["survivors"].([]any)) != 4 {
				t.Fatalf("exit %d, identical %v, survivors %v\n%s%s", code, m["identical"], m["survivors"], out, errs)
			}
			st := m["stopped"].([]any)
			if len(st) != 1 || st[0].(map[string]any)["member"] != tt.victim || st[0].(map[string]any)["reason"] != tt.reason {
				t.Fatalf("stopped %v, want member %v for %s", st, tt.victim, tt.reason)
			}
			for _, e := range events(m) {
				if e["observer"] == e["member"] {
					// The member that stopped reports a drop of itself.
					if e["type"] != "drop" || e["member"] != tt.victim || e["reason"] != tt.reason {
						t.Fatalf("event %v, want member %v's own stop for %s", e, tt.victim, tt.reason)
					}
					continue
				}
				if e["type"] == "drop" && (e["member"] != tt.victim || e["reason"] != tt.dropReason) {
					t.Fatalf("event %v, want drops of member %v for %s", e, tt.victim, tt.dropReason)
				}
			}
		})
	}
	t.Run("bad flags", func(t *testing.T) {
		for _, args := range [][]string{{"--kill", "x"}, {"--kill", "9@10"}, {"--partition", "10"}, {"--perturb", "1@99999"}, {"--freeze", "1@10"}, {"--freeze", "1@10:x"}, {"--mute", "9@10"}} {
			usageError(t, "", append([]string{"sim", "--peers", "4"}, args...)...)
		}
	})
}
