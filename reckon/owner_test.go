package reckon

import (
	"math"
	"slices"
	"testing"
	"time"
)

// frameAt returns the time of frame i at rate frames per second, exactly.
func frameAt(i, rate int) time.Duration {
	return time.Duration(i) * time.Second / time.Duration(rate)
}

// sendFrames runs an owner over frames 0..n at 60 Hz along path and returns
// the frames at which it sent.
func sendFrames(o *Owner[Vec2], n int, path func(time.Duration) State2) []int {
	var sent []int
	for i := 0; i <= n; i++ {
		if _, ok := o.Observe(path(frameAt(i, 60))); ok {
			sent = append(sent, i)
		}
	}
	return sent
}

// polyline is motion at constant velocity that changes at given times.
type leg struct {
	from time.Duration
	vel  Vec2
}

func polyline(legs ...leg) func(time.Duration) State2 {
	return func(at time.Duration) State2 {
		var pos, vel Vec2
		for i, l := range legs {
			if at < l.from {
				break
			}
			end := at
			if i+1 < len(legs) && legs[i+1].from < at {
				end = legs[i+1].from
			}
			pos, vel = pos.Add(l.vel.Scale((end - l.from).Seconds())), l.vel
		}
		return State2{Pos: pos, Vel: vel, At: at}
	}
}

func TestOwnerStraightLineSendsStaggerThenHeartbeats(t *testing.T) {
	o := NewOwner[Vec2](OwnerConfig{Threshold: 0.01})
	line := func(at time.Duration) State2 {
		return State2{Pos: Vec2{1, 2}.Add(Vec2{3, -1}.Scale(at.Seconds())), Vel: Vec2{3, -1}, At: at}
	}
	got := sendFrames(o, 5*60, line)
	// 0, +100 ms, +300 ms, then a heartbeat every second.
	want := []int{0, 6, 18, 78, 138, 198, 258}
	if !slices.Equal(got, want) {
		t.Errorf("sent at frames %v, want %v", got, want)
	}
}

func TestOwnerSendsChangesWhenThePredictionStrays(t *testing.T) {
	o := NewOwner[Vec2](OwnerConfig{Threshold: 0.1})
	// Right at 1 unit/s; up from 1 s. The prediction (still right) is
	// √2·(t−1) off, past 0.1 at t = 1.0707 s: frame 65 (1.0833 s).
	got := sendFrames(o, 270, polyline(leg{0, Vec2{1, 0}}, leg{time.Second, Vec2{0, 1}}))
	want := []int{0, 6, 18, 65, 71, 83, 143, 203, 263}
	if !slices.Equal(got, want) {
		t.Errorf("sent at frames %v, want %v", got, want)
	}
}

func TestOwnerRestartsStaggerOnANewChange(t *testing.T) {
	o := NewOwner[Vec2](OwnerConfig{Threshold: 0.1})
	// As above, then left from 1.09 s, before the first change's +100 ms
	// repeat (frame 71): the prediction strays past 0.1 at frame 70. The
	// repeats follow from there (76, 88); the old ones (71, 83) are dropped.
	got := sendFrames(o, 270, polyline(leg{0, Vec2{1, 0}}, leg{time.Second, Vec2{0, 1}}, leg{1090 * ms, Vec2{-1, 0}}))
	want := []int{0, 6, 18, 65, 70, 76, 88, 148, 208, 268}
	if !slices.Equal(got, want) {
		t.Errorf("sent at frames %v, want %v", got, want)
	}
}

func circle(at time.Duration) State2 {
	a := at.Seconds()
	return State2{
		Pos: Vec2{math.Cos(a), math.Sin(a)},
		Vel: Vec2{-math.Sin(a), math.Cos(a)},
		Acc: Vec2{-math.Cos(a), -math.Sin(a)},
		At:  at,
	}
}

