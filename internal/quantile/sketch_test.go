package quantile

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// exact returns the nearest-rank p-th percentile of sorted values.
func exact(sorted []float64, p float64) float64 {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[max(0, min(rank, len(sorted))-1)]
}

func distributions() map[string]func(r *rand.Rand) float64 {
	return map[string]func(r *rand.Rand) float64{
		"uniform ms":     func(r *rand.Rand) float64 { return 20 + 80*r.Float64() },
		"exponential":    func(r *rand.Rand) float64 { return r.ExpFloat64() * 35 },
		"lognormal":      func(r *rand.Rand) float64 { return math.Exp(r.NormFloat64() * 2) },
		"ns durations":   func(r *rand.Rand) float64 { return float64(30e6 + r.IntN(200e6)) },
		"mostly zero":    func(r *rand.Rand) float64 { return max(0, r.NormFloat64()-1.5) },
		"tiny and large": func(r *rand.Rand) float64 { return math.Pow(10, -12+27*r.Float64()) },
	}
}

func TestQuantileWithinAlpha(t *testing.T) {
	for name, gen := range distributions() {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			for _, n := range []int{1, 2, 7, 100, 10_000, 200_000} {
				var s Sketch
				vals := make([]float64, n)
				for i := range vals {
					vals[i] = gen(r)
					s.Add(vals[i])
				}
				slices.Sort(vals)
				for _, p := range []float64{0, 1, 50, 90, 95, 99, 99.9, 100} {
					want, got := exact(vals, p), s.Quantile(p)
					if !within(got, want) {
						t.Errorf("n=%d p%v: got %g, exact %g (relative error %.4f)", n, p, got, want, math.Abs(got-want)/want)
					}
				}
				if s.Count() != int64(n) || s.Max() != vals[n-1] || s.Min() != vals[0] {
					t.Errorf("n=%d: count %d min %g max %g, want %d %g %g", n, s.Count(), s.Min(), s.Max(), n, vals[0], vals[n-1])
				}
				if len(s.counts) > MaxBuckets {
					t.Errorf("%d buckets, more than %d", len(s.counts), MaxBuckets)
				}
			}
		})
	}
}

// within reports whether got is within the stated accuracy of want: Alpha
// relative, or an absolute Smallest below Smallest (and values past
// Largest are only bounded by the exact maximum).
func within(got, want float64) bool {
	if want < Smallest {
		return got >= 0 && got < Smallest
	}
	if want > Largest {
		return got >= Largest
	}
	return math.Abs(got-want) <= Alpha*want*(1+1e-9)
}

func TestMergeEqualsOneSketch(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var all, a, b Sketch
	for i := range 50_000 {
		v := r.ExpFloat64() * float64(1+i%7)
		all.Add(v)
		if i%3 == 0 {
			a.Add(v)
		} else {
			b.Add(v)
		}
	}
	var m Sketch
	m.Merge(&b)
	m.Merge(&a)
	m.Merge(&Sketch{})
	for _, p := range []float64{0, 10, 50, 99, 100} {
		if m.Quantile(p) != all.Quantile(p) {
			t.Errorf("p%v: merged %g, one sketch %g", p, m.Quantile(p), all.Quantile(p))
		}
	}
	if m.Count() != all.Count() || math.Abs(m.Mean()-all.Mean()) > 1e-9*all.Mean() {
		t.Errorf("merged count %d mean %g, one sketch %d %g", m.Count(), m.Mean(), all.Count(), all.Mean())
	}
}

func TestEmptyAndOddValues(t *testing.T) {
	var s Sketch
	if s.Quantile(50) != 0 || s.Mean() != 0 || s.Max() != 0 {
		t.Fatal("an empty sketch reports non-zero figures")
	}
	s.Add(math.NaN())
	s.Add(-3)
	s.Add(math.Inf(1))
	s.AddAll([]float64{math.Inf(1), 0, -1})
	s.Add(math.Inf(1))
	if s.Quantile(0) != 0 || s.Quantile(50) != 0 || !math.IsInf(s.Quantile(100), 1) {
		t.Errorf("NaN and -3 as zero, +Inf as the maximum: p0 %g p50 %g p100 %g", s.Quantile(0), s.Quantile(50), s.Quantile(100))
	}
	if top := len(s.counts) - 1; s.offset+top != maxIndex || s.counts[top] != 3 {
		t.Errorf("the three +Inf went to bucket %d (%d of them), want the top one, %d", s.offset+top, s.counts[top], maxIndex)
	}
}

// TestBounded adds values over the whole range many times over: the
// sketch's counters stay at most MaxBuckets.
func TestBounded(t *testing.T) {
	var s Sketch
	r := rand.New(rand.NewPCG(5, 6))
	for range 1_000_000 {
		s.Add(math.Pow(10, -10+26*r.Float64()))
	}
	if len(s.counts) > MaxBuckets || cap(s.counts) > 2*MaxBuckets {
		t.Errorf("%d counters (capacity %d), bound %d", len(s.counts), cap(s.counts), MaxBuckets)
	}
}

func BenchmarkAdd(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, 4096)
	for i := range vals {
		vals[i] = r.ExpFloat64() * 35
	}
	var s Sketch
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Add(vals[i%len(vals)])
	}
}

