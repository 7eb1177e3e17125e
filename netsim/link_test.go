package netsim

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/rng"
)

// constant returns a one-phase profile with conditions c.
func constant(c Conditions) Profile {
	return Profile{Name: "test", Phases: []Phase{{Duration: time.Minute, Conditions: c}}}
}

func named(t testing.TB, name string) Profile {
	t.Helper()
	p, err := Named(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sendEvery sends n datagrams of 100 bytes, one every interval from time 0.
func sendEvery(l *Link, n int, interval time.Duration) []Delivery {
	ds := make([]Delivery, n)
	for i := range ds {
		ds[i] = l.Send(time.Duration(i)*interval, 100)
	}
	return ds
}

// digest hashes the deliveries so a whole run compares as one number.
func digest(ds []Delivery) uint64 {
	h := fnv.New64a()
	var buf []byte
	for _, d := range ds {
		buf = binary.LittleEndian.AppendUint64(buf[:0], uint64(d.Copies))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(d.Arrival[0]))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(d.Arrival[1]))
		if d.Reordered {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
		h.Write(buf)
	}
	return h.Sum64()
}

func TestLinkDeterministic(t *testing.T) {
	for _, name := range Names() {
		p := named(t, name)
		a := sendEvery(NewLink(p, rng.New(42, 1)), 5000, 10*time.Millisecond)
		b := sendEvery(NewLink(p, rng.New(42, 1)), 5000, 10*time.Millisecond)
		c := sendEvery(NewLink(p, rng.New(43, 1)), 5000, 10*time.Millisecond)
		if digest(a) != digest(b) {
			t.Errorf("%s: same seed gave different deliveries", name)
		}
		if digest(a) == digest(c) {
			t.Errorf("%s: different seeds gave identical deliveries", name)
		}
	}
}

// TestLinkGolden pins the model: the same seed must give these arrivals on
// every architecture and in every version. If you change the model on
// purpose, update the constant and say so in the change.
func TestLinkGolden(t *testing.T) {
	ds := sendEvery(NewLink(named(t, "bad"), rng.New(42, 54)), 10_000, 20*time.Millisecond)
	const want = 0x252a2309cdd00e2b
	if got := digest(ds); got != want {
		t.Fatalf("digest = %#x, want %#x", got, uint64(want))
	}
}

func TestLinkStreamsIndependent(t *testing.T) {
	root := rng.New(7, 0)
	p := named(t, "bad")

	// Adding a link changes no other link.
	alone := sendEvery(NewLink(p, root.Derive("0->1")), 2000, 20*time.Millisecond)
	crowdA := NewLink(p, root.Derive("0->1"))
	crowdB := NewLink(p, root.Derive("1->0"))
	var crowd []Delivery
	for i := range 2000 {
		now := time.Duration(i) * 20 * time.Millisecond
		crowd = append(crowd, crowdA.Send(now, 100))
		crowdB.Send(now, 100)
	}
	if digest(alone) != digest(crowd) {
		t.Error("a second link perturbed the first")
	}

	// Changing duplication changes which datagrams are lost not at all.
	q := named(t, "bad")
	q.Phases[0].Duplicate = 300_000
	withDup := sendEvery(NewLink(q, root.Derive("0->1")), 2000, 20*time.Millisecond)
	for i := range alone {
		if alone[i].Lost() != withDup[i].Lost() || alone[i].Arrival[0] != withDup[i].Arrival[0] {
			t.Fatalf("datagram %d: duplication setting changed loss or arrival: %+v vs %+v", i, alone[i], withDup[i])
		}
	}
}

func TestLinkLossRate(t *testing.T) {
	const n = 200_000
	tests := []struct {
		name string
		c    Conditions
		want float64
	}{
		{"none", Conditions{}, 0},
		{"1%", Conditions{Loss: 10_000}, 0.01},
		{"10%", Conditions{Loss: 100_000}, 0.10},
		{"all", Conditions{Loss: Always}, 1},
		{"burst only", Conditions{Burst: Burst{Enter: 40_000, Leave: 250_000, LossBad: 800_000}}, 0.110345},
		{"burst lossy good", Conditions{Burst: Burst{Enter: 10_000, Leave: 300_000, LossGood: 10_000, LossBad: 500_000}}, (0.3*0.01 + 0.01*0.5) / 0.31},
		{"loss and burst", named(t, "bad").Phases[0].Conditions, 1 - 0.98*(1-0.110345)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLink(constant(tt.c), rng.New(1, 1))
			lost := 0
			for i := range n {
				if l.Send(time.Duration(i)*time.Millisecond, 100).Lost() {
					lost++
				}
			}
			got := float64(lost) / n
			// Ten binomial standard deviations: bursts widen the spread.
			tol := 10*math.Sqrt(tt.want*(1-tt.want)/n) + 1e-9
			if math.Abs(got-tt.want) > tol {
				t.Fatalf("loss rate %.5f, want %.5f ± %.5f", got, tt.want, tol)
			}
			if s := l.Stats(); s.Lost != uint64(lost) || s.Sent != n || s.Bytes != 100*n {
				t.Fatalf("stats %+v, want Lost %d Sent %d Bytes %d", s, lost, n, 100*n)
			}
		})
	}
}

