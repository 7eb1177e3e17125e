package rts

import (
	"errors"
	"testing"
)

// TestSnapshotRestoresAWorldThatStepsTheSame saves a world in the middle of
// a game, restores it into a new world of the same config, and steps both
// with the same inputs: every frame's hash must agree, and the restored
// world's snapshot must equal the original's.
func TestSnapshotRestoresAWorldThatStepsTheSame(t *testing.T) {
	cfg := DefaultConfig()
	w := newWorld(t, cfg)
	inputsAt := generated(cfg)
	for f := range int64(600) {
		w.Step(inputsAt(f))
	}
	snap := w.AppendSnapshot(nil)
	r := newWorld(t, cfg)
	if err := r.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if r.Hash() != w.Hash() {
		t.Fatalf("restored hash %x, want %x", r.Hash(), w.Hash())
	}
	if again := r.AppendSnapshot(nil); string(again) != string(snap) {
		t.Fatalf("the restored world's snapshot differs (%d bytes, want %d)", len(again), len(snap))
	}
	t.Logf("snapshot of frame 600, %d players: %d bytes", cfg.Players, len(snap))
	for f := int64(600); f < 1200; f++ {
		in := inputsAt(f)
		w.Step(in)
		r.Step(in)
		if r.Hash() != w.Hash() {
			t.Fatalf("frame %d: restored world's hash %x, original's %x", f, r.Hash(), w.Hash())
		}
	}
}

// TestRestoreRefusesDamage cuts a snapshot at many lengths and adds a byte
// to it: Restore must return ErrSnapshot, never panic.
func TestRestoreRefusesDamage(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Players, cfg.UnitsPerPlayer = 2, 8
	w := newWorld(t, cfg)
	for range 50 {
		w.Step(nil)
	}
	snap := w.AppendSnapshot(nil)
	for n := 0; n < len(snap); n += 7 {
		r := newWorld(t, cfg)
		if err := r.Restore(snap[:n]); !errors.Is(err, ErrSnapshot) {
			t.Fatalf("cut at %d of %d: %v, want ErrSnapshot", n, len(snap), err)
		}
	}
	r := newWorld(t, cfg)
	long := append(append([]byte(nil), snap...), 0)
	if err := r.Restore(long); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("a byte too many: %v, want ErrSnapshot", err)
	}
}
