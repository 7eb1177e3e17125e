package locksteptest

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// silenceFaults is a freeze, a partition, a kill and a leave among eight
// members: the schedule of TestWindowsChangeNothing.
var silenceFaults = []Fault{
	{Kind: FaultFreeze, Slot: 1, Frame: 60, Duration: 400 * time.Millisecond},
	{Kind: FaultPartition, Frame: 120, Duration: 300 * time.Millisecond},
	{Kind: FaultKill, Slot: 4, Frame: 200},
	{Kind: FaultLeave, Slot: 2, Frame: 240},
}

// silenceUntil is the end of the span in which every member sends to every
// other (the kill comes at frame 200, 10 s).
const silenceUntil = 9 * time.Second

// longestSilence runs silenceFaults on the modem inside budget bytes/s (0:
// none) and returns the result and the longest time, up to silenceUntil,
// that a member went without a datagram from another, with the two.
func longestSilence(t *testing.T, seed uint64, budget int) (res *Result, gap time.Duration, from, to bucket.Slot) {
	t.Helper()
	p, err := netsim.Named("modem")
	if err != nil {
		t.Fatal(err)
	}
	const members = 8
	var last [members][members]time.Duration
	note := func(now time.Duration, f, r bucket.Slot) {
		if now = min(now, silenceUntil); now-last[f][r] > gap {
			gap, from, to = now-last[f][r], f, r
		}
	}
	res, err = Run(Config{
		Members: members, Frames: 260, Seed: seed, Profile: p,
		Core:     lockstep.Config{Budget: budget},
		NewSim:   func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
		Commands: commandsEvery(3),
		Faults:   silenceFaults,
		OnReceive: func(now time.Duration, f, r bucket.Slot, _ []byte) {
			if now <= silenceUntil {
				note(now, f, r)
				last[f][r] = now
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range bucket.Slot(members) {
		for r := range bucket.Slot(members) {
			if f != r {
				note(silenceUntil, f, r)
			}
		}
	}
	return res, gap, from, to
}

// TestTightRoundsStarveNobody: inside the modem's budget of 3,600 B/s,
// where datagrams go out in rounds over the members (tight.go), a freeze
// and a partition shorter than the drop timeout leave no member silent
// towards another for more than two seconds, and every member but the
// killed one and the one that leaves finishes. The seeds are among those
// on which the same run without a budget ends with no member left: each
// member then offers the modem's uplink some thirty times what it carries,
// its queue keeps only the first datagram of a send when it has room, and
// on seed 3 none of member 3's datagrams to member 2 got in for six
// seconds.
func TestTightRoundsStarveNobody(t *testing.T) {
	for _, seed := range []uint64{3, 6, 7} {
		res, gap, from, to := longestSilence(t, seed, 3600)
		if gap > 2*time.Second {
			t.Errorf("seed %d: member %d heard nothing from member %d for %v", seed, to, from, gap)
		}
		want := []bucket.Slot{0, 1, 3, 5, 6, 7}
		if len(res.Survivors) != len(want) {
			t.Errorf("seed %d: survivors %v, want %v", seed, res.Survivors, want)
			continue
		}
		for i, s := range res.Survivors {
			if s != want[i] {
				t.Errorf("seed %d: survivors %v, want %v", seed, res.Survivors, want)
				break
			}
		}
	}
}
