package rts

import (
	"slices"

	"github.com/phalanx-net/phalanx/determinism"
)

// Clone returns an independent copy of w: stepped with the same inputs, the
// copy and w stay identical, and stepping one does not affect the other.
// The static map is shared (it never changes); everything else is copied.
func (w *World) Clone() *World {
	c := *w
	r := *w.rng
	c.rng = &r
	c.grid.cellHead = slices.Clone(w.cellHead)
	c.grid.cellCount = slices.Clone(w.cellCount)
	c.grid.cellPlayers = slices.Clone(w.cellPlayers)
	c.routes = routeTable{
		list: slices.Clone(w.routes.list),
		free: slices.Clone(w.routes.free),
	}
	for i := range c.routes.list {
		c.routes.list[i].dist = slices.Clone(w.routes.list[i].dist)
		c.routes.list[i].queue = slices.Clone(w.routes.list[i].queue)
	}
	c.units = slices.Clone(w.units)
	c.players = slices.Clone(w.players)
	c.cmd = Command{}
	c.cmdUnits = nil
	c.hasher = determinism.NewHasher()
	c.hashBuf = nil
	return &c
}
