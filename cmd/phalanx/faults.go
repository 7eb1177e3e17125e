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

// check refuses faults that name members or frames outside the run.
func (ff *faultFlags) check(peers, frames int) error {
	for _, f := range ff.faults {
		if f.Kind != locksteptest.FaultPartition && int(f.Slot) >= peers {
			return fmt.Errorf("fault on member %d, but there are %d members (slots 0..%d)", f.Slot, peers, peers-1)
		}
		if int(f.Frame) >= frames {
			return fmt.Errorf("fault at frame %d, but the run has %d frames", f.Frame, frames)
		}
	}
	return nil
}
