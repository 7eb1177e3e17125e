package delay

import (
	"testing"
	"time"
)

func BenchmarkSamplesPercentile(b *testing.B) {
	s := NewSamples(256)
	for _, d := range shuffled(256) {
		s.Add(d)
	}
	b.ReportAllocs()
	for b.Loop() {
		if s.Percentile(99) != 254*time.Millisecond {
			b.Fatal("wrong percentile")
		}
	}
}