func TestOwnerMinInterval(t *testing.T) {
	// Threshold 0: every frame strays, so sends come as fast as allowed.
	o := NewOwner[Vec2](OwnerConfig{Threshold: 0})
	var last time.Duration = -1
	n := 0
	for i := 0; i <= 1000; i++ {
		at := frameAt(i, 1000)
		if _, ok := o.Observe(circle(at)); ok {
			if last >= 0 && at-last != DefaultMinInterval {
				t.Fatalf("sent at %v after %v: gap %v, want %v", at, last, at-last, DefaultMinInterval)
			}
			last = at
			n++
		}
	}
	if n != 21 {
		t.Errorf("sent %d updates in 1 s, want 21", n)
	}
}

func TestOwnerConfig(t *testing.T) {
	o := NewOwner[Vec2](OwnerConfig{Threshold: 1, Stagger: []time.Duration{0, 50 * ms}, Heartbeat: 500 * ms, MinInterval: 10 * ms})
	got := sendFrames(o, 90, polyline(leg{0, Vec2{2, 0}}))
	want := []int{0, 3, 33, 63}
	if !slices.Equal(got, want) {
		t.Errorf("sent at frames %v, want %v", got, want)
	}
}

func TestOwnerNextSend(t *testing.T) {
	o := NewOwner[Vec2](OwnerConfig{Threshold: 1})
	if _, ok := o.NextSend(); ok {
		t.Error("NextSend before the first update")
	}
	if _, ok := o.Predicted(0); ok {
		t.Error("Predicted before the first update")
	}
	line := polyline(leg{0, Vec2{1, 1}})
	for _, step := range []struct {
		at, next time.Duration
	}{{0, 100 * ms}, {100 * ms, 300 * ms}, {300 * ms, 1300 * ms}, {1300 * ms, 2300 * ms}} {
		if _, ok := o.Observe(line(step.at)); !ok {
			t.Fatalf("no send at %v", step.at)
		}
		if next, _ := o.NextSend(); next != step.next {
			t.Errorf("after the send at %v: NextSend %v, want %v", step.at, next, step.next)
		}
	}
}

func TestOwnerPredictsExactlyWhatReceiversDecode(t *testing.T) {
	for _, p := range []Predictor{ConstantVelocity, ConstantAcceleration} {
		o := NewOwner[Vec2](OwnerConfig{Entity: 42, Predictor: p, Threshold: 0.01})
		for i := 0; i < 600; i++ {
			// A frame rate that does not divide the 100 µs tick.
			u, ok := o.Observe(circle(frameAt(i, 70) + 12345*time.Nanosecond))
			if !ok {
				continue
			}
			got, err := ParseUpdate[Vec2](AppendUpdate(nil, u))
			if err != nil {
				t.Fatal(err)
			}
			if got != u || got.Entity != 42 {
				t.Fatalf("%v: sent %+v, decoded %+v", p, u, got)
			}
			if p == ConstantVelocity && got.State.Acc != (Vec2{}) {
				t.Fatalf("constant velocity sends an acceleration: %+v", got)
			}
			for _, later := range []time.Duration{0, 300 * ms, 2 * time.Second} {
				at := got.State.At + later
				if own, _ := o.Predicted(at); own != got.State.Predict(p, at) {
					t.Fatalf("%v: owner predicts %+v, receiver %+v", p, own, got.State.Predict(p, at))
				}
			}
		}
	}
}

func TestOwnerSequenceWraps(t *testing.T) {
	o := NewOwner[Vec2](OwnerConfig{MinInterval: time.Nanosecond})
	for n := range 70000 {
		u, ok := o.Observe(circle(time.Duration(n) * ms))
		if !ok {
			t.Fatalf("no send at step %d", n)
		}
		if u.Seq != uint16(n) {
			t.Fatalf("update %d has Seq %d", n, u.Seq)
		}
	}
}

func TestNewOwnerPanics(t *testing.T) {
	for _, cfg := range []OwnerConfig{
		{Stagger: []time.Duration{100 * ms, 0}},
		{Stagger: []time.Duration{0, 0}},
		{Stagger: []time.Duration{-ms}},
		{Threshold: -1},
		{Heartbeat: -time.Second},
		{Predictor: 5},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v: no panic", cfg)
				}
			}()
			NewOwner[Vec2](cfg)
		}()
	}
}
