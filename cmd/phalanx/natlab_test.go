package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestNATLab runs scripts/natlab: four members in three homes behind NAT
// routers (network namespaces, nftables, addresses in 198.18.0.0/15 only)
// meet through a relay and play 600 frames of the example RTS. They must
// end identical; the pair in one home is direct, the pair of the two
// homes with endpoint-independent NATs punched, and every pair with the
// member behind the symmetric NAT relayed.
func TestNATLab(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a NAT lab and plays a 30 s session")
	}
	check := exec.Command("../../scripts/natlab", "check")
	if out, err := check.CombinedOutput(); err != nil {
		t.Skipf("the NAT lab cannot run here: %s", strings.TrimSpace(string(out)))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("../../scripts/natlab", "run", "--frames", "600")
	cmd.Env = append(os.Environ(), "PHALANX="+exe, "PHALANX_TEST_MEMBER=1", "OUT="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if runErr != nil || len(lines) < 6 {
		t.Fatalf("natlab: %v\n%s\n%s", runErr, stdout.String(), stderr.String())
	}
	t.Logf("%s", stdout.String())
	var relay struct {
		Relay struct {
			CPU     float64 `json:"cpu_seconds"`
			BytesIn int64   `json:"bytes_in"`
		} `json:"relay"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-2]), &relay); err != nil || relay.Relay.BytesIn == 0 {
		t.Errorf("relay line %q: %v", lines[len(lines)-2], err)
	}
	var sum struct {
		Identical bool              `json:"identical"`
		Homes     map[string]int    `json:"homes"`
		Pairs     []json.RawMessage `json:"pairs"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("summary %q: %v", lines[len(lines)-1], err)
	}
	if !sum.Identical {
		t.Errorf("the members did not end identical")
	}
	if len(sum.Pairs) != 6 {
		t.Fatalf("%d pairs, want 6: %s", len(sum.Pairs), lines[len(lines)-1])
	}
	count := map[string]int{}
	for _, raw := range sum.Pairs {
		var p struct {
			Pair  string   `json:"pair"`
			Paths []string `json:"paths"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		a, b, _ := strings.Cut(p.Pair, "-")
		ha, hb := sum.Homes[a], sum.Homes[b]
		want := "punched"
		switch {
		case ha == hb:
			want = "direct"
		case ha == 3 || hb == 3: // the home behind the symmetric NAT
			want = "relayed"
		}
		if len(p.Paths) != 1 || p.Paths[0] != want {
			t.Errorf("pair %s (homes %d and %d): paths %v, want %s on both sides", p.Pair, ha, hb, p.Paths, want)
		}
		count[want]++
	}
	t.Logf("pairs: %s direct, %s punched, %s relayed; relay: %.2f CPU s, %d bytes in",
		strconv.Itoa(count["direct"]), strconv.Itoa(count["punched"]), strconv.Itoa(count["relayed"]), relay.Relay.CPU, relay.Relay.BytesIn)
}
