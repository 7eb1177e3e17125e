package reckon

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestMeter(t *testing.T) {
	var m Meter[Vec2]
	if m.Metrics() != (Metrics{}) {
		t.Errorf("empty meter: %+v", m.Metrics())
	}
	frames := []struct {
		at               time.Duration
		displayed, truth Vec2
	}{
		{0, Vec2{0, 0}, Vec2{0, 1}},               // error 1
		{time.Second, Vec2{1, 0}, Vec2{1, 0}},     // moved 1
		{2 * time.Second, Vec2{1, 0}, Vec2{1, 3}}, // error 3, stopped: kink 1
		{3 * time.Second, Vec2{1, 4}, Vec2{1, 4}}, // jump 4, kink 4
		{4 * time.Second, Vec2{4, 4}, Vec2{4, 4}}, // moved 3, turned: kink 5
	}
	for i, f := range frames {
		m.Frame(f.at, f.displayed, f.truth)
		if i < 3 {
			m.Update()
			m.Update()
		}
	}
	want := Metrics{UpdatesPerS: 1.5, ErrorMean: 0.8, ErrorP99: 3, MaxJump: 4, MaxKink: 5}
	if got := m.Metrics(); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestMeterP99IsNearestRank(t *testing.T) {
	var m Meter[Vec3]
	for i := 200; i >= 1; i-- {
		m.Frame(time.Duration(200-i)*time.Second, Vec3{}, Vec3{Z: float64(i)})
	}
	if got := m.Metrics().ErrorP99; math.Abs(got-198) > 0.01*198 {
		t.Errorf("p99 of 1..200 is %v, want 198 within 1 %%", got)
	}
	var one Meter[Vec2]
	one.Frame(0, Vec2{}, Vec2{3, 4})
	if got := one.Metrics(); got != (Metrics{ErrorMean: 5, ErrorP99: 5}) {
		t.Errorf("one frame: %+v", got)
	}
}

// TestMeterP99WithinOnePercent feeds a meter the errors of a recorded
// scenario run (and some of other shapes) and compares its p99 with the
// exact nearest-rank p99 of the same errors.
func TestMeterP99WithinOnePercent(t *testing.T) {
	exactP99 := func(errs []float64) float64 {
		s := slices.Clone(errs)
		slices.Sort(s)
		return s[int(math.Ceil(0.99*float64(len(s))))-1]
	}
	check := func(name string, errs []float64) {
		t.Helper()
		var m Meter[Vec2]
		for i, e := range errs {
			m.Frame(time.Duration(i)*time.Millisecond, Vec2{}, Vec2{X: e})
		}
		got, want := m.Metrics().ErrorP99, exactP99(errs)
		if math.Abs(got-want) > 0.01*want*(1+1e-9) {
			t.Errorf("%s: p99 %v, exact %v: more than 1 %% apart", name, got, want)
		}
	}
	// A recorded run: the displayed-versus-true errors of a cubic receiver
	// whose updates arrive 100 ms late, one in eight lost.
	var recorded []float64
	path := NewPath(7)
	owner := NewOwner[Vec2](OwnerConfig{Predictor: ConstantVelocity, Threshold: testThreshold})
	recv := NewReceiver[Vec2](Smoothing{Predictor: ConstantVelocity, Method: Cubic, Converge: testConverge})
	type sent struct {
		at time.Duration
		u  Update[Vec2]
	}
	var inflight []sent
	loss := rand.New(rand.NewPCG(7, 8))
	for i := range 60 * 60 {
		now := time.Duration(i) * time.Second / 60
		truth := path.Advance(now)
		if u, ok := owner.Observe(truth); ok && loss.IntN(8) != 0 {
			inflight = append(inflight, sent{now + 100*time.Millisecond, u})
		}
		for len(inflight) > 0 && inflight[0].at <= now {
			recv.Receive(now, inflight[0].u)
			inflight = inflight[1:]
		}
		if recv.Started() {
			recorded = append(recorded, dist(recv.At(now).Pos, truth.Pos))
		}
	}
	if len(recorded) < 1000 {
		t.Fatalf("recorded %d errors", len(recorded))
	}
	check("recorded cubic errors", recorded)
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{3, 150, 100_000} {
		exp := make([]float64, n)
		half := make([]float64, n)
		for i := range exp {
			exp[i] = r.ExpFloat64() * 4
			if i%2 == 0 {
				half[i] = 1e-3 * r.Float64()
			}
		}
		check("exponential", exp)
		check("half zeros", half)
	}
}

// A meter read between frames (its pending errors counted early) reports
// what one read only at the end does.
func TestMeterReadBetweenFrames(t *testing.T) {
	var read, unread Meter[Vec2]
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 230 {
		at, truth := time.Duration(i)*time.Millisecond, Vec2{X: r.ExpFloat64(), Y: r.Float64()}
		read.Frame(at, Vec2{}, truth)
		unread.Frame(at, Vec2{}, truth)
		if i%7 == 3 {
			read.Metrics()
		}
	}
	if a, b := read.Metrics(), unread.Metrics(); a != b {
		t.Errorf("read between frames %+v, only at the end %+v", a, b)
	}
}

// The largest jump and kink are those of every frame's Len, though a
// Meter takes the length only of steps that may beat the largest so far.
func TestMeterJumpAndKinkAreExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, scale := range []float64{1e-120, 1e-3, 1, 1e3, 1e120} {
		var m Meter[Vec2]
		var prev, step, longest Vec2
		var jump, kink float64
		for i := range 2000 {
			p := Vec2{X: scale * r.NormFloat64(), Y: scale * r.NormFloat64()}
			switch {
			case i%3 == 0:
				p = prev.Add(Vec2{X: scale * 1e-9 * r.Float64()}) // tiny steps
			case i%3 == 1 && i > 1:
				// A step a few 10⁻¹⁰ longer than the longest so far: within
				// shorter's margin, so it must be measured, not skipped.
				p = prev.Add(longest.Scale(1 + 3e-10))
			}
			m.Frame(time.Duration(i)*time.Millisecond, p, Vec2{})
			if i > 0 {
				s := p.Sub(prev)
				if s.Len() > jump {
					longest = s
				}
				jump = max(jump, s.Len())
				if i > 1 {
					kink = max(kink, s.Sub(step).Len())
				}
				step = s
			}
			prev = p
		}
		if got := m.Metrics(); got.MaxJump != jump || got.MaxKink != kink {
			t.Errorf("scale %g: jump %v kink %v, want %v %v", scale, got.MaxJump, got.MaxKink, jump, kink)
		}
	}
}