func BenchmarkQuantile(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var s Sketch
	for range 100_000 {
		s.Add(r.ExpFloat64() * 35)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Quantile(99)
	}
}

// AddAll leaves a sketch exactly as Add one value at a time does, for
// batches of every length, with zeros, NaN and values past Largest among
// them.
func TestAddAllEqualsAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, gen := range distributions() {
		var one, all Sketch
		vals := make([]float64, 0, 100)
		for i := range 3000 {
			v := gen(r)
			switch i % 97 {
			case 5:
				v = math.NaN()
			case 6:
				v = -1
			case 7:
				v = 2 * Largest
			}
			one.Add(v)
			vals = append(vals, v)
			if len(vals) == 1+i%67 {
				all.AddAll(vals)
				vals = vals[:0]
			}
		}
		all.AddAll(vals)
		if one.n != all.n || one.sum != all.sum || one.min != all.min || one.max != all.max || one.zeros != all.zeros ||
			one.offset != all.offset || !slices.Equal(one.counts, all.counts) {
			t.Errorf("AddAll %+v, Add %+v", all, one)
		}
	}
}

// bucket is index, clamped at the top, for every value within a thousand
// units in the last place of every bucket's edge, and for values spread
// over the whole range: so tops holds the edges, and index rises with its
// argument near them.
func TestBucketIsIndex(t *testing.T) {
	check := func(v float64) {
		if got, want := bucket(v), min(index(v), maxIndex); got != want {
			t.Fatalf("bucket(%g) = %d, index %d", v, got, want)
		}
	}
	for j, top := range tops {
		if index(top) != j+minIndex || index(math.Nextafter(top, math.Inf(1))) != j+minIndex+1 {
			t.Fatalf("top of bucket %d, %g, is not its edge", j+minIndex, top)
		}
		up, down := top, top
		for range 1000 {
			check(up)
			check(down)
			up, down = math.Nextafter(up, math.Inf(1)), math.Nextafter(down, 0)
		}
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 1_000_000 {
		check(math.Pow(10, -9+26*r.Float64()))
	}
	for _, v := range []float64{Smallest, Largest, 2 * Largest, math.MaxFloat64} {
		check(v)
	}
	if got := bucket(math.Inf(1)); got != maxIndex {
		t.Errorf("bucket(+Inf) = %d, want the top bucket %d", got, maxIndex)
	}
}

func BenchmarkBucket(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	vals := make([]float64, 1024)
	for i := range vals {
		vals[i] = r.ExpFloat64()
	}
	b.Run("bucket", func(b *testing.B) {
		b.ReportAllocs()
		i, sum := 0, 0
		for b.Loop() {
			sum += bucket(vals[i%len(vals)])
			i++
		}
	})
	b.Run("index", func(b *testing.B) {
		b.ReportAllocs()
		i, sum := 0, 0
		for b.Loop() {
			sum += min(index(vals[i%len(vals)]), maxIndex)
			i++
		}
	})
}

// TestCountsCarryPast32Bits fills a bucket's 4-byte counter (set directly:
// adding 2³² values would take minutes) and checks that Add, AddAll and
// Merge each carry past it and Quantile counts what they carried.
func TestCountsCarryPast32Bits(t *testing.T) {
	var s Sketch
	for _, v := range []float64{1, 2, 3} {
		s.Add(v)
	}
	full := func(s *Sketch) {
		s.counts[bucket(1)-s.offset] = math.MaxUint32
	}
	// Pretend the bucket of 1 already holds 2³²−1 values, then add one
	// with Add and, after filling it again, one with AddAll.
	full(&s)
	s.n += math.MaxUint32 - 1
	s.Add(1) // 2³² values of 1
	full(&s)
	s.n += math.MaxUint32
	s.AddAll([]float64{1}) // 2 × 2³²
	s.Add(1)               // 2 × 2³² + 1: the counter holds 1, for the merge below to carry
	ones := uint64(2)<<32 + 1
	check := func(s *Sketch, ones uint64, what string) {
		t.Helper()
		if s.n != ones+2 {
			t.Fatalf("%s: %d values, want %d ones and two more", what, s.n, ones)
		}
		// Ranks half a value off, so that float rounding cannot move them.
		if got := s.Quantile(100 * (float64(ones) - 0.5) / float64(s.n)); math.Abs(got-1) > Alpha {
			t.Fatalf("%s: quantile at the last of %d ones: %v, want about 1", what, ones, got)
		}
		// Past the ones comes the 2 (rank below the count, so read from
		// the buckets rather than the largest value).
		if got := s.Quantile(100 * (float64(ones) + 0.5) / float64(s.n)); math.Abs(got-2) > 2*Alpha {
			t.Fatalf("%s: quantile past the ones: %v, want about 2", what, got)
		}
	}
	check(&s, ones, "added")
	// Merge into a sketch whose counter of that bucket is full: 2³²−1
	// ones there and a counter of 1 in s carry.
	var m Sketch
	m.Add(1)
	full(&m)
	m.n += math.MaxUint32 - 1
	m.Merge(&s)
	check(&m, ones+math.MaxUint32, "merged")
}
