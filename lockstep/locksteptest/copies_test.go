package locksteptest

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// TestCopiesOnlyOnLossyPaths checks that the second copy of each datagram
// with news stops on a path that lost nothing for five minutes (lan) and
// stays on one that loses now and then (broadband): the datagrams a member
// receives per second in the seventh minute against the first.
func TestCopiesOnlyOnLossyPaths(t *testing.T) {
	for _, tc := range []struct {
		profile string
		lo, hi  float64 // bounds of seventh-minute / first-minute
	}{
		{"lan", 0.4, 0.7},
		{"broadband", 0.85, 1.15},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			p, err := netsim.Named(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			var first, seventh int
			res, err := Run(Config{
				Members:  2,
				Frames:   7 * 60 * 20,
				Seed:     1,
				Profile:  p,
				Unsigned: true,
				NewSim:   func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
				Commands: commandsEvery(10),
				OnReceive: func(now time.Duration, _, _ bucket.Slot, _ []byte) {
					switch {
					case now < time.Minute:
						first++
					case now >= 6*time.Minute+5*time.Second && now < 6*time.Minute+55*time.Second:
						seventh++
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Identical {
				t.Fatal("members disagree")
			}
			ratio := float64(seventh) / 50 / (float64(first) / 60)
			t.Logf("%s: %d datagrams in the first minute, %d in 50 s of the seventh: ratio %.2f", tc.profile, first, seventh, ratio)
			if ratio < tc.lo || ratio > tc.hi {
				t.Errorf("ratio %.2f outside [%.2f, %.2f]", ratio, tc.lo, tc.hi)
			}
		})
	}
}
