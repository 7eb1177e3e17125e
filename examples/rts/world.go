package rts

import (
	"fmt"

	"github.com/phalanx-net/phalanx/determinism"
	"github.com/phalanx-net/phalanx/rng"
)

// worldStream is the PCG stream of the world's generator: "rts" in ASCII.
const worldStream = 0x727473

// Rules of the game that are not per unit kind.
const (
	// scanPeriod: a unit looking for enemies scans on the ticks where
	// (frame + id) % scanPeriod == 0, so the scans spread over the ticks.
	scanPeriod = 4
	// sightTiles is how far a unit sees enemies (Euclidean, in tiles). It
	// must stay below cellSize so that a scan of the 3×3 cells around a unit
	// finds everything in sight.
	sightTiles = 6
	// leashTiles: a unit drops an enemy it acquired by itself once that
	// enemy's tile is more than leashTiles away in either axis.
	leashTiles = 10
	// chaseTiles: a unit with an Attack order closes in on its target by
	// greedy steps once the target's tile is within chaseTiles in both axes,
	// and follows its route before that.
	chaseTiles = 6
	// maxReroutesPerTick bounds how many Attack routes are recomputed per
	// tick when targets have moved away from their route's end. Units over
	// the budget wait for a later tick.
	maxReroutesPerTick = 2
	// trainTicks is the time a base takes to train a replacement for one
	// of its player's dead units.
	trainTicks = 30
)

// unitKind holds the rules of one kind of unit.
type unitKind struct {
	name       string
	hp         int32
	rangeSq    determinism.Fixed // attack range squared, in tiles²
	damage     uint32            // base damage of a strike
	spread     uint32            // a strike deals damage + Uint32N(spread)
	cooldown   uint16            // ticks between strikes
	orthoTicks uint8             // ticks to move one tile north, east, south or west
	diagTicks  uint8             // ticks to move one tile diagonally
}

// kinds lists the unit kinds; unit i of a player (i counted from 0) is an
// archer when i%4 == 3 and a soldier otherwise.
var kinds = [...]unitKind{
	{name: "soldier", hp: 320, rangeSq: determinism.FromFraction(9, 4), damage: 6, spread: 7, cooldown: 20, orthoTicks: 4, diagTicks: 6},
	{name: "archer", hp: 180, rangeSq: determinism.FromFraction(81, 4), damage: 4, spread: 5, cooldown: 30, orthoTicks: 5, diagTicks: 7},
}

const (
	soldier = 0
	archer  = 1
)

func kindOf(i int) uint8 {
	if i%4 == 3 {
		return archer
	}
	return soldier
}

// Input is one encoded command issued by a player, as [World.Step] takes it.
type Input struct {
	Player int
	Data   []byte
}

// unit is the state of one unit. Units live in World.units indexed by ID.
type unit struct {
	pos      determinism.Vec2 // position in tiles; a tile's centre is (x+½, y+½)
	id       int32            // the unit's own ID
	vel      determinism.Vec2 // displacement per tick of the current step
	hp       int32
	tile     int32  // padded index of the tile the unit stands on or steps to
	route    int32  // index in World.routes, or -1
	target   int32  // an Attack order's target, or -1
	auto     int32  // an enemy acquired by the unit itself, or -1
	life     uint32 // lives of this ID so far: 1 for the first unit
	tLife    uint32 // the life of target when the order was given
	aLife    uint32 // the life of auto when it was acquired
	next     int32  // next unit of the same spatial cell, or -1
	prev     int32  // previous unit of the same spatial cell, or -1
	cell     int32  // spatial cell, or -1 once dead
	cooldown uint16
	order    CommandKind // 0 when idle
	segLeft  uint8       // ticks left in the current step; 0 at a tile centre
	owner    uint8
	kind     uint8
	alive    bool
}

