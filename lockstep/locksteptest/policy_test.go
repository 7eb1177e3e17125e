package locksteptest

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// The scheduling policies (lockstep.Policy) over the virtual network.

// runPolicy runs members over profile in virtual time under policy, each
// submitting a command every few frames, and returns the result.
func runPolicy(t *testing.T, members, frames int, profile string, policy lockstep.Policy) *Result {
	t.Helper()
	p, err := netsim.Named(profile)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(Config{
		Members:  members,
		Frames:   frames,
		Seed:     7,
		Profile:  p,
		Core:     lockstep.Config{Policy: policy},
		Unsigned: true,
		NewSim:   func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
		Commands: func(slot bucket.Slot, f bucket.Frame) [][]byte {
			if (int(f)+int(slot))%3 == 0 {
				return [][]byte{{byte(slot), byte(f)}}
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Identical {
		t.Fatalf("members diverged at frame %d", res.Diverged)
	}
	return res
}

// A fixed delay of N frames runs every command between N-1 and N frames
// after its submission (it is submitted somewhere inside a frame and
// stamped N frames after that frame), on a network fast enough for it,
// give or take how far the last member's frame clock trails (members slow
// theirs towards the slowest, within an eighth of a frame).
func TestPolicyFixedRunsCommandsExactlyAhead(t *testing.T) {
	const n = 3
	res := runPolicy(t, 3, 400, "lan", lockstep.Fixed{Frames: n})
	lo, hi := res.LatencyPercentile(0), res.LatencyPercentile(100)
	slack := lockstep.DefaultFrame / 4
	if lo < (n-1)*lockstep.DefaultFrame || hi > n*lockstep.DefaultFrame+slack {
		t.Errorf("fixed:%d: latencies from %v to %v, want within [%v, %v]", n, lo, hi, (n-1)*lockstep.DefaultFrame, n*lockstep.DefaultFrame+slack)
	}
	for _, m := range res.Members {
		if m.Stats.Delay != n || m.Stats.Lead != 0 {
			t.Errorf("member %d: delay %d frames, lead %v; want %d frames and no adaptive lead", m.Slot, m.Stats.Delay, m.Stats.Lead, n)
		}
		if m.Stats.Stalls != 0 {
			t.Errorf("member %d stalled %d frames on the lan at fixed:%d", m.Slot, m.Stats.Stalls, n)
		}
	}
}

// Bucket synchronization sizes each turn by the largest smoothed round
// trip, in whole frames.
func TestPolicyBucketRTTSizesTurnsByRoundTrip(t *testing.T) {
	res := runPolicy(t, 3, 300, "intercontinental", lockstep.BucketRTT())
	// The profile's one-way delay is 80 ms plus jitter of mean 6 ms: round
	// trips of about 172 ms, four frames of 50 ms (five when the jitter
	// of both ways adds up past 200 ms).
	for _, m := range res.Members {
		if m.Stats.Delay < 4 || m.Stats.Delay > 5 {
			t.Errorf("member %d: turns of %d frames, want 4 or 5 (round trips of about 172 ms)", m.Slot, m.Stats.Delay)
		}
	}
	if p50 := res.LatencyPercentile(50); p50 < 150*time.Millisecond || p50 > 300*time.Millisecond {
		t.Errorf("median latency %v, want a turn to a turn and a half of about 200 ms", p50)
	}
}

// The adaptive lead follows the network: small on a lan, past the one-way
// delay on an ocean crossing, and well under what fixed turns of a round
// trip cost there. The ocean runs a minute: its first seconds, at the start
// lead (Config.StartLead) until the first reports, are then under 5% of
// the commands.
func TestPolicyAdaptiveFollowsTheNetwork(t *testing.T) {
	lan := runPolicy(t, 3, 400, "lan", lockstep.Adaptive{})
	ocean := runPolicy(t, 3, 1200, "intercontinental", nil)
	for _, m := range lan.Members {
		if m.Stats.Delay != 1 {
			t.Errorf("lan, member %d: delay %d frames, want 1 (a lead under a frame)", m.Slot, m.Stats.Delay)
		}
	}
	oneWay := ocean.OneWayPercentile(50)
	for _, m := range ocean.Members {
		if m.Stats.Lead < oneWay {
			t.Errorf("intercontinental, member %d: lead %v under the median one-way delay %v", m.Slot, m.Stats.Lead, oneWay)
		}
	}
	if p95 := ocean.LatencyPercentile(95); p95 > 200*time.Millisecond {
		t.Errorf("intercontinental: latency p95 %v, want under 200 ms (about the one-way delay plus a frame)", p95)
	}
}

// On the phased profile (broadband, bad, broadband, two minutes each) the
// adaptive lead grows for the bad minutes and comes back down after them.
func TestPolicyAdaptiveFollowsPhases(t *testing.T) {
	if testing.Short() {
		t.Skip("six minutes of virtual play")
	}
	const members = 3
	inBad := runPolicy(t, members, 4600, "phased", nil) // ends 10 s before the bad minutes do
	after := runPolicy(t, members, 7000, "phased", nil) // ends 110 s into the broadband after them
	for i := range members {
		bad, good := inBad.Members[i].Stats.Lead, after.Members[i].Stats.Lead
		if bad < 150*time.Millisecond {
			t.Errorf("member %d: lead %v at the end of the bad minutes, want at least 150 ms (one-way delays of 60 to 230 ms)", i, bad)
		}
		if good > 40*time.Millisecond {
			t.Errorf("member %d: lead %v back on broadband, want at most 40 ms (one-way delays of 15 to 25 ms)", i, good)
		}
	}
}

// When the network gets worse during a session (the phases of phased,
// broadband then bad, here 20 s each), the frames sealed under the good
// network's lead before the lead meets the bad one stall: the lead rises
// within the frame the first late datagrams of two members arrive in
// (twice their lateness, then the largest report), not once a moving
// average and the mean of reports sent over the worse network have caught
// up.
func TestPolicyAdaptiveMeetsAWorseNetworkAtOnce(t *testing.T) {
	phased, err := netsim.Named("phased")
	if err != nil {
		t.Fatal(err)
	}
	const members, phase = 4, 20 * time.Second
	good, bad := phased.Phases[0], phased.Phases[1]
	good.Duration, bad.Duration = phase, phase
	first := bucket.Frame(phase / lockstep.DefaultFrame) // the first frame of the bad phase
	res := runOnset(t, Config{
		Members: members,
		Frames:  int(first) + 100,
		Seed:    7,
		Profile: netsim.Profile{Name: "short-phased", Phases: []netsim.Phase{good, bad}},
	}, first)
	// The frames due before the first late datagrams arrive stall whatever
	// the lead does, and so do a few sealed while the bad network's queues
	// fill: 13 stalls, about three a member. Following the moving average
	// and then the mean of the reports, 40 did.
	if res.WindowStalls > 5*members {
		t.Errorf("%d stalls in the first second of the bad phase, want at most %d (5 a member)", res.WindowStalls, 5*members)
	}
	for _, m := range res.Members {
		if m.Stats.Lead < 150*time.Millisecond {
			t.Errorf("member %d: lead %v 5 s into the bad phase, want at least 150 ms", m.Slot, m.Stats.Lead)
		}
	}
}

// A member's own pause is not a worse network: when its process stops (a
// collection, descheduled, a frozen machine), every other member's news
// reaches it late at once, but its lead, and the others', stay where the
// network puts them. (Taken for a jump of the lateness, the pause raised
// the paused member's lead to twice its length: 775 ms with 4 members, 850
// with 2, a second after a 400 ms pause.)
func TestPolicyAdaptiveIgnoresItsOwnPause(t *testing.T) {
	const at, pause = 1200, 400 * time.Millisecond
	for _, tc := range []struct {
		profile string
		members int
		budget  int
		after   time.Duration // when the leads are compared, from the pause's end
	}{
		{"broadband", 2, 0, time.Second},
		{"broadband", 4, 0, time.Second},
		// A tight budget: the seals' lateness counts (sealReached); counting
		// the pause's put every lead at 400 ms against 300.
		{"modem", 4, 3600, 5 * time.Second},
	} {
		p, err := netsim.Named(tc.profile)
		if err != nil {
			t.Fatal(err)
		}
		members := tc.members
		run := func(faults []Fault) *Result {
			res, err := Run(Config{
				Members:  members,
				Frames:   at + int((pause+tc.after)/lockstep.DefaultFrame),
				Seed:     1,
				Profile:  p,
				Unsigned: true,
				NewSim:   func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
				Faults:   faults,
				Core:     lockstep.Config{Budget: tc.budget},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Identical {
				t.Fatalf("%s, %d members: diverged at frame %d", tc.profile, members, res.Diverged)
			}
			return res
		}
		calm := run(nil)
		res := run([]Fault{{Kind: FaultFreeze, Slot: 1, Frame: at, Duration: pause}})
		// Each lead is what the same run without the pause has, within a
		// quarter frame (the lead's level steps): the pause moved neither the
		// lateness reports nor the send waits (before, the paused member's
		// waits held its lead at 75 ms against 30).
		for i, m := range res.Members {
			if want := calm.Members[i].Stats.Lead; m.Stats.Lead > want+lockstep.DefaultFrame/4 {
				t.Errorf("%s, %d members: member %d's lead %v %v after member 1's %v pause, want at most %v (%v without the pause)", tc.profile, members, m.Slot, m.Stats.Lead, tc.after, pause, want+lockstep.DefaultFrame/4, want)
			}
		}
	}
}

// With one other member live, one sample far past the window's worst is a
// jump, however many members the session was configured for: here three,
// one killed long before the network turns bad. (Counting the configured
// members, the first second of the bad minutes stalled 24 times; now 6.)
func TestPolicyAdaptiveJumpsWithOneOtherLive(t *testing.T) {
	phased, err := netsim.Named("phased")
	if err != nil {
		t.Fatal(err)
	}
	first := bucket.Frame(phased.Phases[0].Duration / lockstep.DefaultFrame) // the first frame of the bad phase
	res := runOnset(t, Config{
		Members: 3,
		Frames:  int(first) + 40,
		Seed:    1,
		Profile: phased,
		Faults:  []Fault{{Kind: FaultKill, Slot: 2, Frame: 1000}},
	}, first)
	t.Logf("%d stalls in the first second of the bad phase", res.WindowStalls)
	if res.WindowStalls > 12 {
		t.Errorf("%d stalls in the first second of the bad phase, want at most 12", res.WindowStalls)
	}
}

// runOnset runs cfg (unsigned, the null simulation) counting the stalls of
// the first second from frame first, the onset of a worse network, and
// fails t unless every member stepped the same.
func runOnset(t *testing.T, cfg Config, first bucket.Frame) *Result {
	t.Helper()
	cfg.Unsigned = true
	cfg.NewSim = func(bucket.Slot) lockstep.Simulation { return &NullSim{} }
	cfg.StallFrom, cfg.StallTo = first, first+20
	res, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Identical {
		t.Fatalf("members diverged at frame %d", res.Diverged)
	}
	return res
}
