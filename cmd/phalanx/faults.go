package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
)

// faultFlags collects the fault-injection flags of phalanx sim.
type faultFlags struct {
	faults []locksteptest.Fault
	// slots is the session's size with its open slots (0: no open
	// slot), checkpointEvery how often members save their simulation for
	// joiners (catchup.go of locksteptest).
	slots           int
	checkpointEvery int
	// spectators watch the run from frame spectatorsAt on,
	// spectatorDelay behind the live frame.
	spectators     int
	spectatorDelay time.Duration
	spectatorsAt   int
	// stallFrom and stallTo, when stallTo is positive, are the window of
	// frames whose stalls window_stall_rate counts.
	stallFrom, stallTo int
}

func (ff *faultFlags) register(fs *flag.FlagSet) {
	slotAt := func(kind locksteptest.FaultKind) func(string) error {
		return func(v string) error {
			slot, frame, ok := strings.Cut(v, "@")
			s, err1 := strconv.ParseUint(slot, 10, 8)
			f, err2 := strconv.ParseUint(frame, 10, 40)
			if !ok || err1 != nil || err2 != nil {
				return fmt.Errorf("want SLOT@FRAME, like 3@1500")
			}
			ff.faults = append(ff.faults, locksteptest.Fault{Kind: kind, Slot: bucket.Slot(s), Frame: bucket.Frame(f)})
			return nil
		}
	}
	fs.Func("kill", "at `SLOT@FRAME` that member falls silent forever (repeatable)", slotAt(locksteptest.FaultKill))
	fs.Func("leave", "at `SLOT@FRAME` that member leaves the session (repeatable)", slotAt(locksteptest.FaultLeave))
	fs.Func("mute", "at `SLOT@FRAME` that member keeps acknowledging but stops sealing: the others must drop it as stalled (repeatable)", slotAt(locksteptest.FaultMute))
	fs.Func("freeze", "at `SLOT@FRAME:DURATION` that member does nothing for DURATION (like 8s), then resumes; past the drop timeout the others drop it and it must stop (repeatable)", func(v string) error {
		at, dur, ok := strings.Cut(v, ":")
		slot, frame, ok2 := strings.Cut(at, "@")
		s, err1 := strconv.ParseUint(slot, 10, 8)
		f, err2 := strconv.ParseUint(frame, 10, 40)
		d, err3 := time.ParseDuration(dur)
		if !ok || !ok2 || err1 != nil || err2 != nil || err3 != nil || d <= 0 {
			return fmt.Errorf("want SLOT@FRAME:DURATION, like 2@1000:8s")
		}
		ff.faults = append(ff.faults, locksteptest.Fault{Kind: locksteptest.FaultFreeze, Slot: bucket.Slot(s), Frame: bucket.Frame(f), Duration: d})
		return nil
	})
	fs.Func("rejoin", "at `SLOT@FRAME` that member, killed before (--kill), comes back with the same key and an empty game, is admitted again and catches up (repeatable)", slotAt(locksteptest.FaultRejoin))
	fs.Func("late", "at `SLOT@FRAME` a new member joins into that open slot (see --slots) and catches up (repeatable)", slotAt(locksteptest.FaultJoin))
	fs.IntVar(&ff.slots, "slots", 0, "slots of the session: the --peers members start, the slots past them are open for --late joiners (0: as many as --peers)")
	fs.IntVar(&ff.checkpointEvery, "checkpoint-every", 200, "members save their game every `N` frames for joiners to load (0: joiners re-simulate every frame from 0)")
	fs.IntVar(&ff.spectators, "spectators", 0, "`N` spectators watch the run: they step the members' buckets, send no command and count for no seal; each member serves at most two, spectators serve the rest")
	fs.DurationVar(&ff.spectatorDelay, "spectator-delay", 0, "spectators run this `DURATION` behind the live frame (like 2m)")
	fs.IntVar(&ff.spectatorsAt, "spectators-at", 0, "spectators arrive at `FRAME` and catch up first (0: from the start)")
	fs.Func("stall-window", "report in window_stall_rate the members' stalls over frames `FROM:TO` (to compare a rejoin's with the same frames of a run without it)", func(v string) error {
		from, to, ok := strings.Cut(v, ":")
		a, err1 := strconv.ParseUint(from, 10, 40)
		b, err2 := strconv.ParseUint(to, 10, 40)
		if !ok || err1 != nil || err2 != nil || b <= a {
			return fmt.Errorf("want FROM:TO with FROM < TO, like 2500:2600")
		}
		ff.stallFrom, ff.stallTo = int(a), int(b)
		return nil
	})
	fs.Func("perturb", "after `SLOT@FRAME` that member's simulation state is altered, so a desync must be found (repeatable)", slotAt(locksteptest.FaultPerturb))
	fs.Func("partition", "at `FRAME:MS` the members split into two halves for MS milliseconds (repeatable)", func(v string) error {
		frame, ms, ok := strings.Cut(v, ":")
		f, err1 := strconv.ParseUint(frame, 10, 40)
		d, err2 := strconv.ParseUint(ms, 10, 32)
		if !ok || err1 != nil || err2 != nil || d == 0 {
			return fmt.Errorf("want FRAME:MS, like 2000:2000")
		}
		ff.faults = append(ff.faults, locksteptest.Fault{Kind: locksteptest.FaultPartition, Frame: bucket.Frame(f), Duration: time.Duration(d) * time.Millisecond})
		return nil
	})
}

