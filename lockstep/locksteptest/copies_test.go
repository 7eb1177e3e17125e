package locksteptest

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// TestCopiesOnlyOnLossyPaths checks that the second copy of each datagram
// with news goes only on a path that has shown loss: never on lan (which
// loses nothing: about one datagram a frame each way, from the first minute
// to the seventh), and on broadband (one datagram in a thousand) once its
// paths lost one, so that its seventh minute carries about twice lan's
// datagrams.
func TestCopiesOnlyOnLossyPaths(t *testing.T) {
	rate := map[string][2]float64{} // datagrams received per second: first minute, seventh
	for _, profile := range []string{"lan", "broadband"} {
		p, err := netsim.Named(profile)
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
			t.Fatalf("%s: members disagree", profile)
		}
		rate[profile] = [2]float64{float64(first) / 60, float64(seventh) / 50}
		t.Logf("%s: %d datagrams in the first minute, %d in 50 s of the seventh", profile, first, seventh)
	}
	// Two members at 20 frames a second: a seal a frame each way is 40 a
	// second, commands every tenth frame add a few.
	for i, minute := range []string{"first", "seventh"} {
		if r := rate["lan"][i]; r < 36 || r > 50 {
			t.Errorf("lan, %s minute: %.1f datagrams/s, want 36-50 (no copies)", minute, r)
		}
	}
	if r := rate["broadband"][1] / rate["lan"][1]; r < 1.6 || r > 2.4 {
		t.Errorf("broadband's seventh minute carries %.2f times lan's datagrams, want 1.6-2.4 (copies)", r)
	}
}
