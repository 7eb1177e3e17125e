package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// badSim is a marked package; every line ending in "// BAD" must be reported.
const badSim = `//phalanx:deterministic

// Package sim is a simulation with non-deterministic code.
package sim

import (
	"math/rand"
	"time"
)

type Unit struct{ X, Y int }

type World struct {
	Order []string
	Speed float64
}

func Step(w *World, units map[string]*Unit, speed float64) int {
	moved := 0
	for name := range units { // BAD
		w.Order = append(w.Order, name)
	}
	w.Speed = speed * 1.5 // BAD
	start := time.Now() // BAD
	_ = start
	go func() {}() // BAD
	rand.Seed(time.Now().UnixNano()) // BAD
	return moved + rand.Intn(3) // BAD
}
`

// cleanSim is a marked package with nothing to report.
const cleanSim = `// Package sim is a deterministic simulation.
//
//phalanx:deterministic
package sim

import (
	"maps"
	"slices"
	"time"
)

// Frame is the simulation's frame length, used as a constant only.
const Frame = 50 * time.Millisecond

type Unit struct{ X, Y int }

type World struct {
	Units map[string]*Unit
	Speed float64
}

func Step(w *World, speed int) int {
	moved := 0
	for _, name := range slices.Sorted(maps.Keys(w.Units)) {
		w.Units[name].X += speed
		moved++
	}
	//phalanx:allow float shown on screen only
	w.Speed = float64(moved) / 2
	return moved
}
`

// brokenSim does not type-check.
const brokenSim = `//phalanx:deterministic
package sim

func Step() int { return "no" }
`