// lossRuns returns the mean length of runs of consecutive lost datagrams.
func lossRuns(ds []Delivery) float64 {
	lost, runs := 0, 0
	for i, d := range ds {
		if d.Lost() {
			lost++
			if i == 0 || !ds[i-1].Lost() {
				runs++
			}
		}
	}
	if runs == 0 {
		return 0
	}
	return float64(lost) / float64(runs)
}

func TestLinkBurstsCluster(t *testing.T) {
	ds := sendEvery(NewLink(named(t, "bad"), rng.New(3, 3)), 100_000, 20*time.Millisecond)
	if got := lossRuns(ds); got <= 1.5 {
		t.Errorf("bad: mean loss run %.2f, want > 1.5", got)
	}
	// Independent loss of the same rate barely clusters: runs near 1/(1-p).
	ds = sendEvery(NewLink(constant(Conditions{Loss: 128_000}), rng.New(3, 3)), 100_000, 20*time.Millisecond)
	if got := lossRuns(ds); got > 1.2 {
		t.Errorf("independent 12.8%% loss: mean loss run %.2f, want ≤ 1.2", got)
	}
}

func TestLinkReorder(t *testing.T) {
	l := NewLink(named(t, "bad"), rng.New(5, 5))
	ds := sendEvery(l, 20_000, 10*time.Millisecond)
	overtaken, held := 0, 0
	var latest time.Duration
	for _, d := range ds {
		if d.Lost() {
			continue
		}
		if d.Reordered {
			held++
		}
		if d.Arrival[0] < latest {
			overtaken++
		}
		latest = max(latest, d.Arrival[0])
	}
	if overtaken == 0 {
		t.Error("no datagram arrived after a later one")
	}
	if s := l.Stats(); s.Reordered != uint64(held) || held == 0 {
		t.Errorf("Stats().Reordered = %d, deliveries marked reordered %d", s.Reordered, held)
	}
	// 2% of the delivered, within a generous margin.
	if rate := float64(held) / float64(len(ds)-int(l.Stats().Lost)); rate < 0.015 || rate > 0.025 {
		t.Errorf("reorder rate %.4f, want about 0.02", rate)
	}
}

func TestLinkInOrderWithoutReorder(t *testing.T) {
	// High jitter, frequent sends, no reorder setting: arrivals never go
	// backwards, because jitter comes from FIFO queues.
	l := NewLink(constant(Conditions{Latency: 10 * time.Millisecond, Jitter: 50 * time.Millisecond, Duplicate: 100_000}), rng.New(9, 9))
	var latest time.Duration
	for i, d := range sendEvery(l, 20_000, time.Millisecond) {
		if d.Arrival[0] < latest {
			t.Fatalf("datagram %d arrived at %v, before an earlier one at %v", i, d.Arrival[0], latest)
		}
		latest = d.Arrival[0]
	}
}

