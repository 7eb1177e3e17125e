package rng

import (
	"math/rand/v2"
	"testing"
)

var sink uint64

func BenchmarkUint32(b *testing.B) {
	b.ReportAllocs()
	p := New(1, 2)
	var s uint32
	for b.Loop() {
		s += p.Uint32()
	}
	sink = uint64(s)
}

func BenchmarkUint64(b *testing.B) {
	b.ReportAllocs()
	p := New(1, 2)
	var s uint64
	for b.Loop() {
		s += p.Uint64()
	}
	sink = s
}

func BenchmarkIntN(b *testing.B) {
	b.ReportAllocs()
	p := New(1, 2)
	var s int
	for b.Loop() {
		s += p.IntN(1000)
	}
	sink = uint64(s)
}

// BenchmarkStdlibPCGUint64 measures math/rand/v2's PCG (128-bit state, DXSM
// output) for comparison with BenchmarkUint32 in the same run.
func BenchmarkStdlibPCGUint64(b *testing.B) {
	b.ReportAllocs()
	p := rand.NewPCG(1, 2)
	var s uint64
	for b.Loop() {
		s += p.Uint64()
	}
	sink = s
}