// writeModule writes a dependency-free module example.com/game with the
// package sim holding source, and returns its directory.
func writeModule(t *testing.T, source string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":                       "module example.com/game\n\ngo 1.26\n",
		filepath.Join("sim", "sim.go"): source,
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// isolateGo keeps the go command invoked by the loader offline and away from
// any enclosing workspace.
func isolateGo(t *testing.T) {
	t.Setenv("GOWORK", "off")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	t.Setenv("GOFLAGS", "-mod=mod")
}

func runVetCapture(args ...string) (code int, stdout, stderr string) {
	var out, errs bytes.Buffer
	code = runVet(args, &out, &errs)
	return code, out.String(), errs.String()
}

func TestVetReportsFindings(t *testing.T) {
	isolateGo(t)
	dir := writeModule(t, badSim)

	code, stdout, stderr := runVetCapture("-C", dir)
	if code != 1 {
		t.Fatalf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	var wantLines []int
	for i, line := range strings.Split(badSim, "\n") {
		if strings.HasSuffix(line, "// BAD") {
			wantLines = append(wantLines, i+1)
		}
	}
	if len(wantLines) != 6 {
		t.Fatalf("badSim has %d BAD lines, want 6", len(wantLines))
	}
	if !strings.Contains(stdout, "vet: 1 package, 1 marked; 6 findings (maprange 1, float 1, clock 1, rand 2, goroutine 1)") {
		t.Errorf("no summary line with the counts per rule")
	}
	file := filepath.Join("sim", "sim.go")
	for _, line := range wantLines {
		if prefix := fmt.Sprintf("%s:%d:", file, line); !strings.Contains(stdout, prefix) {
			t.Errorf("line %d not reported (no %q)", line, prefix)
		}
	}
	for _, rule := range []string{"[rand]", "[maprange]", "[float]", "[clock]", "[goroutine]"} {
		if !strings.Contains(stdout, rule) {
			t.Errorf("no finding of rule %s", rule)
		}
	}
	got := strings.Split(strings.TrimSpace(stdout), "\n")
	got = got[:len(got)-1] // the summary
	if len(got) != len(wantLines) {
		t.Errorf("got %d findings, want %d", len(got), len(wantLines))
	}
	for _, line := range got {
		if !strings.HasPrefix(line, file+":") {
			t.Errorf("finding not relative to the module directory: %q", line)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", stdout)
	}
}

func TestVetClean(t *testing.T) {
	isolateGo(t)
	dir := writeModule(t, cleanSim)

	code, stdout, stderr := runVetCapture("-C", dir, "./...")
	if code != 0 || stdout != "vet: 1 package, 1 marked; 0 findings\n" {
		t.Errorf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestVetJSONAndDisable(t *testing.T) {
	isolateGo(t)
	dir := writeModule(t, badSim)

	code, stdout, stderr := runVetCapture("-C", dir, "--json", "--disable", "rand,goroutine")
	if code != 1 {
		t.Fatalf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var rules []string
	for _, line := range lines[:len(lines)-1] {
		var f struct {
			File   string `json:"file"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
			Rule   string `json:"rule"`
			Msg    string `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("finding %q: %v", line, err)
		}
		if f.File != filepath.Join("sim", "sim.go") || f.Line == 0 || f.Column == 0 || f.Msg == "" {
			t.Errorf("finding %+v lacks a field", f)
		}
		rules = append(rules, f.Rule)
	}
	if got, want := strings.Join(rules, " "), "maprange float clock clock"; got != want {
		t.Errorf("rules %q, want %q (rand and goroutine disabled)", got, want)
	}
	var summary struct {
		Packages, Marked, Findings int
		ByRule                     map[string]int `json:"by_rule"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &summary); err != nil {
		t.Fatalf("summary %q: %v", lines[len(lines)-1], err)
	}
	if summary.Packages != 1 || summary.Marked != 1 || summary.Findings != 4 || summary.ByRule["clock"] != 2 {
		t.Errorf("summary %+v", summary)
	}

	code, _, stderr = runVetCapture("-C", dir, "--enable", "floats")
	if code != 2 || !strings.Contains(stderr, `unknown rule "floats"`) {
		t.Errorf("--enable floats: exit code %d, want 2 and the unknown rule\nstderr:\n%s", code, stderr)
	}
	code, stdout, _ = runVetCapture("-C", dir, "--enable", "float")
	if code != 1 || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, "[float]") {
		t.Errorf("--enable float: exit code %d, want 1 and one float finding\nstdout:\n%s", code, stdout)
	}
}

// misspelledSim means to be marked but has a space after "//".
const misspelledSim = `// phalanx:deterministic

// Package sim is not marked after all.
package sim

import "time"

func Now() time.Time { return time.Now() }
`

func TestVetNothingMarked(t *testing.T) {
	isolateGo(t)
	dir := writeModule(t, misspelledSim)

	code, stdout, stderr := runVetCapture("-C", dir, "./...")
	if code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if !strings.Contains(stdout, filepath.Join("sim", "sim.go")+":1:1: detcheck: misspelled directive") {
		t.Errorf("misspelled directive not reported\nstdout:\n%s", stdout)
	}
	if !strings.Contains(stderr, "no package matching ./... is marked //phalanx:deterministic (1 package matched)") {
		t.Errorf("no message that nothing is marked\nstderr:\n%s", stderr)
	}
}

func TestVetTypeError(t *testing.T) {
	isolateGo(t)
	dir := writeModule(t, brokenSim)

	code, stdout, stderr := runVetCapture("-C", dir, "./sim")
	if code != 2 || stdout != "" || !strings.Contains(stderr, filepath.Join("sim", "sim.go")+":4:") {
		t.Errorf("exit code %d, want 2 and the type error\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestVetUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"-h"}, 0},
		{[]string{"-no-such-flag"}, 2},
	}
	for _, tt := range tests {
		code, stdout, stderr := runVetCapture(tt.args...)
		if code != tt.code || stdout != "" || !strings.Contains(stderr, "usage: phalanx vet") {
			t.Errorf("args %q: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", tt.args, code, tt.code, stdout, stderr)
		}
	}
}
