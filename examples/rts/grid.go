package rts

// cellShift sets the side of a spatial cell: 1<<cellShift = 8 tiles, more
// than sightTiles+1, so a unit's sight never reaches beyond the 3×3 cells
// around its own (a unit's position is within one tile of its tile).
const cellShift = 3

// grid buckets living units by spatial cell (by the cell of their tile) for
// neighbour queries. Each cell holds an intrusive doubly linked list through
// unit.next and unit.prev, so moving a unit costs no allocation. The order
// within a list never decides anything: queries break ties by unit ID.
type grid struct {
	cellsW, cellsH int
	cellHead       []int32  // first unit of each cell, or -1
	cellCount      []uint16 // living units per cell
	cellPlayers    []uint16 // living units per cell and player: [cell*Players+player]
}

func newGrid(cfg Config) grid {
	g := grid{
		cellsW: (cfg.MapWidth + 1<<cellShift - 1) >> cellShift,
		cellsH: (cfg.MapHeight + 1<<cellShift - 1) >> cellShift,
	}
	n := g.cellsW * g.cellsH
	g.cellHead = make([]int32, n)
	for i := range g.cellHead {
		g.cellHead[i] = -1
	}
	g.cellCount = make([]uint16, n)
	g.cellPlayers = make([]uint16, n*cfg.Players)
	return g
}

// cellOf returns the cell of padded tile index i.
func (w *World) cellOf(i int32) int32 {
	return int32(int(w.tileY[i])>>cellShift*w.cellsW + int(w.tileX[i])>>cellShift)
}

func (w *World) gridInsert(id int32, u *unit) {
	c := w.cellOf(u.tile)
	u.cell = c
	u.prev = -1
	u.next = w.cellHead[c]
	if u.next >= 0 {
		w.units[u.next].prev = id
	}
	w.cellHead[c] = id
	w.cellCount[c]++
	w.cellPlayers[int(c)*w.cfg.Players+int(u.owner)]++
}

func (w *World) gridRemove(id int32, u *unit) {
	c := u.cell
	if u.prev >= 0 {
		w.units[u.prev].next = u.next
	} else {
		w.cellHead[c] = u.next
	}
	if u.next >= 0 {
		w.units[u.next].prev = u.prev
	}
	w.cellCount[c]--
	w.cellPlayers[int(c)*w.cfg.Players+int(u.owner)]--
	u.cell, u.next, u.prev = -1, -1, -1
}

// gridUpdate moves unit u to the cell of its tile if that changed.
func (w *World) gridUpdate(u *unit) {
	if w.cellOf(u.tile) == u.cell {
		return
	}
	w.gridRemove(u.id, u)
	w.gridInsert(u.id, u)
}
