package rts

import "github.com/phalanx-net/phalanx/rng"

// groupSize is the size of a generator's control groups.
const groupSize = 20

// Generator produces a seeded, human-like stream of commands for one
// player, for tests, benchmarks and demos. It knows only the [Config] (unit
// IDs and base positions follow from it), never the world's state, so every
// member of a session can generate its own player's commands; it may
// therefore order dead units or attack dead enemies, which the world
// ignores.
//
// The player splits its units into control groups of 20 consecutive IDs
// and acts in bursts: a pause of 10 to 69 frames, then one to five actions
// 2 to 8 frames apart (about 70 actions per minute at 20 frames per second).
// An action selects a control group (or its first or second half) and
// orders it to attack-move to the base of the enemy it focuses on (35%),
// attack a unit of that enemy (20%), move anywhere on the map (20%),
// attack-move anywhere (10%), move back home (8%) or stop (7%). Now and then
// (one action in 16) it focuses on another enemy.
//
// A Generator is not safe for concurrent use.
type Generator struct {
	cfg    Config
	player int
	r      *rng.PCG
	layout layout
	groups int   // number of control groups
	next   int64 // frame of the next action
	burst  int   // actions left in the current burst
	focus  int   // the enemy player targeted, or -1 when alone
	units  []UnitID
}

// NewGenerator returns the generator of player (0 <= player < cfg.Players),
// drawing from rng.New(seed, player). Generators with the same arguments
// produce the same commands. cfg should be valid (see [Config.Validate]);
// for an invalid cfg or player, Next returns nothing.
func NewGenerator(cfg Config, player int, seed uint64) *Generator {
	g := &Generator{
		cfg:    cfg,
		player: player,
		r:      rng.New(seed, uint64(player)),
		layout: layoutOf(cfg),
		focus:  -1,
		next:   -1,
	}
	if cfg.Validate() != nil || player < 0 || player >= cfg.Players {
		return g
	}
	g.groups = (cfg.UnitsPerPlayer + groupSize - 1) / groupSize
	g.next = 1 + int64(g.r.IntN(40))
	g.pickFocus()
	return g
}

// Next returns the encoded commands the player issues at frame, usually
// none (nil) and at most one. Frames must be passed in increasing order;
// an action that falls due on a frame that was skipped is issued at the next
// call. The result depends only on the generator's arguments and on the
// frames passed so far.
func (g *Generator) Next(frame int64) [][]byte {
	if g.next < 0 || frame < g.next {
		return nil
	}
	if g.burst > 0 {
		g.burst--
		g.next = frame + 2 + int64(g.r.IntN(7))
	} else {
		g.burst = g.r.IntN(5)
		g.next = frame + 10 + int64(g.r.IntN(60))
	}
	if g.r.IntN(16) == 0 {
		g.pickFocus()
	}
	c := Command{Units: g.selectGroup()}
	home := g.layout.base(g.player)
	a := g.r.IntN(100)
	if g.focus < 0 && a < 55 {
		a = 55 // alone: no enemy to attack
	}
	switch {
	case a < 35:
		c.Kind, c.Target = AttackMove, g.near(g.layout.base(g.focus), 12)
	case a < 55:
		c.Kind = Attack
		c.TargetUnit = UnitID(g.focus*g.cfg.UnitsPerPlayer + g.r.IntN(g.cfg.UnitsPerPlayer))
	case a < 75:
		c.Kind, c.Target = Move, Tile{g.r.IntN(g.cfg.MapWidth), g.r.IntN(g.cfg.MapHeight)}
	case a < 85:
		c.Kind, c.Target = AttackMove, Tile{g.r.IntN(g.cfg.MapWidth), g.r.IntN(g.cfg.MapHeight)}
	case a < 93:
		c.Kind, c.Target = Move, g.near(home, 8)
	default:
		c.Kind = Stop
	}
	b, err := c.AppendBinary(nil)
	if err != nil {
		panic("rts: generator built an invalid command: " + err.Error())
	}
	return [][]byte{b}
}

// pickFocus chooses the enemy to focus on, uniformly among the others.
func (g *Generator) pickFocus() {
	if g.cfg.Players < 2 {
		return
	}
	g.focus = (g.player + 1 + g.r.IntN(g.cfg.Players-1)) % g.cfg.Players
}

// selectGroup picks a control group, whole (half of the time) or its first
// or second half, and returns its IDs in increasing order.
func (g *Generator) selectGroup() []UnitID {
	k := g.r.IntN(g.groups)
	lo := k * groupSize
	hi := min(lo+groupSize, g.cfg.UnitsPerPlayer)
	switch g.r.IntN(4) {
	case 0:
		hi = lo + (hi-lo+1)/2
	case 1:
		lo = lo + (hi-lo)/2
	}
	first := g.player * g.cfg.UnitsPerPlayer
	g.units = g.units[:0]
	for i := lo; i < hi; i++ {
		g.units = append(g.units, UnitID(first+i))
	}
	return g.units
}

// near returns a tile drawn uniformly within spread tiles of t in both
// axes, clamped to the map.
func (g *Generator) near(t Tile, spread int) Tile {
	x := t.X - spread + g.r.IntN(2*spread+1)
	y := t.Y - spread + g.r.IntN(2*spread+1)
	return Tile{min(max(x, 0), g.cfg.MapWidth-1), min(max(y, 0), g.cfg.MapHeight-1)}
}
