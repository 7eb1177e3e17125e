package delay

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestTailQuantileMatchesSortedSamples(t *testing.T) {
	// One block holding everything: the quantile is the sample of rank
	// ceil(share·n) from the top of the sorted samples, while that rank is
	// within what a block keeps.
	tl := NewTail(time.Hour, 1, 16)
	rng := rand.New(rand.NewPCG(1, 2))
	var all []time.Duration
	for i := range 1000 {
		d := time.Duration(rng.IntN(500_000)) * time.Microsecond
		tl.Add(time.Duration(i)*time.Millisecond, d, true)
		all = append(all, d)
	}
	slices.Sort(all)
	now := time.Second
	for _, tt := range []struct {
		share float64
		rank  int
	}{{0, 1}, {0.0005, 1}, {0.001, 1}, {0.0011, 2}, {0.01, 10}, {0.016, 16}, {0.5, 16}} {
		if got, want := tl.Quantile(now, tt.share), all[len(all)-tt.rank]; got != want {
			t.Errorf("Quantile(%v) = %v, want rank %d from the top, %v", tt.share, got, tt.rank, want)
		}
	}
	if n := tl.Len(now); n != 1000 {
		t.Errorf("Len = %d, want 1000", n)
	}
}

func TestTailWindowSlides(t *testing.T) {
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	tl := NewTail(s(5), 4, 4) // 20 s
	tl.Add(s(0), ms(300), true)
	tl.Add(s(1), ms(10), true)
	tl.Add(s(6), ms(200), true)
	tl.Add(s(12), ms(100), true)
	if got := tl.Quantile(s(12), 0); got != ms(300) {
		t.Fatalf("largest at 12 s = %v, want 300ms", got)
	}
	// At 20 s the first block (0-5 s) has left the window.
	if got := tl.Quantile(s(20), 0); got != ms(200) {
		t.Errorf("largest at 20 s = %v, want 200ms", got)
	}
	if n := tl.Len(s(20)); n != 2 {
		t.Errorf("Len at 20 s = %d, want 2", n)
	}
	// Silent for longer than the window: empty.
	if got, n := tl.Quantile(s(100), 0), tl.Len(s(100)); got != 0 || n != 0 {
		t.Errorf("after a long silence: quantile %v, %d samples; want 0, 0", got, n)
	}
	tl.Add(s(100), ms(7), true)
	if got := tl.Quantile(s(101), 0); got != ms(7) {
		t.Errorf("after a long silence and one sample: %v, want 7ms", got)
	}
}

// PastWorst leaves out the current block, and what is not a candidate.
func TestTailPastWorst(t *testing.T) {
	s := func(n int) time.Duration { return time.Duration(n) * time.Second }
	tl := NewTail(s(5), 4, 4) // 20 s
	tl.Add(s(0), ms(30), true)
	tl.Add(s(1), ms(90), false)
	if got := tl.PastWorst(s(1)); got != 0 {
		t.Fatalf("PastWorst with only the current block = %v, want 0", got)
	}
	tl.Add(s(6), ms(400), true) // the current block from 5 s
	if got := tl.PastWorst(s(6)); got != ms(30) {
		t.Errorf("PastWorst at 6 s = %v, want 30ms (the 400 ms are the current block's)", got)
	}
	if got := tl.PastWorst(s(11)); got != ms(400) {
		t.Errorf("PastWorst at 11 s = %v, want 400ms", got)
	}
	tl.Forget()
	if got := tl.PastWorst(s(11)); got != 0 {
		t.Errorf("PastWorst after Forget = %v, want 0", got)
	}
}

