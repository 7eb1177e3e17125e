// Package rts is a small deterministic real-time strategy simulation, the
// game Phalanx's tests, the "phalanx sim" and "phalanx mesh" commands and
// the benchmarks run. It has no networking: a [World] advances one tick per
// [World.Step] from the commands it is given, and two worlds built from the
// same [Config] and stepped with the same inputs are identical bit for bit
// on every platform (integer and [determinism.Fixed] arithmetic only, no
// map iteration, one seeded generator).
//
// # The game
//
// Players (up to 16) each start with an army in a base on a ring around the
// map; the map is a grid of open and blocked tiles drawn from Config.Seed,
// whose open tiles always form one connected region. Unit IDs are assigned
// by player: player p owns p*UnitsPerPlayer up to (p+1)*UnitsPerPlayer-1.
// Every fourth unit of a player (i%4 == 3) is an archer, the others are
// soldiers:
//
//	kind     hp   range  damage     cooldown  ticks per step (straight, diagonal)
//	soldier  320  1.5    6+U[0,7)   20        4, 6
//	archer   180  4.5    4+U[0,5)   30        5, 7
//
// Ranges are Euclidean distances between unit positions, in tiles. A unit
// sees enemies within 6 tiles.
//
// Commands ([Command]) select units of the issuing player and order them to
// [Move] to a tile, [AttackMove] to a tile, [Attack] an enemy unit, or
// [Stop]. A unit moves from tile centre to tile centre: one step goes to
// one of the 8 neighbouring tiles at a constant velocity for a fixed number
// of ticks, at the end of which the position is set exactly to the new
// centre. Diagonal steps may not cut the corner of a blocked tile. Orders
// take effect when the unit next stands on a tile centre.
//
// # One tick
//
// [World.Step] first applies its inputs in the given order, then lets every
// living unit act once, in ascending ID order, then lets the bases train
// (below). A unit:
//
//  1. counts its cooldown down;
//  2. picks a target: the target of its Attack order while that lives (else
//     the order ends); else an enemy it acquired itself while that lives and
//     is within 10 tiles in both axes; else, if it is idle or on an
//     AttackMove and (frame + ID) % 4 == 0, it scans for the nearest enemy
//     within sight (squared Euclidean distance; ties go to the lower ID) and
//     acquires it;
//  3. with a target in range: strikes if its cooldown is 0 (and starts no
//     new step); with a target out of range and standing on a tile centre:
//     steps toward it (see Pathing); with no target, on a tile centre, and a
//     Move or AttackMove order: steps along the order's route, and the order
//     ends (the unit becomes idle) at the route's end;
//  4. moves along its current step.
//
// A strike deals damage drawn from the world's generator and restarts the
// cooldown; a unit whose hit points fall to 0 or below dies at once: it
// leaves the spatial grid, releases its route, and no longer acts, is no
// longer seen or struck, and is ignored by commands. Units later in the same
// tick therefore see it dead.
//
// After the units, each player's base (in player order) trains: while the
// player has dead units, a countdown of 30 ticks runs, and at zero the lowest
// dead ID of the player comes back to life, unhurt and idle, on its starting
// tile. The replacement is a new life of the ID: orders and targets aimed at
// the dead unit do not carry over to it. So the armies are replenished at a
// steady rate and the fighting goes on for as long as the game runs.
//
// # Pathing
//
// A Move, AttackMove or Attack command computes one route for all the units
// it orders: a flow field, the breadth-first-search distance from the
// target tile to every open tile (computed as far as the units read it),
// where every step (straight or diagonal) costs 1, diagonal steps may not
// cut corners, and neighbours are explored
// in the fixed direction order north, east, south, west, north-east,
// south-east, south-west, north-west (north is -Y). Routes to the same
// target tile are shared while in use. A unit on a route steps to the first
// neighbour, in direction order, whose distance is one less than its own;
// the route ends where there is none (the target, or beside a blocked
// target). Every open tile is reachable, so no order can get stuck.
//
// A unit chasing a target it acquired itself, or an Attack target within 6
// tiles in both axes, steps greedily: to the passable neighbour with the
// smallest squared distance (in whole tiles) to the target's tile, if
// smaller than its own, ties going to the first in direction order; on the
// target's own tile it waits. If no neighbour is closer, a self-acquired
// target is dropped; an Attack order
// follows its route instead and, at the route's end, routes again to the
// target's current tile (at most 2 such re-routes per tick, in unit ID
// order; the others wait for a later tick).
//
// # Random draws
//
// The world owns one generator, rng.New(Config.Seed, 0x727473). The map is
// drawn from its derived stream Derive("rts/map") (which does not advance
// it) in the order documented on the map generator; after that, the only
// draws are the strikes': each strike draws once with Uint32N(spread), in
// the order the strikes happen (ascending attacker ID within a tick).
//
// # Command encoding
//
// [Command.AppendBinary] and [DecodeCommand] define a compact, canonical
// binary form: a kind byte, a varint unit count, the unit IDs as a varint
// followed by varint gaps, then the target. The decoder rejects anything
// else with [ErrMalformedCommand] and never panics. docs/rts.md in the
// repository describes the encoding byte by byte.
//
// # State hash
//
// [World.HashSections] writes the state in the sections "frame", "map",
// "units", "rng" and "players"; [World.Hash] is their sum. [World.Perturb]
// changes one value, to test desync detection.
//
// Nothing in this package is safe for concurrent use.
//
//phalanx:deterministic
package rts
