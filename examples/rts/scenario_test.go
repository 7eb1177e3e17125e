package rts

import (
	"bytes"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/phalanx-net/phalanx/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestScenario plays the default game (8 players × 200 units) for 12,000
// frames, every player's Generator feeding Step, and compares a checkpoint
// every 1,000 frames (hash and units alive per player) and the final
// section hashes with testdata/scenario.golden. Run with -update to rewrite
// the golden file after a deliberate change of the rules. The same file must
// pass on every architecture:
//
//	GOARCH=arm64 go test -exec qemu-aarch64 -run TestScenario ./examples/rts/
func TestScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("12,000 frames: skipped in -short mode")
	}
	cfg := DefaultConfig()
	w := newWorld(t, cfg)
	gens := generators(cfg, cfg.Seed)
	var out bytes.Buffer
	fmt.Fprintf(&out, "# rts scenario: DefaultConfig %+v, generators seeded %d\n", cfg, cfg.Seed)
	fmt.Fprintf(&out, "# frame hash alive-per-player\n")
	lastLosses := 0
	for range 12 {
		run(t, w, gens, 1000)
		s := w.Stats()
		fmt.Fprintf(&out, "%d %#016x %v\n", w.Frame(), w.Hash(), s.Alive)
		losses := 0
		for _, l := range s.Losses {
			losses += l
		}
		if w.Frame() > 1000 && losses == lastLosses {
			t.Errorf("frames %d to %d: no unit died", w.Frame()-1000, w.Frame())
		}
		lastLosses = losses
	}
	h := w.hasher
	h.Reset()
	w.HashSections(h)
	for _, s := range h.Sections() {
		fmt.Fprintf(&out, "section %s %#016x\n", s.Name, s.Hash)
	}
	fmt.Fprintf(&out, "final %#016x\n", w.Hash())

	s := w.Stats()
	if s.TotalAlive() == 0 || lastLosses == 0 {
		t.Errorf("want units alive and units dead at the end: %+v", s)
	}

	golden.Check(t, filepath.Join("testdata", "scenario.golden"), out.Bytes(), *update)
}
