package reckon

import (
	"fmt"
	"time"
)

// Method is how a receiver moves the displayed entity from where it shows it
// to where a new update says it is. Every method but Snap takes a
// convergence time T: from the update's arrival t0 to t0+T the displayed
// position follows a curve from the displayed position P0 to P3, the new
// prediction's position at t0+T; from t0+T on it follows the new prediction
// exactly. With u = (t−t0)/T, v0 the displayed velocity at t0 and v3 the new
// prediction's velocity at t0+T:
//
//	Snap       displayed = new prediction, at once
//	Linear     P0 + (P3−P0)·u: a straight segment at constant velocity
//	Quadratic  P0 + v0·τ + a·τ²/2 (τ = t−t0), a = 2·(P3−P0−v0·T)/T²
//	Cubic      Bézier P0, P0 + v0·T/3, P3 − v3·T/3, P3
//
// Snap jumps. Linear keeps the position continuous; its velocity jumps when
// the correction starts and again when it ends. Quadratic also starts with
// the displayed velocity and only its end velocity jumps (the slides' "prob:
// final velocity"). Cubic keeps the velocity continuous at both ends.
type Method uint8

const (
	Snap Method = iota
	Linear
	Quadratic
	Cubic
)

var methodNames = [...]string{Snap: "snap", Linear: "linear", Quadratic: "quadratic", Cubic: "cubic"}

// String returns "snap", "linear", "quadratic" or "cubic".
func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", uint8(m))
}

// MarshalText returns the method's name, so that a map[Method]Metrics
// encodes as a JSON object keyed "snap", "linear", "quadratic", "cubic".
func (m Method) MarshalText() ([]byte, error) {
	if int(m) >= len(methodNames) {
		return nil, fmt.Errorf("reckon: unknown method %d", uint8(m))
	}
	return []byte(methodNames[m]), nil
}

// UnmarshalText sets m from its name.
func (m *Method) UnmarshalText(text []byte) error {
	for i, name := range methodNames {
		if string(text) == name {
			*m = Method(i)
			return nil
		}
	}
	return fmt.Errorf("reckon: unknown method %q", text)
}

// Smoothing is how one entity is shown: the predictor its owner uses, the
// convergence method and the convergence time T. A Method other than Snap
// with a T of zero or less behaves as Snap.
type Smoothing struct {
	Predictor Predictor     // the entity owner's predictor
	Method    Method        // how to converge on a new prediction
	Converge  time.Duration // T: how long a convergence takes
}

// A Smoother turns the authoritative states of one entity, which arrive now
// and then, into the state to display at any moment. It is not safe for
// concurrent use.
//
// Every correction is a cubic Bézier curve over [t0, t0+T] (Linear and
// Quadratic are exact degree elevations of their line and parabola), so one
// evaluation serves all methods.
type Smoother[V Vector[V]] struct {
	cfg     Smoothing
	started bool
	target  State[V]      // the newest authoritative state
	start   time.Duration // t0, when the correction began
	end     time.Duration // t0 + T; the correction is over from here on
	p       [4]V          // the correction's Bézier control points
}

// NewSmoother returns a Smoother that shows nothing until its first
// [Smoother.Correct]. It panics if cfg names an unknown predictor or method.
func NewSmoother[V Vector[V]](cfg Smoothing) *Smoother[V] {
	if cfg.Predictor > ConstantAcceleration {
		panic("reckon: unknown predictor " + cfg.Predictor.String())
	}
	if cfg.Method > Cubic {
		panic("reckon: unknown method " + cfg.Method.String())
	}
	return &Smoother[V]{cfg: cfg}
}

// Started reports whether the smoother has had a state to show.
func (s *Smoother[V]) Started() bool { return s.started }

