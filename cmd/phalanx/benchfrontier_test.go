package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchFrontier(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "bench", "--frontier", "--profiles", "intercontinental,lan", "--members", "3", "--seeds", "2", "--frames", "300", "--out", dir, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res struct {
		Frontier []frontier `json:"frontier"`
		Plots    []string   `json:"plots"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not the JSON object: %v", err)
	}
	if len(res.Frontier) != 2 {
		t.Fatalf("%d frontiers, want 2", len(res.Frontier))
	}
	fr := res.Frontier[0]
	lo, hi := frontierFixed["intercontinental"][0], frontierFixed["intercontinental"][1]
	if fr.Profile != "intercontinental" || fr.Peers != 3 || len(fr.Seeds) != 2 || len(fr.Points) != 1+hi-lo+1 {
		t.Fatalf("frontier %+v", fr)
	}
	if fr.Points[0].Policy != "adaptive" || fr.Points[1].Policy != "fixed:2" {
		t.Errorf("points %v, %v: want adaptive, then fixed:2 on", fr.Points[0].Policy, fr.Points[1].Policy)
	}
	pareto := 0
	for _, pt := range fr.Points {
		if pt.P95 <= 0 {
			t.Errorf("%s: p95 %v", pt.Policy, pt.P95)
		}
		if pt.Pareto {
			pareto++
		}
	}
	// fixed:2 is far below the one-way delay of 80 ms: it stalls nearly
	// every frame, and the largest fixed delay does not stall at all.
	if first, last := fr.Points[1], fr.Points[len(fr.Points)-1]; first.StallRate < 0.5 || last.StallRate != 0 {
		t.Errorf("fixed:2 stall rate %v, %s %v", first.StallRate, last.Policy, last.StallRate)
	}
	if pareto == 0 || fr.Dominated == nil || fr.BeatsOnBoth == nil {
		t.Errorf("%d points on the frontier, dominated %v, beats on both %v", pareto, fr.Dominated, fr.BeatsOnBoth)
	}
	// lan stalls nowhere: its plot has nothing above the log axis' floor.
	if len(res.Plots) != 2 || filepath.Base(res.Plots[0]) != "frontier-intercontinental-3.svg" || filepath.Base(res.Plots[1]) != "frontier-lan-3.svg" {
		t.Fatalf("plots %v", res.Plots)
	}
	if b, err := os.ReadFile(res.Plots[0]); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("plot: %v", err)
	}
	if !strings.Contains(out, "#### intercontinental, 3 members") {
		t.Errorf("no table:\n%s", out)
	}
}