func TestLinkDuplicate(t *testing.T) {
	c := Conditions{Latency: 30 * time.Millisecond, Jitter: 5 * time.Millisecond, Duplicate: 50_000}
	l := NewLink(constant(c), rng.New(11, 11))
	dups := 0
	for i, d := range sendEvery(l, 20_000, 20*time.Millisecond) {
		switch d.Copies {
		case 1:
			if d.Arrival[1] != 0 {
				t.Fatalf("datagram %d: single copy with second arrival %v", i, d.Arrival[1])
			}
		case 2:
			dups++
			if gap := d.Arrival[1] - d.Arrival[0]; gap < 0 || gap > c.Jitter {
				t.Fatalf("datagram %d: copy %v after the original, want within [0, %v]", i, gap, c.Jitter)
			}
		default:
			t.Fatalf("datagram %d: %d copies on a lossless link", i, d.Copies)
		}
	}
	if s := l.Stats(); s.Duplicated != uint64(dups) {
		t.Errorf("Stats().Duplicated = %d, counted %d", s.Duplicated, dups)
	}
	if rate := float64(dups) / 20_000; rate < 0.045 || rate > 0.055 {
		t.Errorf("duplication rate %.4f, want about 0.05", rate)
	}
}

func TestLinkDelay(t *testing.T) {
	const n = 100_000
	c := Conditions{Latency: 40 * time.Millisecond, Jitter: 10 * time.Millisecond}
	l := NewLink(constant(c), rng.New(13, 13))
	var sum time.Duration
	lo, hi := time.Duration(math.MaxInt64), time.Duration(0)
	for i := range n {
		// Sent far apart, so the FIFO floor never applies.
		now := time.Duration(i) * time.Second
		d := l.Send(now, 100)
		delay := d.Arrival[0] - now
		sum += delay
		lo, hi = min(lo, delay), max(hi, delay)
	}
	mean := sum / n
	if lo < c.Latency || hi > c.Latency+19*c.Jitter/3 {
		t.Errorf("delay range [%v, %v], want within [%v, %v]", lo, hi, c.Latency, c.Latency+19*c.Jitter/3)
	}
	if want := c.Latency + c.Jitter; mean < want-200*time.Microsecond || mean > want+200*time.Microsecond {
		t.Errorf("mean delay %v, want about %v", mean, want)
	}
	if hi < c.Latency+3*c.Jitter {
		t.Errorf("max delay %v: no tail beyond 3×jitter", hi)
	}
}

func TestLinkArrivalsNotBeforeSend(t *testing.T) {
	for _, name := range Names() {
		l := NewLink(named(t, name), rng.New(17, 17))
		for i := range 10_000 {
			now := time.Duration(i) * 3 * time.Millisecond
			d := l.Send(now, 1200)
			for k := range d.Copies {
				if d.Arrival[k] < now {
					t.Fatalf("%s: arrival %v before send %v", name, d.Arrival[k], now)
				}
			}
		}
	}
}

func TestLinkPhases(t *testing.T) {
	p := Profile{Phases: []Phase{
		{Duration: 10 * time.Second, Conditions: Conditions{Latency: 10 * time.Millisecond}},
		{Duration: 5 * time.Second, Conditions: Conditions{Latency: 100 * time.Millisecond}},
		{Duration: 5 * time.Second, Conditions: Conditions{Latency: 10 * time.Millisecond, Loss: Always}},
	}}
	l := NewLink(p, rng.New(19, 19))
	tests := []struct {
		now   time.Duration
		delay time.Duration // -1: lost
	}{
		{0, 10 * time.Millisecond},
		{10*time.Second - time.Nanosecond, 10 * time.Millisecond},
		{10 * time.Second, 100 * time.Millisecond},
		{15*time.Second - time.Nanosecond, 100 * time.Millisecond},
		{15 * time.Second, -1},
		{20*time.Second - time.Nanosecond, -1},
		{20 * time.Second, 10 * time.Millisecond}, // the profile repeats
		{30 * time.Second, 100 * time.Millisecond},
		{35 * time.Second, -1},
	}
	for _, tt := range tests {
		d := l.Send(tt.now, 100)
		switch {
		case tt.delay < 0 && !d.Lost():
			t.Errorf("at %v: delivered at %v, want lost", tt.now, d.Arrival[0])
		case tt.delay >= 0 && (d.Lost() || d.Arrival[0]-tt.now != tt.delay):
			t.Errorf("at %v: %+v, want delay %v", tt.now, d, tt.delay)
		}
	}
}

