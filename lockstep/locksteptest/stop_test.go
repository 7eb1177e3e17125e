package locksteptest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// stopOf returns member m's stop event, checking that it stopped by the
// rules with reason want.
func stopOf(t *testing.T, res *Result, m bucket.Slot, want lockstep.Reason) lockstep.Event {
	t.Helper()
	mem := res.Members[m]
	if !errors.Is(mem.Stopped, lockstep.ErrStopped) {
		t.Fatalf("member %d: stopped %v, want ErrStopped; events %v", m, mem.Stopped, mem.Events)
	}
	for _, e := range mem.Events {
		if e.Type == lockstep.EventStop {
			if e.Reason != want || e.Member != m {
				t.Fatalf("member %d: %v, want a stop for %s", m, e, want)
			}
			return e
		}
	}
	t.Fatalf("member %d: no stop event in %v", m, mem.Events)
	return lockstep.Event{}
}

// A member frozen past the drop timeout is dropped by the others; when it
// resumes it learns so and stops, rather than playing on alone.
func TestFrozenMemberStopsWhenItResumes(t *testing.T) {
	for _, profile := range []string{"broadband", "bad"} {
		for _, d := range []time.Duration{8 * time.Second, 10 * time.Second, 30 * time.Second} {
			t.Run(fmt.Sprintf("%s/%v", profile, d), func(t *testing.T) {
				res := runFaults(t, profile, 6, 200+int(d/(50*time.Millisecond))+200, 3, []Fault{{Kind: FaultFreeze, Slot: 2, Frame: 150, Duration: d}}, nil)
				if len(res.Survivors) != 5 || !res.Identical {
					t.Fatalf("survivors %v identical %v", res.Survivors, res.Identical)
				}
				e := checkAgreedDrop(t, res, lockstep.EventDrop, 2)
				if r := e.Reason; r != lockstep.ReasonSilent {
					t.Errorf("dropped for %s, want silent", r)
				}
				stop := stopOf(t, res, 2, lockstep.ReasonDropped)
				// It stepped nothing after it resumed: no frame past those
				// it could step before it froze.
				if got, most := res.Members[2].Stepped, e.LastFrame+3; got > most {
					t.Errorf("member 2 stepped up to frame %d, dropped after frame %d", got, e.LastFrame)
				}
				t.Logf("member 2: %v, stepped up to %d", stop, res.Members[2].Stepped)
			})
		}
	}
}

// A member frozen for less than the drop timeout keeps playing.
func TestShortFreezeKeepsPlaying(t *testing.T) {
	res := runFaults(t, "broadband", 4, 400, 3, []Fault{{Kind: FaultFreeze, Slot: 1, Frame: 150, Duration: 3 * time.Second}}, nil)
	if len(res.Survivors) != 4 || !res.Identical {
		t.Fatalf("survivors %v identical %v", res.Survivors, res.Identical)
	}
}

// A member that keeps talking but stops sealing is dropped as stalled.
func TestMutedMemberIsDroppedAsStalled(t *testing.T) {
	res := runFaults(t, "bad", 5, 500, 4, []Fault{{Kind: FaultMute, Slot: 3, Frame: 150}}, nil)
	if len(res.Survivors) != 4 || !res.Identical {
		t.Fatalf("survivors %v identical %v", res.Survivors, res.Identical)
	}
	e := checkAgreedDrop(t, res, lockstep.EventDrop, 3)
	for _, s := range res.Survivors {
		for _, ev := range res.Members[s].Events {
			if ev.Type == lockstep.EventDrop && ev.Reason != lockstep.ReasonStalled {
				t.Errorf("member %d: %v, want stalled", s, ev)
			}
		}
	}
	stopOf(t, res, 3, lockstep.ReasonDropped)
	t.Logf("%v", e)
}

// A member that floods 1,000 commands a frame (running with limits of its
// own) is dropped for a violation at once; the others hold little of it and
// stay identical.
func TestFloodIsAViolation(t *testing.T) {
	const flooder, from = 1, 100
	p, err := netsim.Named("broadband")
	if err != nil {
		t.Fatal(err)
	}
	normal := commandsEvery(10)
	res, err := Run(Config{
		Members: 4, Frames: 300, Seed: 8, Profile: p,
		NewSim: func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
		Configure: func(slot bucket.Slot, c *lockstep.Config) {
			if slot == flooder {
				c.MaxFrameCommands, c.MaxFrameBytes = 1<<20, 1<<30
			}
		},
		Commands: func(s bucket.Slot, f bucket.Frame) [][]byte {
			if s != flooder || f < from || f >= from+20 {
				return normal(s, f)
			}
			out := make([][]byte, 1000)
			for i := range out {
				out[i] = make([]byte, 32)
			}
			return out
		},
		MaxTime: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Survivors) != "[0 2 3]" || !res.Identical {
		for _, m := range res.Members {
			t.Logf("member %d: stepped %d, events %v, errors %d %v", m.Slot, m.Stepped, m.Events, len(m.Errors), m.Errors[:min(1, len(m.Errors))])
		}
		t.Fatalf("survivors %v identical %v", res.Survivors, res.Identical)
	}
	e := checkAgreedDrop(t, res, lockstep.EventDrop, flooder)
	if e.Reason != lockstep.ReasonViolation {
		t.Fatalf("%v, want a drop for violation", e)
	}
	for _, s := range res.Survivors {
		m := res.Members[s]
		t.Logf("member %d: peak held %d bytes of the others' commands", s, m.PeakHeld)
		// One frame over the limit is all a victim takes in: 64 commands
		// of 32 bytes (its own limit), plus what a datagram buffered.
		if m.PeakHeld > 256<<10 {
			t.Errorf("member %d held %d bytes of others' commands", s, m.PeakHeld)
		}
	}
}
