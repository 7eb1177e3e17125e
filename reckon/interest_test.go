package reckon

import (
	"math"
	"testing"
	"time"
)

// TestInterestInterval: every update within the margin, then gaps growing
// linearly with the distance to the far interval at Far and beyond.
func TestInterestInterval(t *testing.T) {
	in := Interest{Margin: 10, Far: 50, NearInterval: 200 * time.Millisecond, FarInterval: 2200 * time.Millisecond}
	for _, c := range []struct {
		d    float64
		want time.Duration
	}{{0, 0}, {10, 0}, {30, 1200 * time.Millisecond}, {50, 2200 * time.Millisecond}, {math.Inf(1), 2200 * time.Millisecond}} {
		if got := in.Interval(c.d); got != c.want {
			t.Errorf("Interval(%v) = %v, want %v", c.d, got, c.want)
		}
	}
	if got := (Interest{}).Interval(DefaultFar); got != DefaultFarInterval {
		t.Errorf("the zero Interest at Far: %v, want %v", got, DefaultFarInterval)
	}
	r := Around(Vec2{10, 10}, 4, 2)
	if r.Distance(Vec2{11, 10.5}) != 0 || r.Distance(Vec2{15, 10}) != 3 || r.Distance(Vec2{15, 15}) != 5 || !r.Contains(Vec2{8, 9}) {
		t.Errorf("distances from %+v wrong", r)
	}
}

// TestFilterPass: near updates all pass; far ones pass at most every
// interval; an entity coming within the margin after updates were held
// back gets a catch-up, repeated 100 and 300 ms later, and only then.
func TestFilterPass(t *testing.T) {
	f := NewFilter(Interest{Margin: 10, Far: 50, NearInterval: time.Second, FarInterval: time.Second})
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	steps := []struct {
		at   int
		d    float64
		has  bool
		want bool
	}{
		{0, 100, true, true},     // the first update always goes
		{500, 100, true, false},  // too soon for a far entity: held back
		{1000, 100, true, true},  // a second later
		{1100, 100, true, false}, // held back
		{1150, 5, false, true},   // within the margin after a held-back update: catch-up
		{1200, 5, false, false},  // no update, nothing owed
		{1250, 5, true, true},    // near: every update
		{1300, 5, true, true},
		{1350, 30, true, false}, // out again: thinned
		{1400, 5, false, true},  // back within the margin after the update held back at 1350: catch-up
		{1450, 5, false, false},
		{1500, 5, false, true}, // the catch-up repeated 100 ms later
		{1600, 5, false, false},
		{1700, 5, false, true}, // and 300 ms later
		{1800, 5, false, false},
		{2700, 30, true, true},  // a second after the last repeat: a far update goes
		{2800, 5, false, false}, // nothing held back since: no catch-up
	}
	for _, s := range steps {
		if got := f.Pass(ms(s.at), s.d, s.has); got != s.want {
			t.Errorf("at %d ms, distance %v, update %v: pass %v, want %v", s.at, s.d, s.has, got, s.want)
		}
	}
}

// Contains is Distance(p) == 0, also at the edges, on infinities and NaN.
func TestRectContainsIsZeroDistance(t *testing.T) {
	vals := []float64{math.Inf(-1), -3, -1, -math.SmallestNonzeroFloat64, math.Copysign(0, -1), 0, 0.5, 1, 1 + 1e-16, 2, 3, math.Inf(1), math.NaN()}
	rects := []Rect{
		{Min: Vec2{X: 0, Y: 0}, Max: Vec2{X: 1, Y: 2}},
		{Min: Vec2{X: -1, Y: -3}, Max: Vec2{X: 1, Y: 1}},
		{Min: Vec2{X: math.Inf(-1), Y: 0}, Max: Vec2{X: math.Inf(1), Y: 0}},
	}
	for _, r := range rects {
		for _, x := range vals {
			for _, y := range vals {
				p := Vec2{X: x, Y: y}
				if got, want := r.Contains(p), r.Distance(p) == 0; got != want {
					t.Errorf("%v.Contains(%v) = %v, Distance %v", r, p, got, r.Distance(p))
				}
			}
		}
	}
}
