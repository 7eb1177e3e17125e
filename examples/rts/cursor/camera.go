package cursor

import (
	"math"
	"time"

	"github.com/phalanx-net/phalanx/reckon"
)

// Cameras and interest: each member's camera looks at the part of the map
// around its own cursor (a view of ViewWidth × ViewHeight tiles centred on
// it), and with Config.Interest the owner of a cursor sends each other
// member the updates its camera needs (reckon.Filter): every one while the
// cursor is within the camera plus a margin, fewer the farther it is.

// Defaults of a Config's zero view.
const (
	DefaultViewWidth  = 32.0 // tiles: a quarter of the default 128-tile map's width
	DefaultViewHeight = 20.0
)

// mapSide is the side of the default map, in tiles; baseRadius the
// distance of the players' bases from its middle, where the cursors start.
const (
	mapSide    = 128.0
	baseRadius = 44.0
)

// Base returns where member's cursor starts, of members: on a circle about
// the middle of the default map, like the players' bases. A cursor's
// updates carry its position relative to its base (reckon.Path starts at the
// origin), which every member adds back: a fixed offset per cursor, known
// to all, that changes no prediction.
func Base(member, members int) reckon.Vec2 {
	a := 2 * math.Pi * float64(member) / float64(max(1, members))
	return reckon.Vec2{X: 64 + baseRadius*math.Cos(a), Y: 64 + baseRadius*math.Sin(a)}
}

// MaxSpeed is the fastest a cursor, and so a camera, moves: reckon.Path's
// top speed, in tiles per second.
const MaxSpeed = 6.0

// camera returns this member's own camera.
func (s *Share) camera() reckon.Rect {
	return reckon.Around(s.worlds[s.cfg.Self], s.cfg.ViewWidth, s.cfg.ViewHeight)
}

// cameraOf returns where member's camera was when we last heard of its
// cursor (over its base before that), and how far it may have moved since:
// MaxSpeed times the time passed. An owner that judged another's camera by
// a prediction of it could be wrong by more than any margin after a few
// seconds of thinned updates; this bound holds however the cursor moved.
func (s *Share) cameraOf(member int, now time.Duration) (reckon.Rect, float64) {
	c, since := s.bases[member], s.start
	if s.heardAny[member] {
		c, since = s.world(member, s.heard[member].Pos), s.heard[member].At
	}
	return reckon.Around(c, s.cfg.ViewWidth, s.cfg.ViewHeight), MaxSpeed * max(0, (now-since).Seconds())
}

// world returns member's cursor position p (relative to its base) on the
// map: from its base, folded into the map at its edges (reflected, so that
// the cursor moves on without a jump, and a displayed cursor is never
// farther from the true one on the map than off it).
func (s *Share) world(member int, p reckon.Vec2) reckon.Vec2 {
	return onMap(p, s.bases[member])
}

// onMap is world for a cursor whose base is base.
func onMap(p, base reckon.Vec2) reckon.Vec2 {
	w := p.Add(base)
	return reckon.Vec2{X: fold(w.X, mapSide), Y: fold(w.Y, mapSide)}
}

// fold reflects v into [0, side].
func fold(v, side float64) float64 {
	if v >= 0 && v < 2*side {
		// math.Mod would return v itself: the same result without
		// the division (most positions are on the map).
		if v > side {
			return 2*side - v
		}
		return v
	}
	return foldMod(v, side)
}

// foldMod is fold through math.Mod, for any v.
func foldMod(v, side float64) float64 {
	v = math.Mod(v, 2*side)
	if v < 0 {
		v += 2 * side
	}
	if v > side {
		v = 2*side - v
	}
	return v
}