// World is the state of one game. It is not safe for concurrent use.
type World struct {
	cfg    Config
	layout layout
	frame  int64
	rng    *rng.PCG

	terrain
	grid
	routes routeTable

	units   []unit
	players []playerStats
	strikes uint64

	vel      [len(kinds)][8]determinism.Vec2 // per kind, per direction
	reroutes int                             // Attack reroutes this tick

	// Buffers reused from tick to tick.
	cmd      Command
	cmdUnits []UnitID
	hasher   *determinism.Hasher
	hashBuf  []byte
}

// playerStats are the running totals of one player.
type playerStats struct {
	alive, kills, losses, trained int
	// trainLeft counts down the ticks until the base trains a unit, while
	// the player has dead units.
	trainLeft int
}

// New creates the world cfg describes: it generates the map from cfg.Seed
// and places every player's units in its base. It returns an error wrapping
// [ErrInvalidConfig] if cfg does not validate.
func New(cfg Config) (*World, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &World{
		cfg:     cfg,
		layout:  layoutOf(cfg),
		rng:     rng.New(cfg.Seed, worldStream),
		hasher:  determinism.NewHasher(),
		players: make([]playerStats, cfg.Players),
	}
	w.terrain = generateTerrain(cfg, w.layout, w.rng.Derive("rts/map"), w.hasher)
	w.grid = newGrid(cfg)
	w.routes = newRouteTable()
	for k := range kinds {
		for d, o := range dirs {
			ticks := int64(kinds[k].orthoTicks)
			if o.dx != 0 && o.dy != 0 {
				ticks = int64(kinds[k].diagTicks)
			}
			w.vel[k][d] = determinism.Vec2{
				X: determinism.FromFraction(int64(o.dx), ticks),
				Y: determinism.FromFraction(int64(o.dy), ticks),
			}
		}
	}
	w.units = make([]unit, cfg.units())
	for p := range cfg.Players {
		w.players[p].trainLeft = trainTicks
		for i := range cfg.UnitsPerPlayer {
			w.spawn(int32(p*cfg.UnitsPerPlayer + i))
		}
	}
	return w, nil
}

// spawn brings unit id to life, idle and unhurt, on its starting tile.
func (w *World) spawn(id int32) {
	p, i := int(id)/w.cfg.UnitsPerPlayer, int(id)%w.cfg.UnitsPerPlayer
	t := w.layout.start(p, i)
	k := kindOf(i)
	u := &w.units[id]
	life := u.life + 1
	*u = unit{
		life:   life,
		id:     id,
		tile:   w.index(t.X, t.Y),
		hp:     kinds[k].hp,
		route:  -1,
		target: -1,
		auto:   -1,
		owner:  uint8(p),
		kind:   k,
		alive:  true,
	}
	u.pos = w.centre(u.tile)
	w.gridInsert(id, u)
	w.players[p].alive++
}

// train runs the players' bases, in player order: while a player has dead
// units its base counts trainTicks down, and at zero brings back its lowest
// dead ID and starts counting again.
func (w *World) train() {
	for p := range w.players {
		ps := &w.players[p]
		if ps.alive == w.cfg.UnitsPerPlayer {
			ps.trainLeft = trainTicks
			continue
		}
		ps.trainLeft--
		if ps.trainLeft > 0 {
			continue
		}
		ps.trainLeft = trainTicks
		lo := p * w.cfg.UnitsPerPlayer
		for id := lo; id < lo+w.cfg.UnitsPerPlayer; id++ {
			if !w.units[id].alive {
				w.spawn(int32(id))
				ps.trained++
				break
			}
		}
	}
}

// Config returns the configuration the world was created with.
func (w *World) Config() Config { return w.cfg }

// Frame returns the number of ticks stepped so far.
func (w *World) Frame() int64 { return w.frame }

