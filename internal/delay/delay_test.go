package delay

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestNewSamplesPanics(t *testing.T) {
	for _, size := range []int{0, -1} {
		mustPanic(t, "size < 1", func() { NewSamples(size) })
	}
}

func TestSamplesLen(t *testing.T) {
	s := NewSamples(4)
	for i, want := range []int{1, 2, 3, 4, 4, 4, 4, 4, 4} {
		s.Add(time.Duration(i))
		if s.Len() != want {
			t.Fatalf("after %d Adds: Len() = %d, want %d", i+1, s.Len(), want)
		}
	}
	if NewSamples(3).Len() != 0 {
		t.Error("Len() of a new window is not 0")
	}
}

// ms returns n milliseconds.
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// shuffled returns 1..n milliseconds in a fixed scrambled order, so a
// percentile has to sort to be right.
func shuffled(n int) []time.Duration {
	var d []time.Duration
	for i := 1; i <= n; i++ {
		d = append(d, ms(i))
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
	return d
}

func TestSamplesPercentile(t *testing.T) {
	tens := []time.Duration{ms(70), ms(10), ms(100), ms(40), ms(20), ms(90), ms(30), ms(60), ms(80), ms(50)}
	tests := []struct {
		name    string
		size    int
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", 8, nil, 50, 0},
		{"empty p100", 8, nil, 100, 0},
		{"single p1", 8, []time.Duration{ms(7)}, 1, ms(7)},
		{"single p50", 8, []time.Duration{ms(7)}, 50, ms(7)},
		{"single p100", 8, []time.Duration{ms(7)}, 100, ms(7)},
		{"ten p10", 10, tens, 10, ms(10)},
		{"ten p11", 10, tens, 11, ms(20)},
		{"ten p25", 10, tens, 25, ms(30)},
		{"ten p50", 10, tens, 50, ms(50)},
		{"ten p90", 10, tens, 90, ms(90)},
		{"ten p91", 10, tens, 91, ms(100)},
		{"ten p99", 10, tens, 99, ms(100)},
		{"ten p100", 10, tens, 100, ms(100)},
		{"hundred p1", 100, shuffled(100), 1, ms(1)},
		{"hundred p7", 100, shuffled(100), 7, ms(7)}, // 0.07*100 is 7.000000000000001 in float64
		{"hundred p50", 100, shuffled(100), 50, ms(50)},
		{"hundred p99", 100, shuffled(100), 99, ms(99)},
		{"hundred p99.5", 100, shuffled(100), 99.5, ms(100)},
		{"hundred p100", 100, shuffled(100), 100, ms(100)},
		{"256 p99", 256, shuffled(256), 99, ms(254)}, // ceil(253.44)
		{"256 p50", 256, shuffled(256), 50, ms(128)},
		{"not full p50", 100, shuffled(10), 50, ms(5)},
		{"p0 gives the minimum", 10, tens, 0, ms(10)},
		{"p above 100 gives the maximum", 10, tens, 150, ms(100)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSamples(tt.size)
			for _, d := range tt.samples {
				s.Add(d)
			}
			if got := s.Percentile(tt.p); got != tt.want {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
			// Reading a percentile does not disturb the window.
			if got := s.Percentile(tt.p); got != tt.want {
				t.Errorf("second Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestSamplesPercentileNearestRank(t *testing.T) {
	// Against integer nearest-rank, ceil(p*n/100), for every whole p and
	// every count up to 64.
	for n := 1; n <= 64; n++ {
		s := NewSamples(n)
		for _, d := range shuffled(n) {
			s.Add(d)
		}
		for p := 1; p <= 100; p++ {
			rank := (p*n + 99) / 100
			if got := s.Percentile(float64(p)); got != ms(rank) {
				t.Fatalf("n=%d Percentile(%d) = %v, want %v", n, p, got, ms(rank))
			}
		}
	}
}

func TestSamplesRingOverwrite(t *testing.T) {
	s := NewSamples(4)
	for _, d := range []time.Duration{ms(1), ms(100), ms(2), ms(3)} {
		s.Add(d)
	}
	if s.Percentile(100) != ms(100) || s.Min() != ms(1) {
		t.Fatalf("full window: max %v min %v", s.Percentile(100), s.Min())
	}
	// Two more samples push out 1 ms and 100 ms.
	s.Add(ms(5))
	s.Add(ms(4))
	want := []time.Duration{ms(2), ms(3), ms(4), ms(5)}
	for i, p := range []float64{25, 50, 75, 100} {
		if got := s.Percentile(p); got != want[i] {
			t.Errorf("after overwrite: Percentile(%v) = %v, want %v", p, got, want[i])
		}
	}
	if s.Min() != ms(2) || s.Len() != 4 {
		t.Errorf("after overwrite: Min %v Len %d, want 2ms 4", s.Min(), s.Len())
	}
	// A whole new window replaces everything.
	for i := range 4 {
		s.Add(ms(50 + i))
	}
	if s.Min() != ms(50) || s.Percentile(100) != ms(53) {
		t.Errorf("after a full turn: Min %v max %v, want 50ms 53ms", s.Min(), s.Percentile(100))
	}
}

func TestSamplesMin(t *testing.T) {
	s := NewSamples(3)
	if s.Min() != 0 {
		t.Errorf("Min() of an empty window = %v, want 0", s.Min())
	}
	for _, tt := range []struct{ add, want time.Duration }{
		{ms(9), ms(9)},
		{ms(4), ms(4)},
		{ms(6), ms(4)},
		{ms(8), ms(4)}, // 9 leaves
		{ms(7), ms(6)}, // 4 leaves
		{ms(1), ms(1)},
		{-ms(2), -ms(2)}, // clock offsets may make one-way samples negative
	} {
		s.Add(tt.add)
		if got := s.Min(); got != tt.want {
			t.Errorf("after Add(%v): Min() = %v, want %v", tt.add, got, tt.want)
		}
	}
}

func TestSamplesNoAllocs(t *testing.T) {
	s := NewSamples(256)
	for _, d := range shuffled(300) { // warm up past full
		s.Add(d)
	}
	s.Percentile(99)
	var i int
	allocs := testing.AllocsPerRun(100, func() {
		i++
		s.Add(ms(i % 300))
		_ = s.Percentile(99)
		_ = s.Min()
	})
	if allocs != 0 {
		t.Errorf("Add+Percentile+Min allocate %v times per run, want 0", allocs)
	}
	// Before the window is full too.
	s = NewSamples(64)
	s.Percentile(50)
	if allocs := testing.AllocsPerRun(50, func() { s.Add(ms(3)); _ = s.Percentile(50) }); allocs != 0 {
		t.Errorf("filling window: %v allocations per run, want 0", allocs)
	}
}

var testPolicy = LeadPolicy{Min: 0, Max: ms(950), ShrinkAfter: 3}

func TestLeadPolicyTarget(t *testing.T) {
	p := testPolicy
	withBounds := func(lo, hi time.Duration) LeadPolicy { q := p; q.Min, q.Max = lo, hi; return q }
	withMargin := func(m time.Duration) LeadPolicy { q := p; q.Margin = m; return q }
	tests := []struct {
		name       string
		policy     LeadPolicy
		late, wait time.Duration
		want       time.Duration
	}{
		{"nothing to cover", p, 0, 0, 0},
		{"one nanosecond", p, 1, 0, 1},
		{"lateness as it is", p, ms(37), 0, ms(37)},
		{"wait adds", p, ms(30), ms(20), ms(50)},
		{"margin adds", withMargin(ms(10)), ms(40), ms(1), ms(51)},
		{"negative lateness (a clock ahead) clamps to Min", p, -ms(10), 0, 0},
		{"negative lateness offset by wait", p, -ms(10), ms(30), ms(20)},
		{"negative margin cancels", withMargin(-ms(50)), ms(50), 0, 0},
		{"clamped to Max", p, 10 * time.Second, 0, ms(950)},
		{"at Max exactly", p, ms(950), 0, ms(950)},
		{"clamped to Min", withBounds(ms(100), ms(950)), 1, 0, ms(100)},
		{"Min equals Max", withBounds(ms(200), ms(200)), ms(400), 0, ms(200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.policy.Target(tt.late, tt.wait); got != tt.want {
				t.Errorf("Target(%v, %v) = %v, want %v", tt.late, tt.wait, got, tt.want)
			}
		})
	}
}

// msList turns milliseconds into durations.
func msList(ns []int) []time.Duration {
	d := make([]time.Duration, len(ns))
	for i, n := range ns {
		d[i] = ms(n)
	}
	return d
}

func TestLeadUpdate(t *testing.T) {
	tests := []struct {
		name        string
		shrinkAfter int
		initial     int
		targets     []int // milliseconds
		want        []int // Duration after each Update, milliseconds
	}{
		{"raises at once", 3, 3, []int{5, 9}, []int{5, 9}},
		{"equal keeps", 3, 4, []int{4, 4, 4, 4}, []int{4, 4, 4, 4}},
		{"shrinks after ShrinkAfter lower targets", 3, 8, []int{4, 4, 4}, []int{8, 8, 4}},
		{"shrinks to the largest request", 3, 8, []int{3, 6, 4}, []int{8, 8, 6}},
		{"largest request first", 3, 8, []int{7, 2, 2}, []int{8, 8, 7}},
		{"equal target resets the count", 3, 8, []int{4, 4, 8, 4, 4, 4}, []int{8, 8, 8, 8, 8, 4}},
		{"higher target resets the count", 3, 8, []int{4, 4, 9, 4, 4, 4}, []int{8, 8, 9, 9, 9, 4}},
		{"largest request forgotten after a reset", 3, 8, []int{6, 6, 8, 3, 3, 3}, []int{8, 8, 8, 8, 8, 3}},
		{"count starts over after a shrink", 3, 8, []int{4, 4, 4, 2, 2, 2}, []int{8, 8, 4, 4, 4, 2}},
		{"alternating lower and equal: no flapping", 3, 6, []int{3, 6, 3, 6, 3, 6, 3, 6}, []int{6, 6, 6, 6, 6, 6, 6, 6}},
		{"alternating lower and higher: rises, no flapping", 3, 6, []int{3, 7, 3, 7, 3, 7}, []int{6, 7, 7, 7, 7, 7}},
		{"initial high comes down in one step", 3, 900, []int{2, 3, 2}, []int{900, 900, 3}},
		{"ShrinkAfter 1 follows every target", 1, 8, []int{4, 6, 2, 2}, []int{4, 6, 2, 2}},
		{"ShrinkAfter 0 behaves as 1", 0, 8, []int{4, 6, 2}, []int{4, 6, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPolicy
			p.ShrinkAfter = tt.shrinkAfter
			l := NewLead(p, ms(tt.initial))
			// The first update replaces the initial guess (tested below);
			// prime it with the initial value to test the hysteresis.
			l.Update(ms(tt.initial), 0)
			var got []time.Duration
			for _, k := range msList(tt.targets) {
				n := l.Update(k, 0)
				if n != l.Duration() {
					t.Fatalf("Update returned %v, Duration() %v", n, l.Duration())
				}
				got = append(got, n)
			}
			if want := msList(tt.want); !slices.Equal(got, want) {
				t.Errorf("targets %v: leads %v, want %v", msList(tt.targets), got, want)
			}
		})
	}
}

func TestLeadFirstUpdateReplacesTheGuess(t *testing.T) {
	for _, tt := range []struct{ initial, target time.Duration }{{ms(500), ms(3)}, {ms(3), ms(70)}, {ms(5), ms(5)}} {
		l := NewLead(testPolicy, tt.initial)
		if got := l.Update(tt.target, 0); got != tt.target {
			t.Errorf("initial %v, first target %v: lead %v", tt.initial, tt.target, got)
		}
		// Afterwards, hysteresis: a lower target does not shrink it at once.
		if got := l.Update(tt.target-ms(1), 0); got != tt.target {
			t.Errorf("second update shrank at once to %v", got)
		}
	}
}

func TestLeadRaise(t *testing.T) {
	l := NewLead(testPolicy, ms(100))
	for _, tt := range []struct{ late, want time.Duration }{
		{ms(20), ms(100)}, // never lowers, not even before the first update
		{ms(120), ms(120)},
		{ms(110), ms(120)},
	} {
		if got := l.Raise(tt.late, 0); got != tt.want || l.Duration() != tt.want {
			t.Errorf("Raise(%v) = %v, Duration %v; want %v", tt.late, got, l.Duration(), tt.want)
		}
	}
	// Raise is not the first update: Update still replaces the lead.
	if got := l.Update(ms(30), 0); got != ms(30) {
		t.Errorf("first Update after Raise: %v, want 30ms", got)
	}
	// A raise resets the count of lower targets.
	l.Update(ms(10), 0)
	l.Update(ms(10), 0)
	l.Raise(ms(40), 0)
	if got := l.Update(ms(10), 0); got != ms(40) {
		t.Errorf("Update after a raise shrank at once: %v", got)
	}
}

func TestLeadSteps(t *testing.T) {
	// Steps of 50 ms: a lead up to two steps is any duration; above,
	// whole steps, rounded up.
	p := LeadPolicy{Max: ms(950), ShrinkAfter: 2, Step: ms(50)}
	for _, tt := range []struct{ late, want time.Duration }{
		{ms(30), ms(30)}, {ms(70), ms(70)}, {ms(100), ms(100)}, {ms(100) + 1, ms(150)}, {ms(149), ms(150)}, {ms(150), ms(150)}, {ms(940), ms(950)}, {ms(2000), ms(950)},
	} {
		if got := p.Target(tt.late, 0); got != tt.want {
			t.Errorf("Target(%v) = %v, want %v", tt.late, got, tt.want)
		}
	}
	l := NewLead(p, ms(500))
	for i, tt := range []struct{ late, want time.Duration }{
		{ms(260), ms(300)}, // the first update replaces the guess
		{ms(310), ms(350)}, // up at once, a whole step
		{ms(280), ms(350)}, // 280 + 25 is still within 300..350: no lower target
		{ms(280), ms(350)},
		{ms(280), ms(350)},
		{ms(274), ms(350)}, // 274 + 25 is within 250..300: counts once
		{ms(274), ms(300)}, // twice: down one step
		{ms(30), ms(300)},
		{ms(30), ms(30)}, // under a step, any lead
	} {
		if got := l.Update(tt.late, 0); got != tt.want {
			t.Fatalf("update %d (%v): lead %v, want %v", i, tt.late, got, tt.want)
		}
	}
}

// With Hold, Update keeps the lead for a target above it by at most Hold,
// and a fall to it later does not count as asking for less; Raise rises at
// once.
func TestLeadHold(t *testing.T) {
	p := LeadPolicy{Max: ms(950), ShrinkAfter: 2, Step: ms(50), Hold: ms(25)}
	l := NewLead(p, ms(500))
	for i, tt := range []struct{ late, want time.Duration }{
		{ms(260), ms(300)}, // the first update replaces the guess
		{ms(325), ms(300)}, // within the band held above 300
		{ms(270), ms(300)}, // 270 + 25 is still within 250..300: no lower target
		{ms(326), ms(350)}, // past it: up a whole step
		{ms(274), ms(350)}, // 274 + 25 is within 250..300: counts once
		{ms(360), ms(350)}, // held: not asking for less
		{ms(274), ms(350)}, // counts once again
		{ms(274), ms(300)},
	} {
		if got := l.Update(tt.late, 0); got != tt.want {
			t.Fatalf("update %d (%v): lead %v, want %v", i, tt.late, got, tt.want)
		}
	}
	if got := l.Raise(ms(310), 0); got != ms(350) {
		t.Fatalf("Raise(310 ms) = %v, want 350 ms at once", got)
	}
}

func TestLeadNoFlappingUnderNoise(t *testing.T) {
	// Targets that wander between 40 and 60 ms: the lead stays within them,
	// and each decrease needs ShrinkAfter updates since the last change, so
	// decreases are rare however noisy the targets are.
	l := NewLead(testPolicy, ms(50))
	rng := rand.New(rand.NewPCG(7, 7))
	decreases, sinceChange, last := 0, 0, l.Duration()
	const updates = 300
	for range updates {
		n := l.Update(ms(40+rng.IntN(21)), 0)
		sinceChange++
		if n < last {
			decreases++
			if sinceChange < testPolicy.ShrinkAfter {
				t.Fatalf("decrease %v -> %v only %d updates after the last change", last, n, sinceChange)
			}
		}
		if n != last {
			sinceChange = 0
		}
		last = n
		if n < ms(40) || n > ms(60) {
			t.Fatalf("lead %v outside the targets' range", n)
		}
	}
	if most := updates / testPolicy.ShrinkAfter; decreases == 0 || decreases > most {
		t.Errorf("%d decreases in %d updates, want 1..%d", decreases, updates, most)
	}
}

func TestNewLeadClamps(t *testing.T) {
	p := testPolicy
	p.Min, p.Max = ms(20), ms(100)
	for _, tt := range []struct{ initial, want time.Duration }{
		{-ms(5), ms(20)}, {0, ms(20)}, {ms(20), ms(20)}, {ms(60), ms(60)}, {ms(100), ms(100)}, {ms(101), ms(100)}, {time.Hour, ms(100)},
	} {
		t.Run(fmt.Sprint(tt.initial), func(t *testing.T) {
			l := NewLead(p, tt.initial)
			if l.Duration() != tt.want {
				t.Errorf("NewLead(initial %v).Duration() = %v, want %v", tt.initial, l.Duration(), tt.want)
			}
			if l.Policy != p {
				t.Errorf("Policy = %+v, want %+v", l.Policy, p)
			}
		})
	}
}

func TestStampFrame(t *testing.T) {
	const f = 50 * time.Millisecond
	for _, tt := range []struct {
		pos, lead time.Duration
		want      Frame
	}{
		{0, 0, 0},
		{1, 0, 1},
		{ms(49), 0, 1},
		{ms(50), 0, 1},
		{ms(50) + 1, 0, 2},
		{ms(10), ms(40), 1},   // exactly on frame 1's time: still frame 1
		{ms(10), ms(41), 2},   // a nanosecond past it would do
		{ms(120), ms(2), 3},   // early in frame 2: the next frame
		{ms(149), ms(2), 4},   // late in frame 2: the one after
		{ms(120), ms(130), 5}, // a lead longer than a frame
		{-ms(200), ms(30), 0}, // before frame 0: frame 0
	} {
		if got := StampFrame(tt.pos, tt.lead, f); got != tt.want {
			t.Errorf("StampFrame(%v, %v) = %d, want %d", tt.pos, tt.lead, got, tt.want)
		}
	}
}
