package cursor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/reckon"
	"github.com/phalanx-net/phalanx/rng"
)

// overNetwork runs shares for frames frames of 50 ms over a virtual network
// on which every update takes 30 ms (netsim.Network), tick sending member
// i's updates, and returns the time of the last frame.
func overNetwork(t *testing.T, shares []*Share, frames int, tick func(i int, now time.Duration, send func(to int, u []byte))) time.Duration {
	t.Helper()
	type update struct {
		from, to int
		data     []byte
	}
	p := netsim.Profile{Name: "delayed", Phases: []netsim.Phase{{Duration: time.Hour, Conditions: netsim.Conditions{Latency: 30 * time.Millisecond}}}}
	root := rng.New(1, 0)
	net := netsim.NewNetwork[update](len(shares), p, func(from, to int) *rng.PCG {
		return root.Derive(fmt.Sprintf("%d->%d", from, to))
	})
	var now time.Duration
	for f := range frames {
		now = time.Duration(f) * 50 * time.Millisecond
		for at, ok := net.Next(); ok && at <= now; at, ok = net.Next() {
			_, u, _ := net.Pop()
			if err := shares[u.to].Receive(now, u.from, u.data); err != nil {
				t.Fatal(err)
			}
		}
		for i := range shares {
			tick(i, now, func(to int, u []byte) { net.Send(now, i, to, len(u), update{i, to, u}) })
		}
	}
	return now
}

// Three members over a perfect network with 30 ms of delay: every display
// follows its cursor closely, and cubic moves more smoothly than snap.
func TestShareOverADelayedNetwork(t *testing.T) {
	const members = 3
	shares := make([]*Share, members)
	for i := range shares {
		shares[i] = New(Config{Members: members, Self: i, Seed: 7})
	}
	now := overNetwork(t, shares, 1200, func(i int, now time.Duration, send func(int, []byte)) {
		shares[i].Tick(now, func(u []byte) {
			for to := range shares {
				if to != i {
					send(to, u)
				}
			}
		})
	})
	m := shares[0].Metrics(now)
	if m[reckon.Cubic].UpdatesPerS <= 0 || m[reckon.Cubic].UpdatesPerS > 20 {
		t.Fatalf("updates per second %v", m[reckon.Cubic].UpdatesPerS)
	}
	if m[reckon.Cubic].ErrorP99 > 2 {
		t.Fatalf("cubic p99 error %v", m[reckon.Cubic].ErrorP99)
	}
	if m[reckon.Cubic].MaxJump >= m[reckon.Snap].MaxJump {
		t.Fatalf("cubic jumps %v, snap %v", m[reckon.Cubic].MaxJump, m[reckon.Snap].MaxJump)
	}
	if err := shares[0].Receive(now, 1, []byte{0x02}); err == nil {
		t.Fatal("a malformed update was accepted")
	}
}

// TestInterestFilters: eight members over a network with 30 ms of delay,
// without and with the interest filters: with them each member sends at
// least 3 times fewer update bytes, and the cursors on its screen are shown
// no worse.
func TestInterestFilters(t *testing.T) {
	run := func(in *reckon.Interest) (bytes int, visible, all reckon.Metrics, onScreen float64) {
		const members = 8
		shares := make([]*Share, members)
		for i := range shares {
			shares[i] = New(Config{Members: members, Self: i, Seed: 3, Interest: in, OnScreen: true})
		}
		now := overNetwork(t, shares, 2400, func(i int, now time.Duration, send func(int, []byte)) {
			shares[i].TickTo(now, func(to int, u []byte) {
				bytes += len(u)
				send(to, u)
			})
		})
		for _, s := range shares {
			v, a := s.VisibleMetrics()[reckon.Cubic], s.Metrics(now)[reckon.Cubic]
			visible.ErrorP99 = max(visible.ErrorP99, v.ErrorP99)
			all.ErrorP99 = max(all.ErrorP99, a.ErrorP99)
			onScreen += s.OnScreen() / members
		}
		return bytes, visible, all, onScreen
	}
	allBytes, allVisible, _, onScreen := run(nil)
	bytes, visible, everywhere, _ := run(&reckon.Interest{})
	t.Logf("bytes %d → %d; on-screen error p99 %.3f → %.3f (everywhere %.3f); cursors on screen %.1f%%",
		allBytes, bytes, allVisible.ErrorP99, visible.ErrorP99, everywhere.ErrorP99, 100*onScreen)
	if onScreen < 0.005 {
		t.Fatalf("cursors on screen %.2f%% of the time: too little to compare", 100*onScreen)
	}
	if bytes*3 > allBytes {
		t.Errorf("with the filters %d bytes, without %d: not 3 times fewer", bytes, allBytes)
	}
	if visible.ErrorP99 > allVisible.ErrorP99+1e-9 {
		t.Errorf("on-screen error p99 %.3f with the filters, %.3f without", visible.ErrorP99, allVisible.ErrorP99)
	}
	if everywhere.ErrorP99 <= allVisible.ErrorP99 {
		t.Errorf("the filters left the far cursors as well shown (p99 %.3f) as those on screen: they filtered nothing", everywhere.ErrorP99)
	}
}

