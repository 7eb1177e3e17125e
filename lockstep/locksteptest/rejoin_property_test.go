package locksteptest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// rejoinSchedule draws a member killed and brought back, and up to two
// other faults on other members around it: a kill (one at most, so that the
// members live stay a majority), a loss storm, a freeze or a partition
// shorter than the drop timeout.
func rejoinSchedule(seed uint64) (faults []Fault, frames int, profile string, snap bool) {
	r := rng.New(seed, 0x4e301)
	profile = []string{"lan", "broadband", "bad"}[r.IntN(3)]
	snap = r.IntN(2) == 0
	timeoutFrames := int(propertyTimeout / lockstep.DefaultFrame)
	slot := bucket.Slot(r.IntN(6))
	kill := bucket.Frame(20 + r.IntN(80))
	back := kill + bucket.Frame(timeoutFrames+r.IntN(80))
	faults = []Fault{{Kind: FaultKill, Slot: slot, Frame: kill}, {Kind: FaultRejoin, Slot: slot, Frame: back}}
	killed := false
	for range r.IntN(3) {
		other := bucket.Slot(r.IntN(6))
		if other == slot {
			continue
		}
		f := Fault{Slot: other, Frame: kill + bucket.Frame(r.IntN(int(back-kill)+60))}
		short := time.Duration(2+r.IntN(7)) * propertyTimeout / 10 // 0.2 to 0.8 timeouts
		switch kind := r.IntN(4); {
		case kind == 0 && !killed:
			f.Kind, killed = FaultKill, true
		case kind == 0:
			continue
		case kind == 1:
			f.Kind, f.Duration, f.Loss = FaultStorm, short, 0.3+0.5*float64(r.IntN(100))/100
		case kind == 2:
			f.Kind, f.Duration = FaultFreeze, short
		default:
			f.Kind, f.Duration = FaultPartition, short
		}
		faults = append(faults, f)
	}
	return faults, int(back) + 4*timeoutFrames + 200, profile, snap
}

// checkRejoin runs one rejoin schedule and returns what broke the
// properties, or "".
func checkRejoin(seed uint64) string {
	faults, frames, profile, snap := rejoinSchedule(seed)
	p, err := netsim.Named(profile)
	if err != nil {
		return err.Error()
	}
	cfg := Config{
		Members: 6, Frames: frames, Seed: seed, Profile: p,
		Core:     lockstep.Config{DropTimeout: propertyTimeout},
		NewSim:   func(bucket.Slot) lockstep.Simulation { return &sectionSim{} },
		Commands: commandsEvery(5),
		Faults:   faults,
		MaxTime:  time.Duration(frames)*lockstep.DefaultFrame + 30*time.Second,
	}
	if snap {
		cfg.NewSim, cfg.CheckpointEvery = func(bucket.Slot) lockstep.Simulation { return &NullSim{} }, 50
	}
	res, err := Run(cfg)
	var bad []string
	if err != nil {
		bad = append(bad, err.Error())
	}
	if res == nil {
		return strings.Join(bad, "; ")
	}
	if !res.Identical {
		bad = append(bad, fmt.Sprintf("survivors %v not identical: groups %v, diverged at %d", res.Survivors, res.Groups, res.Diverged))
	}
	slot := faults[0].Slot
	if len(res.Admissions) != 1 || res.Admissions[0].AdmittedFrame < 0 {
		bad = append(bad, fmt.Sprintf("admissions %+v", res.Admissions))
	} else {
		ad := res.Admissions[0]
		for _, s := range res.Survivors {
			n := 0
			for _, e := range res.Members[s].Events {
				if e.Type == lockstep.EventRejoin && e.Member == slot {
					n++
					if e.Frame != ad.AdmittedFrame {
						bad = append(bad, fmt.Sprintf("member %d: %v, admitted at %d", s, e, ad.AdmittedFrame))
					}
				}
			}
			if n != 1 {
				bad = append(bad, fmt.Sprintf("member %d reports %d rejoins", s, n))
			}
		}
	}
	for _, m := range res.Members {
		if m.Slot != slot && !m.Killed && m.MaxWait > propertyTimeout+2*time.Second {
			bad = append(bad, fmt.Sprintf("member %d waited %v for a frame", m.Slot, m.MaxWait))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("%s, snapshots %v, %d frames, faults %+v: %s", profile, snap, frames, faults, strings.Join(bad, "; "))
}

// TestRejoinSchedules is the property of admissions: over random schedules
// in which a member is killed and comes back while other members are killed,
// frozen, cut off or lose datagrams for less than the drop timeout, the
// member is admitted once, every member that finishes reports the admission
// at the same frame and finishes every frame with identical state, and no
// other member waits longer than the drop timeout plus two seconds.
func TestRejoinSchedules(t *testing.T) {
	n := 120
	if testing.Short() {
		n = 30
	}
	var failures []string
	for seed := range uint64(n) {
		if msg := checkRejoin(seed); msg != "" {
			failures = append(failures, fmt.Sprintf("seed %d: %s", seed, msg))
		}
	}
	reportFailures(t, failures, n)
}

// TestRejoinSchedulesTightBudget: on the modem inside 3,600 B/s, where
// datagrams carry held seals, a member killed and brought back (once, or
// twice) finishes with the others: all six finish every frame identical,
// and nobody is reported for breaking a rule. A rejoined member holds the
// others' streams from its admission on, not from the start: a held seal
// it forwards must not promise a receiver commands it never had.
func TestRejoinSchedulesTightBudget(t *testing.T) {
	p, err := netsim.Named("modem")
	if err != nil {
		t.Fatal(err)
	}
	var failures []string
	const n = 16
	for seed := range uint64(n) {
		r := rng.New(seed, 0x7e70)
		slot := bucket.Slot(r.IntN(6))
		kill := bucket.Frame(300 + r.IntN(200))
		back := kill + bucket.Frame(30+r.IntN(120))
		faults := []Fault{{Kind: FaultKill, Slot: slot, Frame: kill}, {Kind: FaultRejoin, Slot: slot, Frame: back}}
		if seed%2 == 1 {
			faults = append(faults, Fault{Kind: FaultKill, Slot: slot, Frame: back + 300}, Fault{Kind: FaultRejoin, Slot: slot, Frame: back + 360})
		}
		frames := int(back) + 1200
		res, err := Run(Config{
			Members: 6, Frames: frames, Seed: seed, Profile: p,
			Core:     lockstep.Config{DropTimeout: time.Second, Budget: 3600},
			NewSim:   func(bucket.Slot) lockstep.Simulation { return &sectionSim{} },
			Commands: commandsEvery(3),
			Faults:   faults,
			MaxTime:  time.Duration(frames)*lockstep.DefaultFrame + 60*time.Second,
		})
		var bad []string
		if err != nil {
			bad = append(bad, err.Error())
		}
		if res != nil {
			if !res.Identical {
				bad = append(bad, fmt.Sprintf("not identical: diverged at %d", res.Diverged))
			}
			if len(res.Survivors) != 6 {
				bad = append(bad, fmt.Sprintf("survivors %v", res.Survivors))
			}
			for _, m := range res.Members {
				for _, e := range m.Events {
					if e.Type == lockstep.EventViolation {
						bad = append(bad, fmt.Sprintf("member %d reported a violation: %v", m.Slot, e))
					}
				}
			}
		}
		if len(bad) > 0 {
			failures = append(failures, fmt.Sprintf("seed %d, faults %+v: %s", seed, faults, strings.Join(bad, "; ")))
		}
	}
	reportFailures(t, failures, n)
}