// members returns the session's size: its members and open slots.
func (ff *faultFlags) members(peers int) int { return max(peers, ff.slots) }

// open returns the slots open at the start (bit i: slot i).
func (ff *faultFlags) open(peers int) uint64 {
	var open uint64
	for s := peers; s < ff.members(peers); s++ {
		open |= 1 << s
	}
	return open
}

// check refuses faults that name members or frames outside the run, a
// rejoin of a member not killed before it, and a late join into a slot
// that is not open.
func (ff *faultFlags) check(peers, frames int) error {
	if ff.slots != 0 && (ff.slots < peers || ff.slots > 64) {
		return fmt.Errorf("--slots %d: want --peers (%d) to 64", ff.slots, peers)
	}
	if ff.spectators < 0 || ff.spectators > 1000 || ff.spectatorDelay < 0 || ff.spectatorsAt < 0 || ff.spectatorsAt >= frames {
		return fmt.Errorf("--spectators %d, --spectator-delay %v, --spectators-at %d: want 0 to 1000 spectators, a delay of 0 or more, a frame within the run", ff.spectators, ff.spectatorDelay, ff.spectatorsAt)
	}
	if ff.checkpointEvery < 0 {
		return fmt.Errorf("--checkpoint-every %d: want 0 or more frames", ff.checkpointEvery)
	}
	all := ff.members(peers)
	for _, f := range ff.faults {
		if f.Kind != locksteptest.FaultPartition && int(f.Slot) >= all {
			return fmt.Errorf("fault on member %d, but there are %d members (slots 0..%d)", f.Slot, all, all-1)
		}
		if f.Kind != locksteptest.FaultPartition && f.Kind != locksteptest.FaultJoin && int(f.Slot) >= peers {
			return fmt.Errorf("fault on member %d, whose slot is open: only --late may name it", f.Slot)
		}
		if int(f.Frame) >= frames {
			return fmt.Errorf("fault at frame %d, but the run has %d frames", f.Frame, frames)
		}
		switch f.Kind {
		case locksteptest.FaultJoin:
			if int(f.Slot) < peers {
				return fmt.Errorf("--late %d@%d: slot %d is not open (open slots are %d..%d, see --slots)", f.Slot, f.Frame, f.Slot, peers, all-1)
			}
		case locksteptest.FaultRejoin:
			killed := false
			for _, k := range ff.faults {
				killed = killed || k.Kind == locksteptest.FaultKill && k.Slot == f.Slot && k.Frame < f.Frame
			}
			if !killed {
				return fmt.Errorf("--rejoin %d@%d: member %d is not killed before it (--kill %d@FRAME)", f.Slot, f.Frame, f.Slot, f.Slot)
			}
		}
	}
	return nil
}
