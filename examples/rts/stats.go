package rts

import "github.com/phalanx-net/phalanx/determinism"

// Stats summarises a world for display and tests.
type Stats struct {
	Frame int64
	// Alive, Kills and Losses are per player.
	Alive, Kills, Losses []int
	// Strikes is the total number of hits dealt so far.
	Strikes uint64
	// Routes is the number of flow fields in use.
	Routes int
}

// TotalAlive returns the number of living units of all players.
func (s Stats) TotalAlive() int {
	n := 0
	for _, a := range s.Alive {
		n += a
	}
	return n
}

// Stats returns a snapshot of the world's counters. The slices are fresh
// copies.
func (w *World) Stats() Stats {
	s := Stats{
		Frame:   w.frame,
		Alive:   make([]int, len(w.players)),
		Kills:   make([]int, len(w.players)),
		Losses:  make([]int, len(w.players)),
		Strikes: w.strikes,
		Routes:  w.routes.live(),
	}
	for p, ps := range w.players {
		s.Alive[p], s.Kills[p], s.Losses[p] = ps.alive, ps.kills, ps.losses
	}
	return s
}

// UnitInfo is a read-only view of one unit.
type UnitInfo struct {
	ID    UnitID
	Owner int
	// Archer is true for archers, false for soldiers.
	Archer bool
	Alive  bool
	// HP is the unit's hit points (0 when dead).
	HP int
	// Tile is the tile the unit stands on, or steps to.
	Tile Tile
	// Pos is the unit's position in tiles.
	Pos determinism.Vec2
	// Order is the unit's current order, 0 when idle.
	Order CommandKind
}

// Unit returns a view of unit id, and false if there is no such unit.
func (w *World) Unit(id UnitID) (UnitInfo, bool) {
	if int(id) >= len(w.units) {
		return UnitInfo{}, false
	}
	u := &w.units[id]
	return UnitInfo{
		ID:     id,
		Owner:  w.cfg.owner(id),
		Archer: kindOf(int(id)%w.cfg.UnitsPerPlayer) == archer,
		Alive:  u.alive,
		HP:     int(u.hp),
		Tile:   Tile{int(w.tileX[u.tile]), int(w.tileY[u.tile])},
		Pos:    u.pos,
		Order:  u.order,
	}, true
}
