package rts

import (
	"math"
	"testing"

	"github.com/phalanx-net/phalanx/view"
)

// TestScene: the scene has every living unit where the world has it, the
// map's blocked tiles, and changes nothing.
func TestScene(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Players = 2
	w := newWorld(t, cfg)
	g := NewGenerator(cfg, 0, 1)
	for f := range int64(200) {
		var in []Input
		for _, c := range g.Next(f) {
			in = append(in, Input{Player: 0, Data: c})
		}
		w.Step(in)
	}
	before := w.Hash()
	var s view.Scene
	w.Scene(&s)
	if w.Hash() != before {
		t.Fatal("Scene changed the world")
	}
	st := w.Stats()
	if len(s.Units) != st.TotalAlive() || s.Width != cfg.MapWidth || s.Frame != 200 {
		t.Fatalf("%d units on %d×%d at frame %d; want %d on %d wide at 200", len(s.Units), s.Width, s.Height, s.Frame, st.TotalAlive(), cfg.MapWidth)
	}
	orders := 0
	for _, u := range s.Units {
		info, _ := w.Unit(UnitID(u.ID))
		if !info.Alive || math.Abs(float64(u.X)-info.Pos.X.Float64()) > 0.006 || u.HP != info.HP || u.Owner != info.Owner {
			t.Fatalf("unit %d: %+v, world %+v", u.ID, u, info)
		}
		if s.IsBlocked(info.Tile.X, info.Tile.Y) {
			t.Fatalf("unit %d stands on a blocked tile %v", u.ID, info.Tile)
		}
		if u.Order != "" {
			orders++
		}
	}
	if orders == 0 {
		t.Error("no unit has an order after 200 frames of commands")
	}
	blocked := 0
	for y := range s.Height {
		for x := range s.Width {
			if s.IsBlocked(x, y) != !w.open[w.index(x, y)] {
				t.Fatalf("tile (%d, %d): blocked %v", x, y, s.IsBlocked(x, y))
			}
			if s.IsBlocked(x, y) {
				blocked++
			}
		}
	}
	if blocked == 0 {
		t.Error("no blocked tile")
	}
}