// Shares given one Truths measure exactly what shares moving their own
// paths measure, and shares measuring only on screen what is on screen.
func TestSharedTruthsChangeNothing(t *testing.T) {
	const members = 8
	run := func(shared, onScreenOnly bool) []map[reckon.Method]reckon.Metrics {
		var truths *Truths
		if shared {
			truths = NewTruths(9, members)
		}
		shares := make([]*Share, members)
		for i := range shares {
			shares[i] = New(Config{Members: members, Self: i, Seed: 9, Truths: truths, OnScreen: true, OnScreenOnly: onScreenOnly})
		}
		var now time.Duration
		for f := range 1200 {
			now = time.Duration(f) * 50 * time.Millisecond
			for i, s := range shares {
				s.Tick(now, func(u []byte) {
					for j, o := range shares {
						if j != i {
							if err := o.Receive(now, i, u); err != nil {
								t.Fatal(err)
							}
						}
					}
				})
			}
		}
		var out []map[reckon.Method]reckon.Metrics
		for _, s := range shares {
			out = append(out, s.Metrics(now), s.VisibleMetrics())
		}
		return out
	}
	own, shared, onScreen := run(false, false), run(true, false), run(true, true)
	seen := false
	for i := 1; i < len(own); i += 2 {
		for k, m := range own[i] {
			if onScreen[i][k] != m {
				t.Fatalf("share %d, %v: %+v on screen only, %+v with every meter", i/2, k, onScreen[i][k], m)
			}
		}
		seen = seen || own[i][reckon.Cubic].ErrorMean != 0
	}
	if !seen {
		t.Fatal("no share measured anything on screen")
	}
	if onScreen[0][reckon.Cubic].ErrorMean != 0 {
		t.Fatal("a share measuring on screen only measured every frame")
	}
	for i := range own {
		for k, m := range own[i] {
			if shared[i][k] != m {
				t.Fatalf("share %d, %v: %+v with shared truths, %+v without", i/2, k, shared[i][k], m)
			}
		}
	}
	if own[0][reckon.Cubic].ErrorMean == 0 {
		t.Fatal("nothing was measured")
	}
}

// TestFoldSkipsModOnlyWhereItChangesNothing compares fold with the
// reflection through math.Mod it shortens, on and off the map.
func TestFoldSkipsModOnlyWhereItChangesNothing(t *testing.T) {
	r := rng.SeedFromUint64(1).PCG()
	values := []float64{0, math.Copysign(0, -1), mapSide, 2 * mapSide, -mapSide, 3 * mapSide, math.Nextafter(2*mapSide, 0), math.Inf(1), math.NaN()}
	for range 10000 {
		values = append(values, (float64(r.Uint32())/(1<<32)-0.25)*4*mapSide)
	}
	for _, v := range values {
		got, want := fold(v, mapSide), foldMod(v, mapSide)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("fold(%v) = %v, through math.Mod %v", v, got, want)
		}
	}
}

