package locksteptest

import (
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// nullSims makes every member a NullSim; snapshots says whether it offers
// lockstep.Snapshotter.
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

func TestRejoinBasic(t *testing.T) {
	for _, snap := range []bool{true, false} {
		res := runFaults(t, "lan", 4, 1200, 1, []Fault{{Kind: FaultKill, Slot: 2, Frame: 300}, {Kind: FaultRejoin, Slot: 2, Frame: 600}}, nil, nullSims(snap))
		t.Logf("snap %v: identical %v survivors %v admissions %+v", snap, res.Identical, res.Survivors, res.Admissions)
		for _, m := range res.Members {
			t.Logf("member %d stepped %d events %v errs %v", m.Slot, m.Stepped, m.Events, m.Errors)
		}
		if !res.Identical || len(res.Survivors) != 4 {
			t.Fatalf("not identical")
		}
	}
}