// TickTo is Tick for an owner that sends to each member on its own: send
// is called with the member and the update. Without Config.Interest every
// member gets every update; with it, each gets those its camera needs, and
// a catch-up of the cursor's current state when it comes within the margin
// of its camera after updates were held back.
func (s *Share) TickTo(now time.Duration, send func(to int, update []byte)) {
	u, ok := s.observe(now)
	var data []byte
	if ok {
		data = reckon.AppendUpdate(nil, u)
	}
	own := s.worlds[s.cfg.Self]
	var id uint64 // u's in the sent states' numbering (sentWorld)
	if ok {
		s.lastID++
		id = s.lastID
	}
	for m := range s.cfg.Members {
		if m == s.cfg.Self {
			continue
		}
		if s.filters == nil {
			if ok {
				send(m, data)
			}
			continue
		}
		// Where the cursor is, or where the member shows it (predicted from
		// the last update it got), whichever is nearer its camera: a
		// display gone astray on its screen needs updates as much as the
		// cursor itself.
		// Where the member shows it: predicted from the last update sent,
		// or from the one before when the last was lost.
		view, slack := s.cameraOf(m, now)
		var out [3]reckon.Vec2 // how far each lies outside the view, by axis
		n := 1
		out[0] = view.Outside(own)
		for k := range min(s.toSent[m], len(s.toLast[m])) {
			out[n] = view.Outside(s.sentWorld(s.toLastID[m][k], &s.toLast[m][k], now))
			n++
		}
		d := nearest(out[:n])
		d = max(0, d-slack)
		if !s.filters[m].Pass(now, d, ok) {
			continue
		}
		if !ok {
			u = s.owner.Now(s.truths[s.cfg.Self])
			data = reckon.AppendUpdate(nil, u)
			s.catchUps++
			s.lastID++
			id = s.lastID
		}
		send(m, data)
		s.toLast[m][1], s.toLast[m][0] = s.toLast[m][0], u.State
		s.toLastID[m][1], s.toLastID[m][0] = s.toLastID[m][0], id
		s.toSent[m]++
	}
	s.measure(now)
}

// sentWorld returns where state st, number id of the states sent (one of
// toLast), predicts our cursor at now, on the map. Most members were last
// sent the same few states: each is predicted once per time (the same
// value as predicting it for each).
func (s *Share) sentWorld(id uint64, st *reckon.State2, now time.Duration) reckon.Vec2 {
	e := &s.predicted[id%uint64(len(s.predicted))]
	if e.id != id || e.at != now {
		e.id, e.at = id, now
		e.pos = s.world(s.cfg.Self, st.PredictPos(reckon.ConstantAcceleration, now))
	}
	return e.pos
}

// predictedSent is an entry of Share.predicted.
type predictedSent struct {
	id  uint64 // 0: none
	at  time.Duration
	pos reckon.Vec2
}

// nearest returns the smallest Len of outs, taking only the lengths of
// those whose squared length is within a relative 10⁻⁹ of the smallest
// (the others' lengths are certainly larger: the rounding errors of Dot
// and Len are a few units in the last place), unless squares so small
// could have lost precision.
func nearest(outs []reckon.Vec2) float64 {
	least := math.Inf(1)
	for _, o := range outs {
		least = min(least, o.Dot(o))
	}
	if least != least {
		return least // a NaN among them, as min over the lengths gives
	}
	d := math.Inf(1)
	for _, o := range outs {
		if least < 1e-200 || o.Dot(o) <= least*(1+1e-9) {
			d = min(d, o.Len())
		}
	}
	return d
}

// CatchUps returns how many catch-up updates TickTo sent.
func (s *Share) CatchUps() int { return s.catchUps }

// OnScreen returns the share of the frames in which another cursor was
// displayed that it was on this member's screen.
func (s *Share) OnScreen() float64 {
	if s.shown == 0 {
		return 0
	}
	return float64(s.onScreen) / float64(s.shown)
}

// VisibleMetrics returns, per convergence method, the error of the other
// cursors over the frames in which they were on this member's screen
// (their true or their displayed position within the camera): the error a
// player can see, its mean and 99th percentile over all those frames of
// all cursors together. Only ErrorMean and ErrorP99 are set; all is zero
// without Config.OnScreen.
func (s *Share) VisibleMetrics() map[reckon.Method]reckon.Metrics {
	out := make(map[reckon.Method]reckon.Metrics)
	for k := range s.visible {
		mt := s.visible[k].Metrics()
		out[reckon.Method(k)] = reckon.Metrics{ErrorMean: mt.ErrorMean, ErrorP99: mt.ErrorP99}
	}
	return out
}