// nearest is the smallest Len, exactly, however close the lengths.
func TestNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 100_000 {
		scale := math.Pow(10, float64(i%9*40-160))
		n := 1 + r.IntN(3)
		outs := make([]reckon.Vec2, n)
		want := math.Inf(1)
		for j := range outs {
			outs[j] = reckon.Vec2{X: scale * r.Float64(), Y: scale * r.Float64()}
			if j > 0 && r.IntN(2) == 0 {
				outs[j] = reckon.Vec2{X: outs[0].Y, Y: math.Nextafter(outs[0].X, 0)} // nearly as long
			}
			if r.IntN(10) == 0 {
				outs[j] = reckon.Vec2{}
			}
			want = min(want, outs[j].Len())
		}
		if got := nearest(outs); got != want {
			t.Fatalf("nearest(%v) = %v, want %v", outs, got, want)
		}
	}
}

// TestMeasureSharesOnlyEqualPositions: a share measures a settled
// receiver's position once for every method (measure); measured instead
// the plain way, every receiver on its own from its full state
// (Receiver.At, Meter.Frame), the figures are the same, on and off
// screen, over a lossy, jittery network on which corrections are often
// under way.
func TestMeasureSharesOnlyEqualPositions(t *testing.T) {
	const members = 6
	shares := make([]*Share, members)
	for i := range shares {
		shares[i] = New(Config{Members: members, Self: i, Seed: 5, OnScreen: true})
	}
	type update struct {
		from, to int
		data     []byte
	}
	p := netsim.Profile{Name: "lossy", Phases: []netsim.Phase{{Duration: time.Hour, Conditions: netsim.Conditions{
		Latency: 40 * time.Millisecond, Jitter: 30 * time.Millisecond, Loss: 100_000}}}}
	root := rng.New(5, 0)
	net := netsim.NewNetwork[update](members, p, func(from, to int) *rng.PCG {
		return root.Derive(fmt.Sprintf("%d->%d", from, to))
	})
	ref := make([][reckon.Cubic + 1]reckon.Meter[reckon.Vec2], members) // share 0's, the plain way
	var refVisible [reckon.Cubic + 1]reckon.Meter[reckon.Vec2]
	converging, settled := 0, 0
	var now time.Duration
	for f := range 2400 {
		now = time.Duration(f) * 50 * time.Millisecond
		for at, ok := net.Next(); ok && at <= now; at, ok = net.Next() {
			_, u, _ := net.Pop()
			if err := shares[u.to].Receive(now, u.from, u.data); err != nil {
				t.Fatal(err)
			}
		}
		for i, s := range shares {
			s.Tick(now, func(u []byte) {
				for to := range shares {
					if to != i {
						net.Send(now, i, to, len(u), update{i, to, u})
					}
				}
			})
		}
		s := shares[0]
		view := s.camera()
		for m := 1; m < members; m++ {
			truth := s.truths[m].Pos
			for k, r := range s.display[m] {
				if !r.Started() {
					continue
				}
				if k != int(reckon.Snap) {
					if r.Converging(now) {
						converging++
					} else {
						settled++
					}
				}
				shown := r.At(now).Pos
				ref[m][k].Frame(now, shown, truth)
				if view.Contains(s.world(m, truth)) || view.Contains(s.world(m, shown)) {
					refVisible[k].Frame(now, shown, truth)
				}
			}
		}
	}
	if converging == 0 || settled == 0 {
		t.Fatalf("%d measurements under a correction, %d settled: want both", converging, settled)
	}
	got, want := shares[0].Metrics(now), shares[0].metricsOf(ref, now)
	for k, m := range want {
		if got[k] != m {
			t.Errorf("%v: %+v measured by the share, %+v the plain way", k, got[k], m)
		}
	}
	vis := shares[0].VisibleMetrics()
	for k := range refVisible {
		mt := refVisible[k].Metrics()
		if w := (reckon.Metrics{ErrorMean: mt.ErrorMean, ErrorP99: mt.ErrorP99}); vis[reckon.Method(k)] != w {
			t.Errorf("%v on screen: %+v measured by the share, %+v the plain way", reckon.Method(k), vis[reckon.Method(k)], w)
		}
	}
}
