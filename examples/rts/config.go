package rts

import (
	"errors"
	"fmt"
)

// Bounds of a [Config].
const (
	MaxPlayers        = 16
	MaxUnitsPerPlayer = 1024
	MinMapSide        = 16
	MaxMapSide        = 256
	MaxObstaclePct    = 40
)

// ErrInvalidConfig is wrapped by the errors of [Config.Validate].
var ErrInvalidConfig = errors.New("rts: invalid config")

// Config describes a game. Every member of a session must use the same
// Config: together with the commands it determines the whole game.
type Config struct {
	// Players is the number of players, 1 to MaxPlayers.
	Players int
	// UnitsPerPlayer is each player's starting army, 1 to MaxUnitsPerPlayer.
	UnitsPerPlayer int
	// MapWidth and MapHeight are the map size in tiles, MinMapSide to
	// MaxMapSide each, and large enough for every player's base.
	MapWidth, MapHeight int
	// Seed seeds the world's generator, which draws the map and every
	// damage roll.
	Seed uint64
	// ObstaclePct is the share of the map, in percent (0 to MaxObstaclePct),
	// that the map generator aims to cover with obstacles before it clears
	// the bases and the roads and fills unreachable pockets.
	ObstaclePct int
}

// DefaultConfig returns the standard game: 8 players with 200 units each on
// a 128×128 map with about 18% obstacles, seed 1.
func DefaultConfig() Config {
	return Config{
		Players:        8,
		UnitsPerPlayer: 200,
		MapWidth:       128,
		MapHeight:      128,
		Seed:           1,
		ObstaclePct:    18,
	}
}

// Validate reports whether c describes a playable game: every field within
// its bounds and every player's base inside the map without touching
// another's. The error wraps [ErrInvalidConfig].
func (c Config) Validate() error {
	switch {
	case c.Players < 1 || c.Players > MaxPlayers:
		return fmt.Errorf("%w: Players %d outside [1, %d]", ErrInvalidConfig, c.Players, MaxPlayers)
	case c.UnitsPerPlayer < 1 || c.UnitsPerPlayer > MaxUnitsPerPlayer:
		return fmt.Errorf("%w: UnitsPerPlayer %d outside [1, %d]", ErrInvalidConfig, c.UnitsPerPlayer, MaxUnitsPerPlayer)
	case c.MapWidth < MinMapSide || c.MapWidth > MaxMapSide:
		return fmt.Errorf("%w: MapWidth %d outside [%d, %d]", ErrInvalidConfig, c.MapWidth, MinMapSide, MaxMapSide)
	case c.MapHeight < MinMapSide || c.MapHeight > MaxMapSide:
		return fmt.Errorf("%w: MapHeight %d outside [%d, %d]", ErrInvalidConfig, c.MapHeight, MinMapSide, MaxMapSide)
	case c.ObstaclePct < 0 || c.ObstaclePct > MaxObstaclePct:
		return fmt.Errorf("%w: ObstaclePct %d outside [0, %d]", ErrInvalidConfig, c.ObstaclePct, MaxObstaclePct)
	}
	l := layoutOf(c)
	if l.inner < 0 {
		return fmt.Errorf("%w: a %d×%d map has no room for bases of %d units", ErrInvalidConfig, c.MapWidth, c.MapHeight, c.UnitsPerPlayer)
	}
	if p, q, ok := l.overlap(); ok {
		return fmt.Errorf("%w: the bases of players %d and %d overlap on a %d×%d map", ErrInvalidConfig, p, q, c.MapWidth, c.MapHeight)
	}
	return nil
}

// units returns the total number of units.
func (c Config) units() int { return c.Players * c.UnitsPerPlayer }

// owner returns the player that owns unit id (id < c.units()).
func (c Config) owner(id UnitID) int { return int(id) / c.UnitsPerPlayer }

// layout places the players' bases. Each player's units start in a square
// block of side blockSide (the smallest square holding UnitsPerPlayer units),
// filled row by row from its north-west corner; the base is that block plus
// a margin of clearMargin tiles, cleared of obstacles. The base centres lie
// on a rectangle inset from the map edges by inset tiles, walked clockwise
// from its north-west corner (east along the north side, south along the
// east side, west along the south side, north along the west side); player
// p's centre is at perimeter position p*L/Players (integer division), where
// L is the rectangle's perimeter, plus an offset: the smallest offset in
// [0, L/Players) that keeps the bases apart (0 when none does). With 8
// players on a square map the offset is 0, which puts them on the four
// corners and the four side midpoints.
type layout struct {
	cfg       Config
	blockSide int // side of the square block of starting units
	clearHalf int // half side of the cleared base square around the centre
	inset     int // distance of the base centres from the map edges
	inner     int // perimeter length of the rectangle of centres; < 0 if none
	w, h      int // side lengths of that rectangle, in steps
	offset    int // perimeter position of player 0
}

const clearMargin = 2

func layoutOf(c Config) layout {
	l := layout{cfg: c}
	l.blockSide = ceilSqrt(c.UnitsPerPlayer)
	l.clearHalf = l.blockSide/2 + clearMargin
	l.inset = l.clearHalf + 1
	l.w = c.MapWidth - 1 - 2*l.inset
	l.h = c.MapHeight - 1 - 2*l.inset
	if l.w < 0 || l.h < 0 {
		l.inner = -1
		return l
	}
	l.inner = 2 * (l.w + l.h)
	for o := range max(l.inner/c.Players, 1) {
		l.offset = o
		if _, _, bad := l.overlap(); !bad {
			return l
		}
	}
	l.offset = 0
	return l
}

// overlap returns the first pair of players whose cleared base squares do
// not leave at least one tile between them.
func (l layout) overlap() (p, q int, ok bool) {
	for p := range l.cfg.Players {
		for q := p + 1; q < l.cfg.Players; q++ {
			a, b := l.base(p), l.base(q)
			if abs(a.X-b.X) <= 2*l.clearHalf+1 && abs(a.Y-b.Y) <= 2*l.clearHalf+1 {
				return p, q, true
			}
		}
	}
	return 0, 0, false
}

// base returns the centre tile of player p's base.
func (l layout) base(p int) Tile {
	t := 0
	if l.inner > 0 {
		t = (l.offset + p*l.inner/l.cfg.Players) % l.inner
	}
	lo, right, bottom := l.inset, l.cfg.MapWidth-1-l.inset, l.cfg.MapHeight-1-l.inset
	switch {
	case t < l.w:
		return Tile{lo + t, lo}
	case t < l.w+l.h:
		return Tile{right, lo + t - l.w}
	case t < 2*l.w+l.h:
		return Tile{right - (t - l.w - l.h), bottom}
	default:
		return Tile{lo, bottom - (t - 2*l.w - l.h)}
	}
}

// start returns the starting tile of the i-th unit of player p.
func (l layout) start(p, i int) Tile {
	c := l.base(p)
	x0 := c.X - l.blockSide/2
	y0 := c.Y - l.blockSide/2
	return Tile{x0 + i%l.blockSide, y0 + i/l.blockSide}
}

// ceilSqrt returns the smallest s >= 0 with s*s >= n, for n >= 0.
func ceilSqrt(n int) int {
	s := 0
	for s*s < n {
		s++
	}
	return s
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
