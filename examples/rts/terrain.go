package rts

import (
	"github.com/phalanx-net/phalanx/determinism"
	"github.com/phalanx-net/phalanx/rng"
)

// dirs are the eight directions in their fixed order, which every tie-break
// of pathing follows: north, east, south, west, then north-east, south-east,
// south-west, north-west. North is -Y.
var dirs = [8]struct{ dx, dy int }{
	{0, -1}, {1, 0}, {0, 1}, {-1, 0},
	{1, -1}, {1, 1}, {-1, 1}, {-1, -1},
}

// terrain is the static map. Tiles are stored with a one-tile blocked border
// ("padded"), so that neighbour lookups need no bounds checks: tile (x, y)
// is at index (y+1)*stride + x+1 with stride = width+2.
type terrain struct {
	width, height int
	stride        int32
	open          []bool      // passable, by padded index
	tileX, tileY  []int16     // coordinates, by padded index
	nbr           [8]int32    // index offset of each direction
	sides         [8][2]int32 // for a diagonal, the offsets of its two orthogonal parts
	pass          []uint8     // bit d set: a step from the tile in direction d is allowed
	blank         []uint16    // an empty route field: 0 on open tiles, 0xFFFF on blocked ones
	digest        uint64      // hash of the map, written into the "map" section
}

func (t *terrain) index(x, y int) int32 {
	return int32(y+1)*t.stride + int32(x+1)
}

// centre returns the position of the centre of tile i.
func (t *terrain) centre(i int32) determinism.Vec2 {
	return determinism.Vec2{
		X: determinism.FromInt(int64(t.tileX[i])) + determinism.Half,
		Y: determinism.FromInt(int64(t.tileY[i])) + determinism.Half,
	}
}

// passable reports whether a unit may step from tile i in direction d: the
// destination is open and, for a diagonal step, so are both tiles beside
// the corner it passes (no corner cutting).
func (t *terrain) passable(i int32, d int) bool {
	return t.pass[i]>>d&1 != 0
}

// chebyshev returns max(|Δx|, |Δy|) between tiles i and j.
func (t *terrain) chebyshev(i, j int32) int {
	return max(abs(int(t.tileX[i])-int(t.tileX[j])), abs(int(t.tileY[i])-int(t.tileY[j])))
}

// generateTerrain draws the map from r, in this order of draws:
//
//  1. Obstacle features, until ObstaclePct percent of the tiles are blocked
//     (or width×height features were drawn). Each feature draws x = IntN(W),
//     y = IntN(H) and shape = Uint32N(4). Shape 0 is a rectangle: it draws
//     w = 1+IntN(6) then h = 1+IntN(6) and blocks the tiles x..x+w-1,
//     y..y+h-1 that are on the map. Shapes 1 to 3 are a grove: it draws
//     n = 8+IntN(32), then for each of n steps blocks (x, y) if on the map and
//     moves one tile in direction Uint32N(4) (north, east, south, west).
//
// Then, with no more draws: every base square is cleared; a road three tiles
// wide is cleared from every base centre (bx, by) to the map centre
// (W/2, H/2), first along row by from bx to W/2, then along column W/2 from
// by to H/2; every open tile that is not 4-connected to the map centre is
// blocked. So the open tiles form one region and every base lies in it.
func generateTerrain(cfg Config, l layout, r *rng.PCG, h *determinism.Hasher) terrain {
	w, ht := cfg.MapWidth, cfg.MapHeight
	blocked := make([]bool, w*ht)
	on := func(x, y int) bool { return x >= 0 && x < w && y >= 0 && y < ht }
	goal := w * ht * cfg.ObstaclePct / 100
	count := 0
	block := func(x, y int) {
		if on(x, y) && !blocked[y*w+x] {
			blocked[y*w+x] = true
			count++
		}
	}
	for features := 0; count < goal && features < w*ht; features++ {
		x, y := r.IntN(w), r.IntN(ht)
		if r.Uint32N(4) == 0 {
			rw, rh := 1+r.IntN(6), 1+r.IntN(6)
			for yy := y; yy < y+rh; yy++ {
				for xx := x; xx < x+rw; xx++ {
					block(xx, yy)
				}
			}
			continue
		}
		n := 8 + r.IntN(32)
		for range n {
			block(x, y)
			d := dirs[r.Uint32N(4)]
			x, y = x+d.dx, y+d.dy
		}
	}
	clearRect := func(x0, y0, x1, y1 int) {
		for y := min(y0, y1); y <= max(y0, y1); y++ {
			for x := min(x0, x1); x <= max(x0, x1); x++ {
				if on(x, y) {
					blocked[y*w+x] = false
				}
			}
		}
	}
	cx, cy := w/2, ht/2
	for p := range cfg.Players {
		b := l.base(p)
		clearRect(b.X-l.clearHalf, b.Y-l.clearHalf, b.X+l.clearHalf, b.Y+l.clearHalf)
		clearRect(b.X, b.Y-1, cx, b.Y+1)
		clearRect(cx-1, b.Y, cx+1, cy)
	}
	// Keep only the region 4-connected to the centre.
	reached := make([]bool, w*ht)
	queue := []int{cy*w + cx}
	reached[cy*w+cx] = true
	for len(queue) > 0 {
		i := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		x, y := i%w, i/w
		for _, d := range dirs[:4] {
			nx, ny := x+d.dx, y+d.dy
			if on(nx, ny) && !blocked[ny*w+nx] && !reached[ny*w+nx] {
				reached[ny*w+nx] = true
				queue = append(queue, ny*w+nx)
			}
		}
	}

	t := terrain{width: w, height: ht, stride: int32(w + 2)}
	n := (w + 2) * (ht + 2)
	t.open = make([]bool, n)
	t.tileX = make([]int16, n)
	t.tileY = make([]int16, n)
	for i := range n {
		t.tileX[i] = int16(i%(w+2) - 1)
		t.tileY[i] = int16(i/(w+2) - 1)
	}
	rows := make([]byte, w*ht)
	for y := range ht {
		for x := range w {
			if reached[y*w+x] {
				t.open[t.index(x, y)] = true
				rows[y*w+x] = 1
			}
		}
	}
	for d, o := range dirs {
		t.nbr[d] = int32(o.dy)*t.stride + int32(o.dx)
		t.sides[d] = [2]int32{int32(o.dx), int32(o.dy) * t.stride}
	}
	// Passability is computed for every tile but the border, blocked tiles
	// included (a route may start from a blocked target).
	t.pass = make([]uint8, n)
	t.blank = make([]uint16, n)
	for i := range int32(n) {
		if !t.open[i] {
			t.blank[i] = 0xFFFF
		}
		if t.tileX[i] < 0 || int(t.tileX[i]) >= w || t.tileY[i] < 0 || int(t.tileY[i]) >= ht {
			continue
		}
		for d := range dirs {
			if t.open[i+t.nbr[d]] && (d < 4 || (t.open[i+t.sides[d][0]] && t.open[i+t.sides[d][1]])) {
				t.pass[i] |= 1 << d
			}
		}
	}
	h.Reset()
	h.Section("map")
	h.WriteInt(w)
	h.WriteInt(ht)
	h.WriteBytes(rows)
	t.digest = h.Sum64()
	h.Reset()
	return t
}
