package locksteptest

import (
	"fmt"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// nullSims makes every member's simulation one that offers
// lockstep.Snapshotter (NullSim, with members checkpointing every 100
// frames), or one that does not (sectionSim): joiners then step every
// bucket from frame 0.
func nullSims(snapshots bool) func(*Config) {
	return func(c *Config) {
		if snapshots {
			c.NewSim = func(bucket.Slot) lockstep.Simulation { return &NullSim{} }
			c.CheckpointEvery = 100
		} else {
			c.NewSim = func(bucket.Slot) lockstep.Simulation { return &sectionSim{} }
		}
	}
}

// checkAdmitted checks that member m was admitted once, of the given kind,
// and that every survivor reports the admission at the same frame: the
// admitted member its own (rejoin or join of itself), the others its.
func checkAdmitted(t *testing.T, res *Result, m bucket.Slot, kind string, snapshots bool) Admission {
	t.Helper()
	if !res.Identical {
		t.Fatalf("not identical: diverged at frame %d, groups %v", res.Diverged, res.Groups)
	}
	if len(res.Admissions) != 1 {
		t.Fatalf("admissions %+v, want one", res.Admissions)
	}
	ad := res.Admissions[0]
	if ad.Slot != m || ad.Kind != kind || ad.AdmittedFrame < 0 || ad.CatchupFrames < 0 || ad.Bytes <= 0 || !snapshots && ad.CatchupFrames < int(ad.AdmittedFrame) {
		t.Fatalf("admission %+v", ad)
	}
	if snapshots != (ad.Snapshot >= 0) || snapshots != ad.Verified {
		t.Fatalf("admission %+v: snapshots %v", ad, snapshots)
	}
	typ := lockstep.EventRejoin
	if kind == "late" {
		typ = lockstep.EventJoin
	}
	found := false
	for _, s := range res.Survivors {
		found = found || s == m
		var at []bucket.Frame
		for _, e := range res.Members[s].Events {
			if e.Type == typ && e.Member == m {
				at = append(at, e.Frame)
			}
		}
		if len(at) != 1 || at[0] != ad.AdmittedFrame {
			t.Fatalf("member %d reports the admission of %d at frames %v, want once at %d", s, m, at, ad.AdmittedFrame)
		}
	}
	if !found {
		t.Fatalf("member %d is not among the survivors %v", m, res.Survivors)
	}
	return ad
}

// TestRejoinAtRandomFrames kills a member at a random frame and brings it
// back at a random later frame, over seeds and profiles, with and without
// the snapshot interface: it must be admitted, catch up and finish with the
// others' hashes on every frame it steps.
func TestRejoinAtRandomFrames(t *testing.T) {
	for _, profile := range []string{"lan", "broadband", "bad"} {
		for seed := uint64(1); seed <= 3; seed++ {
			for _, snap := range []bool{true, false} {
				r := rng.New(seed, 14)
				members := 3 + int(r.Uint32N(4))
				slot := bucket.Slot(r.Uint32N(uint32(members)))
				kill := bucket.Frame(100 + r.Uint32N(300))
				back := kill + 150 + bucket.Frame(r.Uint32N(300))
				t.Run(fmt.Sprintf("%s/seed%d/snap%v", profile, seed, snap), func(t *testing.T) {
					res := runFaults(t, profile, members, 1400, seed, []Fault{{Kind: FaultKill, Slot: slot, Frame: kill}, {Kind: FaultRejoin, Slot: slot, Frame: back}}, nil, nullSims(snap))
					ad := checkAdmitted(t, res, slot, "rejoin", snap)
					if len(res.Survivors) != members {
						t.Fatalf("survivors %v of %d", res.Survivors, members)
					}
					t.Logf("%d members, member %d killed at %d, back at %d: admitted at %d, %d frames caught up, %d bytes, transfer %v", members, slot, kill, back, ad.AdmittedFrame, ad.CatchupFrames, ad.Bytes, ad.Transfer)
				})
			}
		}
	}
}

// TestRejoinWhileAnotherIsDropped brings member 1 back while member 2's
// drop is being agreed: the admission waits for the drop, and the rejoined
// member does not wait for member 2.
func TestRejoinWhileAnotherIsDropped(t *testing.T) {
	for _, snap := range []bool{true, false} {
		res := runFaults(t, "broadband", 5, 1400, 2, []Fault{
			{Kind: FaultKill, Slot: 1, Frame: 300},
			{Kind: FaultKill, Slot: 2, Frame: 500},
			{Kind: FaultRejoin, Slot: 1, Frame: 560},
		}, nil, nullSims(snap))
		ad := checkAdmitted(t, res, 1, "rejoin", snap)
		if fmt.Sprint(res.Survivors) != "[0 1 3 4]" {
			t.Fatalf("survivors %v, want [0 1 3 4]", res.Survivors)
		}
		for _, s := range []bucket.Slot{0, 3, 4} {
			drops := eventsOf(res, lockstep.EventDrop, 2)[s]
			if len(drops) != 1 || drops[0].Frame > ad.AdmittedFrame {
				t.Fatalf("member %d: drops of member 2 %v, want one before the admission at %d", s, drops, ad.AdmittedFrame)
			}
		}
	}
}

// TestLateJoinIntoEightMembers starts eight members with a ninth slot open
// and lets a new member join it.
func TestLateJoinIntoEightMembers(t *testing.T) {
	for _, snap := range []bool{true, false} {
		res := runFaults(t, "broadband", 9, 1000, 3, []Fault{{Kind: FaultJoin, Slot: 8, Frame: 400}}, nil, nullSims(snap), func(c *Config) { c.Open = 1 << 8 })
		ad := checkAdmitted(t, res, 8, "late", snap)
		if len(res.Survivors) != 9 {
			t.Fatalf("survivors %v", res.Survivors)
		}
		t.Logf("late join: admitted at %d, %d frames, %d bytes", ad.AdmittedFrame, ad.CatchupFrames, ad.Bytes)
	}
}

// TestRejoinBeforeTheDropWaits: a member that comes back before the others
// agreed on its drop is admitted once they have; and the harness refuses a
// join into a slot that is not open. (A joiner claiming a live member's
// slot is refused by the core: TestJoinRequestForALiveSlotIsRefused.)
func TestRejoinBeforeTheDropWaits(t *testing.T) {
	res := runFaults(t, "lan", 4, 800, 4, []Fault{{Kind: FaultKill, Slot: 3, Frame: 100}, {Kind: FaultRejoin, Slot: 3, Frame: 110}}, nil, nullSims(true))
	// Frame 110 is before the drop of member 3 is agreed (a drop timeout
	// after 100): the request waits until then, and the admission follows.
	checkAdmitted(t, res, 3, "rejoin", true)
	p, _ := netsim.Named("lan")
	if _, err := Run(Config{Members: 4, Frames: 10, Profile: p, NewSim: func(bucket.Slot) lockstep.Simulation { return &NullSim{} }, Faults: []Fault{{Kind: FaultJoin, Slot: 2, Frame: 5}}}); err == nil {
		t.Fatal("a join into a slot that is not open was accepted")
	}
}

// TestCatchupDoesNotStallSurvivors compares the survivors' stalls from a
// rejoin request until the rejoined member stepped 100 live frames with
// the same frames of the same run without the rejoin, over seeds.
func TestCatchupDoesNotStallSurvivors(t *testing.T) {
	var with, without, frames, framesWithout int64
	for seed := uint64(1); seed <= 4; seed++ {
		faults := []Fault{{Kind: FaultKill, Slot: 2, Frame: 300}, {Kind: FaultRejoin, Slot: 2, Frame: 700}}
		res := runFaults(t, "bad", 6, 1200, seed, faults, nil, nullSims(true))
		ad := checkAdmitted(t, res, 2, "rejoin", true)
		window := func(c *Config) { c.StallFrom, c.StallTo = 700, ad.AdmittedFrame+100 }
		res = runFaults(t, "bad", 6, 1200, seed, faults, nil, nullSims(true), window)
		base := runFaults(t, "bad", 6, 1200, seed, faults[:1], nil, nullSims(true), window)
		with, frames = with+res.WindowStalls, frames+res.WindowFrames
		without, framesWithout = without+base.WindowStalls, framesWithout+base.WindowFrames
	}
	rate, baseRate := float64(with)/float64(frames), float64(without)/float64(framesWithout)
	t.Logf("survivors' stall rate from the rejoin request to 100 live frames after the admission: %.4f (%d of %d frames); without the rejoin: %.4f (%d of %d)", rate, with, frames, baseRate, without, framesWithout)
	if frames == 0 || framesWithout == 0 || rate > baseRate+0.005 {
		t.Fatalf("stall rate %.4f with the rejoin, %.4f without", rate, baseRate)
	}
}

// TestRepeatedAdmissions: a member rejoins twice and two late joiners take
// their slots, one while the first is dead. Every member live at each
// admission reports it, with its kind, at the same frame.
func TestRepeatedAdmissions(t *testing.T) {
	res := runFaults(t, "broadband", 6, 1600, 7, []Fault{
		{Kind: FaultKill, Slot: 2, Frame: 200}, {Kind: FaultJoin, Slot: 4, Frame: 300}, {Kind: FaultRejoin, Slot: 2, Frame: 450},
		{Kind: FaultKill, Slot: 2, Frame: 700}, {Kind: FaultJoin, Slot: 5, Frame: 800}, {Kind: FaultRejoin, Slot: 2, Frame: 950},
	}, nil, nullSims(true), func(c *Config) { c.Open = 1<<4 | 1<<5 })
	if !res.Identical || len(res.Survivors) != 6 || len(res.Admissions) != 4 {
		t.Fatalf("identical %v, survivors %v, admissions %+v", res.Identical, res.Survivors, res.Admissions)
	}
	for _, ad := range res.Admissions {
		typ := lockstep.EventRejoin
		if ad.Kind == "late" {
			typ = lockstep.EventJoin
		}
		seen := 0
		for _, m := range res.Members {
			for _, e := range m.Events {
				if e.Member == ad.Slot && e.Frame == ad.AdmittedFrame {
					if e.Type != typ {
						t.Fatalf("member %d reports %v for admission %+v", m.Slot, e, ad)
					}
					seen++
				}
			}
		}
		if seen < 4 {
			t.Fatalf("admission %+v reported by %d members", ad, seen)
		}
	}
}
