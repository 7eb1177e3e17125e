package rts

import "math/bits"

// route is a flow field toward one target tile, shared by every unit whose
// order leads there. dist[i] is 1 + the number of steps from padded tile i
// to the target (the target itself holds 1), 0 on an open tile from which
// the target cannot be reached (a path longer than 65533 steps counts as
// unreachable), and 0xFFFF on a blocked tile.
//
// The field is computed as far as it is read: its breadth-first search
// stops where the tiles asked for are reached (reach) and resumes from
// queue[head:tail] when a farther one is asked for. A tile's value is
// final once set, and every tile nearer the target is set before it, so a
// unit reading its own tile's value and its neighbours' sees the values of
// the whole field. Until the search has ended, 0 also means not reached yet.
type route struct {
	target     int32
	refs       int32 // units holding the route
	inUse      bool
	dist       []uint16
	queue      []int32 // the search's queue: tiles in the order they were reached
	head, tail int32   // tiles queue[:head] were expanded, queue[head:tail] are waiting
}

// routeTable pools routes: an unused route's field is reused by the next
// one, so steady play allocates nothing.
type routeTable struct {
	list []route
	free []int32 // unused entries, reused last in first out
}

func newRouteTable() routeTable {
	return routeTable{free: make([]int32, 0, 64)}
}

// hold records one more unit on route i.
func (rt *routeTable) hold(i int32) { rt.list[i].refs++ }

// release records one unit fewer on route i and frees it when none is left.
func (rt *routeTable) release(i int32) {
	r := &rt.list[i]
	r.refs--
	if r.refs == 0 {
		r.inUse = false
		rt.free = append(rt.free, i)
	}
}

// live returns the number of routes in use.
func (rt *routeTable) live() int { return len(rt.list) - len(rt.free) }

// acquireRoute returns a route to padded tile target: the route in use with
// that target if there is one (the lowest index), otherwise a new one,
// computed at once. The caller must hold it (routeTable.hold) before
// anything else releases routes.
//
// The field is a breadth-first search from the target in which every step,
// orthogonal or diagonal, costs 1 and a diagonal step may not cut a corner.
// Tiles are expanded in queue order and each tile's neighbours are visited
// in direction order (N, E, S, W, NE, SE, SW, NW). A blocked target is
// allowed as the source: the units then stop on an open tile beside it.
func (w *World) acquireRoute(target int32) int32 {
	rt := &w.routes
	for i := range rt.list {
		if rt.list[i].inUse && rt.list[i].target == target {
			return int32(i)
		}
	}
	var i int32
	if n := len(rt.free); n > 0 {
		i = rt.free[n-1]
		rt.free = rt.free[:n-1]
	} else {
		i = int32(len(rt.list))
		if len(rt.list) < cap(rt.list) {
			rt.list = rt.list[:i+1] // reuse the field left in the backing array
		} else {
			rt.list = append(rt.list, route{})
		}
		if len(rt.list[i].dist) != len(w.open) {
			rt.list[i].dist = make([]uint16, len(w.open))
			rt.list[i].queue = make([]int32, len(w.open))
		}
	}
	r := &rt.list[i]
	r.target, r.refs, r.inUse = target, 0, true
	w.fillRoute(r)
	return i
}

// fillRoute starts r's field toward r.target: the target alone is
// reached; reach computes the rest as it is read.
func (w *World) fillRoute(r *route) {
	copy(r.dist, w.blank)
	if len(r.queue) != len(r.dist) {
		r.queue = make([]int32, len(r.dist))
	}
	r.queue[0] = r.target
	r.dist[r.target] = 1
	r.head, r.tail = 0, 1
}

// reach goes on with r's search until tile i is reached or the search has
// ended, and returns r's field, final for i and every tile nearer the
// target.
func (w *World) reach(r *route, i int32) []uint16 {
	dist, q := r.dist, r.queue
	if dist[i] != 0 {
		return dist
	}
	pass := w.pass
	head, tail := r.head, r.tail
	for ; head < tail && dist[i] == 0; head++ {
		t := q[head]
		nd := dist[t] + 1
		if nd == 0xFFFF {
			continue
		}
		for m := pass[t]; m != 0; m &= m - 1 {
			j := t + w.nbr[bits.TrailingZeros8(m)]
			if dist[j] == 0 {
				dist[j] = nd
				q[tail] = j
				tail++
			}
		}
	}
	r.head, r.tail = head, tail
	return dist
}
