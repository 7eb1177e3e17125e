package determinism

import "testing"

// Inputs vary per iteration so that no result can be computed once and
// hoisted; sink keeps results alive.
var (
	sinkFixed Fixed
	sinkVec   Vec2
	sinkU64   uint64
)

func benchInputs() [64]Fixed {
	var xs [64]Fixed
	r := newTestRand(99)
	for i := range xs {
		xs[i] = Fixed(int64(r.Uint64()) >> (r.IntN(24) + 20)) // |x| up to 2^11
		if xs[i] == 0 {
			xs[i] = One
		}
	}
	return xs
}

func BenchmarkMul(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkFixed = xs[i&63].Mul(xs[(i+1)&63])
		i++
	}
}

func BenchmarkDiv(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkFixed = xs[i&63].Div(xs[(i+1)&63])
		i++
	}
}

func BenchmarkSqrt(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkFixed = Sqrt(xs[i&63].Abs())
		i++
	}
}

func BenchmarkSin(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkFixed = Sin(xs[i&63])
		i++
	}
}

func BenchmarkSinCos(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkFixed, _ = SinCos(xs[i&63])
		i++
	}
}

func BenchmarkAtan2(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkFixed = Atan2(xs[i&63], xs[(i+7)&63])
		i++
	}
}

func BenchmarkVec2Len(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkFixed = V2(xs[i&63], xs[(i+1)&63]).Len()
		i++
	}
}

func BenchmarkVec2Normalize(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkVec = V2(xs[i&63], xs[(i+1)&63]).Normalize()
		i++
	}
}

func BenchmarkVec2Rotate(b *testing.B) {
	xs := benchInputs()
	b.ReportAllocs()
	var i int
	for b.Loop() {
		sinkVec = V2(xs[i&63], xs[(i+1)&63]).Rotate(xs[(i+2)&63])
		i++
	}
}

// BenchmarkHasherWrites hashes a typical unit record: 40 bytes in five writes.
func BenchmarkHasherWrites(b *testing.B) {
	h := NewHasher()
	h.Section("units")
	b.ReportAllocs()
	b.SetBytes(41)
	var i int
	for b.Loop() {
		h.WriteInt(i)
		h.WriteVec2(V2(Fixed(i), Half))
		h.WriteFixed(One)
		h.WriteBool(true)
		i++
	}
	sinkU64 = h.Sum64()
}

// BenchmarkHasherFrame hashes a whole small state, as every frame does:
// Reset, two sections, 100 units, Sum64 and the section list.
func BenchmarkHasherFrame(b *testing.B) {
	h := NewHasher()
	sections := make([]SectionHash, 0, 4)
	b.ReportAllocs()
	b.SetBytes(100*41 + 16)
	for b.Loop() {
		h.Reset()
		h.Section("units")
		for i := range 100 {
			h.WriteInt(i)
			h.WriteVec2(V2(Fixed(i), Half))
			h.WriteFixed(One)
			h.WriteBool(true)
		}
		h.Section("players")
		h.WriteString("alice")
		h.WriteInt64(500)
		sinkU64 = h.Sum64()
		sections = h.AppendSections(sections[:0])
	}
}

func BenchmarkXXHash64(b *testing.B) {
	data := make([]byte, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		sinkU64 = XXHash64(data)
	}
}

func BenchmarkSortedKeys(b *testing.B) {
	m := make(map[int]int, 100)
	for i := range 100 {
		m[i*7919] = i
	}
	b.ReportAllocs()
	for b.Loop() {
		sinkU64 = uint64(len(SortedKeys(m)))
	}
}