func TestLinkPanics(t *testing.T) {
	mustPanic(t, "NewLink(nil rng)", func() { NewLink(named(t, "lan"), nil) })
	mustPanic(t, "NewLink(invalid)", func() { NewLink(Profile{}, rng.New(1, 1)) })
	l := NewLink(named(t, "lan"), rng.New(1, 1))
	mustPanic(t, "Send(negative time)", func() { l.Send(-1, 1) })
	mustPanic(t, "Send(negative size)", func() { l.Send(0, -1) })
	mustPanic(t, "Send(huge size)", func() { l.Send(0, MaxDatagram+1) })
}

func TestLinkCopiesProfile(t *testing.T) {
	p := constant(Conditions{Latency: time.Millisecond})
	l := NewLink(p, rng.New(1, 1))
	p.Phases[0].Loss = Always // must not reach the link
	if l.Send(0, 1).Lost() {
		t.Fatal("changing the profile after NewLink changed the link")
	}
}

// A Link's Send, an Uplink's Admit and a Network's Send and Pop (once its
// queue has grown) do not allocate.
func TestModelsDoNotAllocate(t *testing.T) {
	l := NewLink(named(t, "bad"), rng.New(1, 1))
	u := NewUplink(named(t, "modem"))
	n := NewNetwork[int](2, named(t, "bad"), func(from, to int) *rng.PCG { return rng.New(uint64(from), uint64(to)) })
	for k := range 100 { // grow the queue
		n.Schedule(time.Duration(k), k)
	}
	for n.Len() > 0 {
		n.Pop()
	}
	var now time.Duration
	for _, tt := range []struct {
		name string
		call func()
	}{
		{"Link.Send", func() { l.Send(now, 100) }},
		{"Uplink.Admit", func() { u.Admit(now, 100) }},
		{"Network.Send and Pop", func() {
			n.Send(now, 0, 1, 100, 1)
			for n.Len() > 20 {
				n.Pop()
			}
		}},
	} {
		if allocs := testing.AllocsPerRun(1000, func() {
			now += time.Millisecond
			tt.call()
		}); allocs != 0 {
			t.Errorf("%s allocates %v times per call", tt.name, allocs)
		}
	}
}

// TestJitterDistribution holds the figures documented at Conditions.Jitter
// and in docs/profiles.md.
func TestJitterDistribution(t *testing.T) {
	const n = 200_000
	const j = time.Second
	r := rng.New(23, 23)
	xs := make([]time.Duration, n)
	var sum time.Duration
	for i := range xs {
		xs[i] = jitterSample(r, j)
		sum += xs[i]
	}
	slices.Sort(xs)
	tests := []struct {
		what   string
		got    time.Duration
		lo, hi float64 // in units of j
	}{
		{"mean", sum / n, 0.98, 1.02},
		{"min", xs[0], 0, 0.01},
		{"median", xs[n/2], 0.90, 0.96},
		{"p95", xs[n*95/100], 1.95, 2.10},
		{"p99", xs[n*99/100], 2.70, 2.90},
		{"p99.9", xs[n*999/1000], 3.70, 4.10},
		{"max", xs[n-1], 3.5, 19.0 / 3},
	}
	for _, tt := range tests {
		if x := tt.got.Seconds(); x < tt.lo || x > tt.hi {
			t.Errorf("%s = %.3f·jitter, want within [%.2f, %.2f]", tt.what, x, tt.lo, tt.hi)
		}
	}
	if jitterSample(r, 0) != 0 {
		t.Error("zero jitter gave a delay")
	}
}
