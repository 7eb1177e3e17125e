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

// TestRejoinIsNoLoss checks that admitting a member that comes back is not
// taken for a loss: its join requests were numbered too, and a member that
// saw a loss on any path sends copies on every path, so on lan (which loses
// nothing) a rejoin would otherwise double every member's datagrams for
// five minutes.
func TestRejoinIsNoLoss(t *testing.T) {
	p, err := netsim.Named("lan")
	if err != nil {
		t.Fatal(err)
	}
	var late int // datagrams received in the run's last 20 s
	const frames = 1600
	res, err := Run(Config{
		Members:  4,
		Frames:   frames,
		Seed:     2,
		Profile:  p,
		Unsigned: true,
		NewSim:   func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
		Commands: commandsEvery(10),
		Faults:   []Fault{{Kind: FaultKill, Slot: 3, Frame: 200}, {Kind: FaultRejoin, Slot: 3, Frame: 300}},
		OnReceive: func(now time.Duration, _, _ bucket.Slot, _ []byte) {
			if now >= 60*time.Second && now < 80*time.Second {
				late++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Identical || len(res.Survivors) != 4 {
		t.Fatalf("identical %v, survivors %v", res.Identical, res.Survivors)
	}
	// Four members at 20 frames a second: a seal a frame on each of the 12
	// directed paths is 240 a second, commands every tenth frame add a few.
	t.Logf("%d datagrams in the last 20 s", late)
	if r := float64(late) / 20; r < 216 || r > 300 {
		t.Errorf("%.1f datagrams/s in the last 20 s, want 216-300 (no copies)", r)
	}
}