func TestTailCandidatesAndMean(t *testing.T) {
	tl := NewTail(time.Second, 2, 3)
	tl.Add(0, ms(500), false) // counts, never the answer
	tl.Add(0, ms(20), true)
	tl.Add(0, ms(40), true)
	tl.Add(0, ms(60), true)
	tl.Add(0, ms(30), true) // below the three kept: dropped from the top
	if got := tl.Quantile(0, 0); got != ms(60) {
		t.Errorf("largest candidate %v, want 60ms", got)
	}
	if got := tl.Quantile(0, 0.99); got != ms(30) {
		t.Errorf("rank beyond keep: %v, want the third largest candidate, 30ms", got)
	}
	if got, want := tl.Mean(0), (ms(500)+ms(150))/5; got != want {
		t.Errorf("Mean = %v, want %v", got, want)
	}
	tl.Add(time.Second, ms(10), true)
	tl.Forget()
	if got, n := tl.Quantile(time.Second, 0), tl.Len(time.Second); got != ms(10) || n != 1 {
		t.Errorf("after Forget: %v over %d samples, want 10ms over 1 (the current block kept)", got, n)
	}
	tl.Reset()
	if got, n := tl.Quantile(time.Second, 0), tl.Len(time.Second); got != 0 || n != 0 {
		t.Errorf("after Reset: %v over %d samples, want nothing", got, n)
	}
	tl.Add(time.Second, ms(4), true)
	if got, n := tl.Quantile(time.Second, 0), tl.Len(time.Second); got != ms(4) || n != 1 {
		t.Errorf("a sample after Reset: %v over %d samples, want 4ms over 1", got, n)
	}
	if got := NewTail(time.Second, 1, 1).Quantile(0, 0.5); got != 0 {
		t.Errorf("empty window: %v, want 0", got)
	}
}

func TestTailDeterministicAndAllocationFree(t *testing.T) {
	run := func() []time.Duration {
		tl := NewTail(5*time.Second, 8, 64)
		rng := rand.New(rand.NewPCG(3, 4))
		var out []time.Duration
		for i := range 20_000 {
			now := time.Duration(i) * 7 * time.Millisecond
			tl.Add(now, time.Duration(rng.IntN(300))*time.Millisecond, i%7 != 0)
			if i%100 == 0 {
				out = append(out, tl.Quantile(now, 0.01))
			}
		}
		return out
	}
	if a, b := run(), run(); !slices.Equal(a, b) {
		t.Fatal("two runs of the same samples gave different quantiles")
	}
	tl := NewTail(time.Second, 8, 64)
	var now time.Duration
	if allocs := testing.AllocsPerRun(100, func() {
		now += 37 * time.Millisecond
		tl.Add(now, now%(300*time.Millisecond), true)
		_ = tl.Quantile(now, 0.01)
	}); allocs != 0 {
		t.Errorf("%v allocations per Add and Quantile, want 0", allocs)
	}
}

func TestNewTailPanics(t *testing.T) {
	mustPanic(t, "NewTail", func() { NewTail(0, 1, 1) })
	mustPanic(t, "NewTail", func() { NewTail(time.Second, 0, 1) })
	mustPanic(t, "NewTail", func() { NewTail(time.Second, 1, 0) })
}

func BenchmarkTailQuantile(b *testing.B) {
	tl := NewTail(5*time.Second, 8, 64)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 4000 {
		tl.Add(time.Duration(i)*10*time.Millisecond, time.Duration(rng.IntN(300))*time.Millisecond, true)
	}
	now := 40 * time.Second
	b.ReportAllocs()
	for b.Loop() {
		_ = tl.Quantile(now, 0.01)
	}
}

// TestTailTotalsMatchTheBlocks checks the running totals Len and Mean read
// against the blocks they sum, through adds, rotations, Forget and Reset.
func TestTailTotalsMatchTheBlocks(t *testing.T) {
	tl := NewTail(time.Second, 4, 3)
	r := rand.New(rand.NewPCG(3, 4))
	now := time.Duration(0)
	for i := range 20000 {
		switch k := r.Uint32N(1000); {
		case k < 2:
			tl.Forget()
		case k < 3:
			tl.Reset()
		case k < 200:
			now += time.Duration(r.Uint32N(uint32(3 * time.Second)))
		default:
			tl.Add(now, time.Duration(r.Uint32N(uint32(time.Second)))-300*time.Millisecond, k%2 == 0)
		}
		n, sum := 0, time.Duration(0)
		tl.rotate(now)
		for _, b := range tl.blocks {
			n, sum = n+b.n, sum+b.sum
		}
		mean := time.Duration(0)
		if n > 0 {
			mean = sum / time.Duration(n)
		}
		if tl.Len(now) != n || tl.Mean(now) != mean {
			t.Fatalf("step %d: Len %d, Mean %v; the blocks hold %d with mean %v", i, tl.Len(now), tl.Mean(now), n, mean)
		}
	}
}
