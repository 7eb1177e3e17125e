package main

import (
	"bytes"
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
	"math/rand" // BAD
	"time"
)

type Unit struct{ X, Y int }

func Step(units map[string]*Unit, speed float64) int {
	moved := 0
	for _, u := range units { // BAD
		u.X++
		moved++
	}
	scaled := speed * 1.5 // BAD
	_ = scaled
	start := time.Now() // BAD
	_ = start
	go func() {}() // BAD
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

func Step(units map[string]*Unit, speed int) int {
	moved := 0
	for _, name := range slices.Sorted(maps.Keys(units)) {
		units[name].X += speed
		moved++
	}
	//phalanx:allow float display only
	_ = float64(moved) / 2
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
	if code != 0 || stdout != "" {
		t.Errorf("exit code %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
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
