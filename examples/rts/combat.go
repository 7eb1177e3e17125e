package rts

import "github.com/phalanx-net/phalanx/determinism"

// act is one unit's turn within a tick:
//
//  1. its cooldown counts down;
//  2. it picks its target: an Attack order's target while that lives (else
//     the order ends); otherwise the enemy it acquired itself while that
//     lives and stays within leashTiles; otherwise, if it is idle or on an
//     AttackMove and it is its scan tick, the nearest enemy in sight;
//  3. with a target in range it strikes when its cooldown is 0 and does not
//     start a new step; out of range, at a tile centre, it steps toward the
//     target; with no target, at a tile centre, it steps along its Move or
//     AttackMove route, and the order ends at the route's end;
//  4. it advances along its current step.
func (w *World) act(id int32) {
	u := &w.units[id]
	if u.cooldown > 0 {
		u.cooldown--
	}
	t := int32(-1)
	if u.order == Attack {
		if w.lives(u.target, u.tLife) {
			t = u.target
		} else {
			w.setOrder(u, 0, -1, -1)
		}
	}
	if t < 0 && u.auto >= 0 {
		if w.lives(u.auto, u.aLife) && w.chebyshev(u.tile, w.units[u.auto].tile) <= leashTiles {
			t = u.auto
		} else {
			u.auto = -1
		}
	}
	if t < 0 && (u.order == 0 || u.order == AttackMove) && (w.frame+int64(id))%scanPeriod == 0 {
		t = w.scan(u)
		u.auto = t
		if t >= 0 {
			u.aLife = w.units[t].life
		}
	}
	switch {
	case t >= 0:
		v := &w.units[t]
		k := &kinds[u.kind]
		if u.pos.DistSq(v.pos) <= k.rangeSq {
			if u.cooldown == 0 {
				w.strike(id, t)
			}
		} else if u.segLeft == 0 {
			w.chase(u, t)
		}
	case u.segLeft == 0 && (u.order == Move || u.order == AttackMove):
		if !w.followRoute(u) {
			w.setOrder(u, 0, -1, -1)
		}
	}
	if u.segLeft > 0 {
		u.segLeft--
		if u.segLeft == 0 {
			u.pos = w.centre(u.tile)
			u.vel = determinism.Vec2{}
		} else {
			u.pos = u.pos.Add(u.vel)
		}
	}
}

// strike makes unit a hit unit t: one rng draw for the damage.
func (w *World) strike(a, t int32) {
	u, v := &w.units[a], &w.units[t]
	k := &kinds[u.kind]
	dmg := k.damage + w.rng.Uint32N(k.spread)
	u.cooldown = k.cooldown
	w.strikes++
	v.hp -= int32(dmg)
	if v.hp <= 0 {
		v.hp = 0
		w.kill(t)
		w.players[u.owner].kills++
	}
}

// kill removes unit t from play. Its slot and ID stay; it no longer acts,
// is no longer seen, and commands naming it ignore it.
func (w *World) kill(t int32) {
	v := &w.units[t]
	w.setOrder(v, 0, -1, -1)
	w.gridRemove(t, v)
	v.alive = false
	v.vel = determinism.Vec2{}
	v.segLeft = 0
	v.cooldown = 0
	w.players[v.owner].alive--
	w.players[v.owner].losses++
}

// chase steps u (at a tile centre, out of range) toward its target t.
func (w *World) chase(u *unit, t int32) {
	tt := w.units[t].tile
	if u.tile == tt {
		return // the target is stepping away from this tile: wait
	}
	if t == u.auto {
		// An enemy the unit found itself is near: close in greedily, or
		// give it up when an obstacle is in the way.
		if !w.greedyStep(u, tt) {
			u.auto = -1
		}
		return
	}
	if w.chebyshev(u.tile, tt) <= chaseTiles && w.greedyStep(u, tt) {
		return
	}
	if w.followRoute(u) {
		return
	}
	// At the end of its route, and the target has moved on: route again to
	// the target's tile, within the tick's budget.
	if w.routes.list[u.route].target != tt && w.reroutes < maxReroutesPerTick {
		w.reroutes++
		r := w.acquireRoute(tt)
		life := u.tLife
		w.setOrder(u, Attack, r, t)
		u.tLife = life
		w.followRoute(u)
	}
}

// startStep starts u's step in direction d; its tile becomes the
// destination at once.
func (w *World) startStep(u *unit, d int) {
	k := &kinds[u.kind]
	u.tile += w.nbr[d]
	u.vel = w.vel[u.kind][d]
	if d < 4 {
		u.segLeft = k.orthoTicks
	} else {
		u.segLeft = k.diagTicks
	}
	w.gridUpdate(u)
}

// followRoute steps u along its route: to the first neighbour, in
// direction order, one step closer to the route's target. It reports false
// when there is none (the unit is at the end of its route).
func (w *World) followRoute(u *unit) bool {
	if u.route < 0 {
		return false
	}
	i := u.tile
	dist := w.reach(&w.routes.list[u.route], i)
	d := dist[i]
	if d <= 1 {
		return false
	}
	for k := range dirs {
		j := i + w.nbr[k]
		if dist[j] == d-1 && w.passable(i, k) {
			w.startStep(u, k)
			return true
		}
	}
	return false
}

// greedyStep steps u toward tile t: to the passable neighbour with the
// smallest squared distance to t, if smaller than u's own (ties: the first
// in direction order). It reports whether u moved.
func (w *World) greedyStep(u *unit, t int32) bool {
	i := u.tile
	tx, ty := int(w.tileX[t]), int(w.tileY[t])
	best, bestD := -1, sq(int(w.tileX[i])-tx)+sq(int(w.tileY[i])-ty)
	for k := range dirs {
		j := i + w.nbr[k]
		d := sq(int(w.tileX[j])-tx) + sq(int(w.tileY[j])-ty)
		if d < bestD && w.passable(i, k) {
			best, bestD = k, d
		}
	}
	if best < 0 {
		return false
	}
	w.startStep(u, best)
	return true
}

func sq(x int) int { return x * x }

// scan returns the nearest enemy in sight of u (ties: lowest ID), or -1.
func (w *World) scan(u *unit) int32 {
	best := int32(-1)
	var bestD determinism.Fixed
	sight := determinism.FromInt(sightTiles * sightTiles)
	cx, cy := int(u.cell)%w.cellsW, int(u.cell)/w.cellsW
	own := int(u.owner)
	for y := max(cy-1, 0); y <= min(cy+1, w.cellsH-1); y++ {
		for x := max(cx-1, 0); x <= min(cx+1, w.cellsW-1); x++ {
			c := y*w.cellsW + x
			if w.cellCount[c] == w.cellPlayers[c*w.cfg.Players+own] {
				continue // no enemy in this cell
			}
			for j := w.cellHead[c]; j >= 0; j = w.units[j].next {
				v := &w.units[j]
				if int(v.owner) == own {
					continue
				}
				d := u.pos.DistSq(v.pos)
				if d > sight {
					continue
				}
				if best < 0 || d < bestD || (d == bestD && j < best) {
					best, bestD = j, d
				}
			}
		}
	}
	return best
}
