package reckon

import (
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

func near(a, b Vec2, tol float64) bool { return dist(a, b) <= tol }

func TestPredict(t *testing.T) {
	s := State2{Pos: Vec2{1, 2}, Vel: Vec2{3, -1}, Acc: Vec2{2, 4}, At: time.Second}
	tests := []struct {
		p    Predictor
		at   time.Duration
		want State2
	}{
		{ConstantVelocity, 3 * time.Second, State2{Pos: Vec2{7, 0}, Vel: Vec2{3, -1}, At: 3 * time.Second}},
		{ConstantVelocity, 0, State2{Pos: Vec2{-2, 3}, Vel: Vec2{3, -1}, At: 0}},
		{ConstantAcceleration, 3 * time.Second, State2{Pos: Vec2{11, 8}, Vel: Vec2{7, 7}, Acc: Vec2{2, 4}, At: 3 * time.Second}},
		{ConstantAcceleration, 0, State2{Pos: Vec2{-1, 5}, Vel: Vec2{1, -5}, Acc: Vec2{2, 4}, At: 0}},
		{ConstantAcceleration, time.Second, s},
	}
	for _, tt := range tests {
		if got := s.Predict(tt.p, tt.at); got != tt.want {
			t.Errorf("%v to %v: got %+v, want %+v", tt.p, tt.at, got, tt.want)
		}
	}
	s3 := State3{Pos: Vec3{1, 2, 3}, Vel: Vec3{0, 0, -2}, At: 0}
	if got := s3.Predict(ConstantVelocity, 500*ms).Pos; got != (Vec3{1, 2, 2}) {
		t.Errorf("3D: got %v", got)
	}
}

func TestPredictPanicsOnUnknownPredictor(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	State2{}.Predict(Predictor(9), time.Second)
}

// correction sets up the situation every convergence test uses: an entity
// displayed moving right along y = 0, corrected at t0 = 1 s by a state that
// puts it 2 units higher and moving up and to the left.
func correction(m Method, p Predictor) (s *Smoother[Vec2], before, after State2, t0, T time.Duration) {
	T = 200 * ms
	t0 = time.Second
	s = NewSmoother[Vec2](Smoothing{Predictor: p, Method: m, Converge: T})
	before = State2{Pos: Vec2{0, 0}, Vel: Vec2{5, 0}, At: 0}
	after = State2{Pos: Vec2{4, 2}, Vel: Vec2{-1, 3}, Acc: Vec2{0, -2}, At: 950 * ms}
	s.Correct(0, before)
	s.Correct(t0, after)
	return s, before, after, t0, T
}

var methods = []Method{Snap, Linear, Quadratic, Cubic}

func TestEveryMethodReachesThePredictionWithinT(t *testing.T) {
	for _, p := range []Predictor{ConstantVelocity, ConstantAcceleration} {
		for _, m := range methods {
			s, _, after, t0, T := correction(m, p)
			for _, at := range []time.Duration{t0 + T, t0 + T + ms, t0 + T + 300*ms, t0 + 10*time.Second} {
				got, want := s.At(at), after.Predict(p, at)
				if !near(got.Pos, want.Pos, 1e-9) || !near(got.Vel, want.Vel, 1e-9) {
					t.Errorf("%v %v at t0+%v: showing %+v, prediction %+v", p, m, at-t0, got, want)
				}
			}
			// Just before the end the curve is already there, to within
			// its speed times the time left.
			got, want := s.At(t0+T-time.Microsecond), after.Predict(p, t0+T)
			if !near(got.Pos, want.Pos, 1e-4) {
				t.Errorf("%v %v just before the end: %v, want about %v", p, m, got.Pos, want.Pos)
			}
		}
	}
}

func TestCorrectionStartsWhereTheDisplayWas(t *testing.T) {
	for _, m := range methods {
		s, before, after, t0, _ := correction(m, ConstantVelocity)
		shown, old := s.At(t0).Pos, before.Predict(ConstantVelocity, t0).Pos
		jump := dist(shown, old)
		if m == Snap {
			if want := dist(after.Predict(ConstantVelocity, t0).Pos, old); math.Abs(jump-want) > 1e-12 || jump < 1 {
				t.Errorf("snap jumped %v, want the whole correction %v", jump, want)
			}
			continue
		}
		if jump > 1e-12 {
			t.Errorf("%v jumped %v at the start of the correction", m, jump)
		}
	}
}

// derivative returns the displayed velocity over [at, at+h] by difference.
func derivative(s *Smoother[Vec2], at, h time.Duration) Vec2 {
	return s.At(at + h).Pos.Sub(s.At(at).Pos).Scale(1 / h.Seconds())
}

func TestVelocityContinuity(t *testing.T) {
	const h = 10 * time.Microsecond
	tests := []struct {
		m                      Method
		smoothStart, smoothEnd bool
	}{
		{Snap, false, true},
		{Linear, false, false},
		{Quadratic, true, false},
		{Cubic, true, true},
	}
	for _, tt := range tests {
		s, before, after, t0, T := correction(tt.m, ConstantVelocity)
		// At the start: the velocity just after the update against the
		// velocity shown just before it.
		jump := dist(derivative(s, t0, h), before.Vel)
		if smooth := jump < 0.01; smooth != tt.smoothStart {
			t.Errorf("%v: velocity changes by %v at the start of the correction", tt.m, jump)
		}
		// At the end: the velocity just before t0+T against the new
		// prediction's.
		jump = dist(derivative(s, t0+T-h, h), after.Vel)
		if smooth := jump < 0.01; smooth != tt.smoothEnd {
			t.Errorf("%v: velocity changes by %v at the end of the correction", tt.m, jump)
		}
		// The velocity the smoother reports agrees with its positions.
		for _, u := range []float64{0.1, 0.5, 0.9} {
			at := t0 + time.Duration(u*float64(T))
			if got, want := s.At(at).Vel, derivative(s, at-h/2, h); !near(got, want, 1e-3) {
				t.Errorf("%v at u=%v: reports velocity %v, moves at %v", tt.m, u, got, want)
			}
		}
	}
}

func TestMethodsDiffer(t *testing.T) {
	var mid [4]Vec2
	for _, m := range methods {
		s, _, _, t0, T := correction(m, ConstantVelocity)
		mid[m] = s.At(t0 + T/2).Pos
	}
	for i := range mid {
		for j := i + 1; j < len(mid); j++ {
			if d := dist(mid[i], mid[j]); d < 0.05 {
				t.Errorf("%v and %v are %v apart half way through the correction", Method(i), Method(j), d)
			}
		}
	}
	// Linear: on the chord, half way. Quadratic: the parabola
	// P0 + v0·τ + a·τ²/2, a = 2·(P3 − P0 − v0·T)/T².
	s, before, after, t0, T := correction(Linear, ConstantVelocity)
	p0, p3 := before.Predict(ConstantVelocity, t0).Pos, after.Predict(ConstantVelocity, t0+T).Pos
	if got, want := s.At(t0+T/2).Pos, p0.Add(p3).Scale(0.5); !near(got, want, 1e-12) {
		t.Errorf("linear half way: %v, want %v", got, want)
	}
	s, _, _, _, _ = correction(Quadratic, ConstantVelocity)
	tt, tau := T.Seconds(), (T / 4).Seconds()
	a := p3.Sub(p0).Sub(before.Vel.Scale(tt)).Scale(2 / (tt * tt))
	if got, want := s.At(t0+T/4).Pos, p0.Add(before.Vel.Scale(tau)).Add(a.Scale(tau*tau/2)); !near(got, want, 1e-12) {
		t.Errorf("quadratic a quarter of the way: %v, want %v", got, want)
	}
}

func TestCorrectionDuringCorrection(t *testing.T) {
	s, _, _, t0, T := correction(Cubic, ConstantVelocity)
	t1 := t0 + T/2
	shown := s.At(t1)
	s.Correct(t1, State2{Pos: Vec2{0, 5}, Vel: Vec2{1, 1}, At: t1})
	if got := s.At(t1); !near(got.Pos, shown.Pos, 1e-12) || !near(got.Vel, shown.Vel, 1e-9) {
		t.Errorf("second correction starts at %+v, display was %+v", got, shown)
	}
	want := State2{Pos: Vec2{0, 5}, Vel: Vec2{1, 1}, At: t1}.Predict(ConstantVelocity, t1+T)
	if got := s.At(t1 + T); !near(got.Pos, want.Pos, 1e-9) {
		t.Errorf("second correction ends at %v, want %v", got.Pos, want.Pos)
	}
}

func TestSmootherEdges(t *testing.T) {
	s := NewSmoother[Vec3](Smoothing{Method: Cubic, Converge: 100 * ms})
	if s.Started() || s.At(time.Second) != (State3{}) {
		t.Error("a new smoother shows something")
	}
	first := State3{Pos: Vec3{1, 2, 3}, Vel: Vec3{1, 0, 0}, At: 0}
	s.Correct(time.Second, first)
	if got := s.At(time.Second).Pos; got != (Vec3{2, 2, 3}) {
		t.Errorf("the first state is not shown at once: %v", got)
	}
	// A time before the correction began shows its start.
	s.Correct(2*time.Second, State3{Pos: Vec3{0, 0, 0}, At: 2 * time.Second})
	if got := s.At(time.Second).Pos; got != (Vec3{3, 2, 3}) {
		t.Errorf("before the correction: %v, want its start", got)
	}
	// A convergence time of zero snaps.
	z := NewSmoother[Vec2](Smoothing{Method: Cubic})
	z.Correct(0, State2{Pos: Vec2{1, 1}})
	z.Correct(time.Second, State2{Pos: Vec2{5, 5}, At: time.Second})
	if got := z.At(time.Second).Pos; got != (Vec2{5, 5}) {
		t.Errorf("T = 0 does not snap: %v", got)
	}
}

func TestMethodText(t *testing.T) {
	for _, m := range methods {
		b, err := m.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Method
		if err := back.UnmarshalText(b); err != nil || back != m || string(b) != m.String() {
			t.Errorf("%v: %q, back %v, %v", m, b, back, err)
		}
	}
	if _, err := Method(7).MarshalText(); err == nil {
		t.Error("Method(7) marshals")
	}
	var m Method
	if err := m.UnmarshalText([]byte("spline")); err == nil {
		t.Error(`"spline" unmarshals`)
	}
}

// Pos is At's position, exactly; where no correction is under way, every
// method shows the same state.
func TestPosIsAtsPosition(t *testing.T) {
	for _, p := range []Predictor{ConstantVelocity, ConstantAcceleration} {
		var shown [Cubic + 1]*Smoother[Vec2]
		for _, m := range methods {
			s, _, _, t0, T := correction(m, p)
			shown[m] = s
			for at := t0 - 10*ms; at <= t0+T+50*ms; at += 7 * ms {
				if got, want := s.Pos(at), s.At(at).Pos; got != want {
					t.Errorf("%v %v at t0%+v: Pos %v, At %v", p, m, at-t0, got, want)
				}
				end := t0 + T
				if m == Snap {
					end = t0
				}
				if s.Converging(at) != (at < end) {
					t.Errorf("%v %v at t0%+v: converging %v", p, m, at-t0, s.Converging(at))
				}
			}
		}
		for _, at := range []time.Duration{1200 * ms, 1500 * ms, 9 * time.Second} {
			for _, m := range methods {
				if got, want := shown[m].At(at), shown[Snap].At(at); got != want {
					t.Errorf("%v %v at %v, settled: %+v, snap shows %+v", p, m, at, got, want)
				}
			}
		}
	}
	var s Smoother[Vec2]
	if s.Pos(time.Second) != (Vec2{}) || s.Converging(time.Second) {
		t.Error("an unstarted smoother shows something")
	}
}
