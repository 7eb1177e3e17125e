// Package gridutil is a game's utility package, not marked: grid helpers,
// some of which hide map order.
package gridutil

import "sort"

// Cell is a grid coordinate.
type Cell struct{ X, Y int }

// Occupied returns the occupied cells in map order.
func Occupied(occ map[Cell]int) []Cell { // want Occupied:`maprange: via gridutil.Occupied`
	cells := make([]Cell, 0, len(occ))
	for c := range occ {
		cells = append(cells, c)
	}
	return cells
}

// Sorted returns the occupied cells in row order.
func Sorted(occ map[Cell]int) []Cell {
	cells := make([]Cell, 0, len(occ))
	for c := range occ {
		cells = append(cells, c)
	}
	sort.Slice(cells, func(i, j int) bool {
		if cells[i].Y != cells[j].Y {
			return cells[i].Y < cells[j].Y
		}
		return cells[i].X < cells[j].X
	})
	return cells
}

// Count returns how many cells each owner holds.
func Count(occ map[Cell]int) map[int]int {
	n := make(map[int]int)
	for _, owner := range occ {
		n[owner]++
	}
	return n
}

// Neighbours returns the four neighbours of c.
func Neighbours(c Cell) [4]Cell {
	return [4]Cell{{c.X + 1, c.Y}, {c.X - 1, c.Y}, {c.X, c.Y + 1}, {c.X, c.Y - 1}}
}