// Correct takes a new authoritative state at time now and starts converging
// on its prediction from whatever is displayed at now. The first state is
// shown at once, whatever the method. Correct does not judge whether the
// state is newer than the last; [Receiver] does.
func (s *Smoother[V]) Correct(now time.Duration, authoritative State[V]) {
	if !s.started || s.cfg.Method == Snap || s.cfg.Converge <= 0 {
		s.started = true
		s.target = authoritative
		s.start, s.end = now, now
		return
	}
	shown := s.At(now)
	T := s.cfg.Converge
	goal := authoritative.Predict(s.cfg.Predictor, now+T)
	tt := T.Seconds()
	p0, p3 := shown.Pos, goal.Pos
	var p1, p2 V
	switch s.cfg.Method {
	case Linear:
		third := p3.Sub(p0).Scale(1.0 / 3)
		p1, p2 = p0.Add(third), p3.Sub(third)
	case Quadratic:
		// The parabola's control points are P0, P0 + v0·T/2, P3; raised to
		// degree three they become these.
		lead := shown.Vel.Scale(tt / 3)
		p1 = p0.Add(lead)
		p2 = p0.Scale(2.0 / 3).Add(p3.Scale(1.0 / 3)).Add(lead)
	case Cubic:
		p1 = p0.Add(shown.Vel.Scale(tt / 3))
		p2 = p3.Sub(goal.Vel.Scale(tt / 3))
	}
	s.target = authoritative
	s.start, s.end = now, now+T
	s.p = [4]V{p0, p1, p2, p3}
}

// At returns the state to display at time now: on a correction's curve while
// it lasts, the newest authoritative state's prediction after it. Before the
// first Correct it returns the zero State. Times before the current
// correction began are shown as its start.
func (s *Smoother[V]) At(now time.Duration) State[V] {
	if !s.started {
		return State[V]{}
	}
	if now >= s.end {
		return s.target.Predict(s.cfg.Predictor, now)
	}
	tt, u, w := s.curve(now)
	p := &s.p
	d01, d12, d23 := p[1].Sub(p[0]), p[2].Sub(p[1]), p[3].Sub(p[2])
	return State[V]{
		Pos: s.curvePos(u, w),
		Vel: d01.Scale(w * w).Add(d12.Scale(2 * w * u)).Add(d23.Scale(u * u)).Scale(3 / tt),
		Acc: d12.Sub(d01).Scale(w).Add(d23.Sub(d12).Scale(u)).Scale(6 / (tt * tt)),
		At:  now,
	}
}

// Pos returns At(now).Pos, the same value, without the velocity and
// acceleration At also computes.
func (s *Smoother[V]) Pos(now time.Duration) V {
	if !s.started {
		var zero V
		return zero
	}
	if now >= s.end {
		return s.target.PredictPos(s.cfg.Predictor, now)
	}
	_, u, w := s.curve(now)
	return s.curvePos(u, w)
}

// Until returns when the current correction ends: once started,
// Converging(now) reports now < Until(). It changes only with Correct.
func (s *Smoother[V]) Until() time.Duration { return s.end }

// Converging reports whether At(now) is on a correction's curve: whether
// it depends on the method. Otherwise, At(now) is the newest
// authoritative state's prediction (or the zero State before the first),
// whatever the method.
func (s *Smoother[V]) Converging(now time.Duration) bool { return s.started && now < s.end }

// curve returns the current correction's length in seconds and the
// parameters u and w = 1−u of its curve at now, which is before its end.
func (s *Smoother[V]) curve(now time.Duration) (tt, u, w float64) {
	tt = (s.end - s.start).Seconds()
	u = max((now-s.start).Seconds()/tt, 0)
	return tt, u, 1 - u
}

// curvePos returns the position on the current correction's curve at the
// parameters u and w = 1−u.
func (s *Smoother[V]) curvePos(u, w float64) V {
	p := &s.p
	return p[0].Scale(w * w * w).Add(p[1].Scale(3 * w * w * u)).Add(p[2].Scale(3 * w * u * u)).Add(p[3].Scale(u * u * u))
}
