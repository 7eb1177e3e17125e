package reckon

import (
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
	if got := m.Metrics().ErrorP99; got != 198 {
		t.Errorf("p99 of 1..200 is %v, want 198", got)
	}
	var one Meter[Vec2]
	one.Frame(0, Vec2{}, Vec2{3, 4})
	if got := one.Metrics(); got != (Metrics{ErrorMean: 5, ErrorP99: 5}) {
		t.Errorf("one frame: %+v", got)
	}
}
