package reckon

import (
	"fmt"
	"time"
)

// State is an entity's motion at one moment: position, velocity (per second)
// and acceleration (per second squared) at time At.
//
// At is on the session's shared timeline (for example the lockstep frame
// clock, which members keep aligned), not on a member's local clock: a
// receiver predicts an update forward from its At to its own now, and that
// is what hides the update's network delay.
type State[V Vector[V]] struct {
	Pos, Vel, Acc V
	At            time.Duration
}

// State2 is a State in the plane.
type State2 = State[Vec2]

// State3 is a State in space.
type State3 = State[Vec3]

// Predictor names the motion model that owner and receivers extrapolate
// with. An owner and the receivers of its entity must use the same one.
type Predictor uint8

const (
	// ConstantVelocity extrapolates Pos + Vel·Δt; it ignores Acc and
	// predicts a zero acceleration.
	ConstantVelocity Predictor = iota
	// ConstantAcceleration extrapolates Pos + Vel·Δt + Acc·Δt²/2 and
	// Vel + Acc·Δt. It follows curves and speed changes better while they
	// last, and overshoots further when they stop (the slides: "acceleration
	// may be better but errors may make things worse").
	ConstantAcceleration
)

// String returns "constant-velocity" or "constant-acceleration".
func (p Predictor) String() string {
	switch p {
	case ConstantVelocity:
		return "constant-velocity"
	case ConstantAcceleration:
		return "constant-acceleration"
	}
	return fmt.Sprintf("Predictor(%d)", uint8(p))
}

// Predict returns s extrapolated under p to time at (earlier or later than
// s.At). It panics if p is not one of the package's predictors.
func (s State[V]) Predict(p Predictor, at time.Duration) State[V] {
	dt := (at - s.At).Seconds()
	switch p {
	case ConstantVelocity:
		return State[V]{Pos: s.Pos.Add(s.Vel.Scale(dt)), Vel: s.Vel, At: at}
	case ConstantAcceleration:
		return State[V]{
			Pos: s.accelPos(dt),
			Vel: s.Vel.Add(s.Acc.Scale(dt)),
			Acc: s.Acc,
			At:  at,
		}
	}
	panic("reckon: unknown predictor " + p.String())
}

// PredictPos returns s.Predict(p, at).Pos, the same value, computing only
// the position. It panics if p is not one of the package's predictors.
func (s State[V]) PredictPos(p Predictor, at time.Duration) V {
	dt := (at - s.At).Seconds()
	switch p {
	case ConstantVelocity:
		return s.Pos.Add(s.Vel.Scale(dt))
	case ConstantAcceleration:
		return s.accelPos(dt)
	}
	panic("reckon: unknown predictor " + p.String())
}

// accelPos is the position ConstantAcceleration predicts dt seconds after
// s.At.
func (s State[V]) accelPos(dt float64) V {
	return s.Pos.Add(s.Vel.Scale(dt)).Add(s.Acc.Scale(dt * dt / 2))
}
