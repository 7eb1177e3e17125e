package reckon

import (
	"testing"
	"time"
)

func BenchmarkSmootherAt(b *testing.B) {
	for _, m := range methods {
		b.Run(m.String(), func(b *testing.B) {
			s, _, _, t0, _ := correction(m, ConstantAcceleration)
			at := t0 + 50*ms
			b.ReportAllocs()
			for b.Loop() {
				_ = s.At(at)
			}
		})
	}
}

func BenchmarkSmootherCorrect(b *testing.B) {
	s, _, after, t0, _ := correction(Cubic, ConstantVelocity)
	b.ReportAllocs()
	for b.Loop() {
		s.Correct(t0, after)
	}
}

func BenchmarkOwnerObserve(b *testing.B) {
	o := NewOwner[Vec3](OwnerConfig{Threshold: 0.1})
	s := State3{Pos: Vec3{1, 2, 3}, Vel: Vec3{1, 0, -1}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.At = time.Duration(i) * time.Second / 60
		o.Observe(s.Predict(ConstantVelocity, s.At))
		i++
	}
}

func BenchmarkAppendUpdate(b *testing.B) {
	u := updates3()[0]
	buf := make([]byte, 0, MaxUpdateSize)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendUpdate(buf[:0], u)
	}
}

func BenchmarkParseUpdate(b *testing.B) {
	in := AppendUpdate(nil, updates3()[0])
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseUpdate[Vec3](in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunScenario(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		runTestScenario(1, bad(1))
	}
}