// Step applies inputs in the given order, then advances the world one tick.
// The lockstep engine passes every member the same inputs in the same
// (canonical) order, so every member reaches the same state.
//
// An input that does not decode (error wrapping [ErrMalformedCommand]) or
// cannot apply (error wrapping [ErrInvalidCommand]: a player not in the game,
// a target off the map, an attack on a nonexistent or friendly unit) is
// skipped and reported in the returned slice, which is nil when every input
// applied. Units of a command that the player does not own, or that are
// dead, are ignored without an error, and so is an Attack on a dead unit:
// both happen in normal play, when a unit dies while the command is in
// flight. Step never panics, whatever the bytes.
//
// Within the tick, units act one by one in ascending ID order (see the
// package documentation for what one unit does).
func (w *World) Step(inputs []Input) []error {
	var errs []error
	for i, in := range inputs {
		if err := w.apply(in); err != nil {
			errs = append(errs, fmt.Errorf("frame %d, input %d (player %d): %w", w.frame, i, in.Player, err))
		}
	}
	w.reroutes = 0
	for id := range w.units {
		if w.units[id].alive {
			w.act(int32(id))
		}
	}
	w.train()
	w.frame++
	return errs
}

// apply decodes and executes one input.
func (w *World) apply(in Input) error {
	if in.Player < 0 || in.Player >= w.cfg.Players {
		return fmt.Errorf("%w: no player %d", ErrInvalidCommand, in.Player)
	}
	err := decodeCommand(in.Data, &w.cmd, w.cmdUnits)
	w.cmdUnits = w.cmd.Units[:0]
	if err != nil {
		return err
	}
	c := &w.cmd
	route, target := int32(-1), int32(-1)
	switch c.Kind {
	case Move, AttackMove:
		if c.Target.X >= w.cfg.MapWidth || c.Target.Y >= w.cfg.MapHeight {
			return fmt.Errorf("%w: target (%d, %d) off the %d×%d map", ErrInvalidCommand, c.Target.X, c.Target.Y, w.cfg.MapWidth, w.cfg.MapHeight)
		}
	case Attack:
		if int(c.TargetUnit) >= len(w.units) {
			return fmt.Errorf("%w: no unit %d", ErrInvalidCommand, c.TargetUnit)
		}
		if w.cfg.owner(c.TargetUnit) == in.Player {
			return fmt.Errorf("%w: player %d attacks its own unit %d", ErrInvalidCommand, in.Player, c.TargetUnit)
		}
		target = int32(c.TargetUnit)
		if !w.units[target].alive {
			return nil
		}
	}
	// The selection: units the player owns that are alive.
	lo := UnitID(in.Player * w.cfg.UnitsPerPlayer)
	hi := lo + UnitID(w.cfg.UnitsPerPlayer)
	found := false
	for _, id := range c.Units {
		if id >= lo && id < hi && w.units[id].alive {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	switch c.Kind {
	case Move, AttackMove:
		route = w.acquireRoute(w.index(c.Target.X, c.Target.Y))
	case Attack:
		route = w.acquireRoute(w.units[target].tile)
	}
	for _, id := range c.Units {
		if id >= lo && id < hi && w.units[id].alive {
			w.setOrder(&w.units[id], c.Kind, route, target)
			if target >= 0 {
				w.units[id].tLife = w.units[target].life
			}
		}
	}
	return nil
}

// setOrder gives u a new order (kind 0 or Stop: idle). The unit forgets the
// enemy it acquired by itself.
func (w *World) setOrder(u *unit, kind CommandKind, route, target int32) {
	if route >= 0 {
		w.routes.hold(route)
	}
	if u.route >= 0 {
		w.routes.release(u.route)
	}
	if kind == Stop {
		kind = 0
	}
	u.order, u.route, u.target, u.auto = kind, route, target, -1
	u.tLife, u.aLife = 0, 0
}

// lives reports whether unit t is alive in the given life: an order against
// a unit does not carry over to the replacement its base trains.
func (w *World) lives(t int32, life uint32) bool {
	v := &w.units[t]
	return v.alive && v.life == life
}
