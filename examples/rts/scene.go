package rts

import (
	"math"

	"github.com/phalanx-net/phalanx/determinism"
	"github.com/phalanx-net/phalanx/view"
)

// Scene describes the world for a view (see view.Drawable): the map's
// blocked tiles and every living unit with its position, hit points, kind
// (0 soldier, 1 archer), order and the tile its order leads to. It reuses
// the capacity of s's slices and changes nothing in the world.
func (w *World) Scene(s *view.Scene) {
	s.Frame = w.frame
	s.Width, s.Height, s.Players = w.cfg.MapWidth, w.cfg.MapHeight, w.cfg.Players
	n := (s.Width*s.Height + 7) / 8
	s.Blocked = append(s.Blocked[:0], make([]byte, n)...)
	for y := range s.Height {
		for x := range s.Width {
			if !w.open[w.index(x, y)] {
				i := y*s.Width + x
				s.Blocked[i/8] |= 1 << (i % 8)
			}
		}
	}
	s.Units = s.Units[:0]
	for id := range w.units {
		u := &w.units[id]
		if !u.alive {
			continue
		}
		vu := view.Unit{
			ID: uint32(id), Owner: int(u.owner), Kind: u.kind,
			X: hundredths(u.pos.X), Y: hundredths(u.pos.Y),
			HP: int(u.hp), MaxHP: int(kinds[u.kind].hp), TX: -1, TY: -1,
		}
		if u.order != 0 {
			vu.Order = u.order.String()
			if u.route >= 0 {
				t := w.routes.list[u.route].target
				vu.TX, vu.TY = int(w.tileX[t]), int(w.tileY[t])
			}
		}
		s.Units = append(s.Units, vu)
	}
}

// hundredths returns x rounded to a hundredth of a tile, as a view draws
// it (and as its JSON spells it, in few digits).
//
//phalanx:allow float a position converted for drawing only
func hundredths(x determinism.Fixed) float32 {
	return float32(math.Round(x.Float64()*100) / 100)
}

// Scene describes the world the Sim steps (see World.Scene); it makes Sim
// a view.Drawable.
func (s *Sim) Scene(dst *view.Scene) { s.world.Scene(dst) }

// Clone returns an independent copy of the Sim, at the same state (see
// World.Clone): a replay viewer keeps copies to seek quickly.
func (s *Sim) Clone() *Sim {
	return &Sim{world: s.world.Clone(), hasher: determinism.NewHasher()}
}
