package locksteptest

import (
	"encoding/binary"
	"hash/fnv"
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// Stepping the simulations in parallel gives the same run as stepping
// them in turn: the same result and the same datagrams at the same times,
// over a few seeds, with and without faults.
func TestParallelSteppingChangesNothing(t *testing.T) {
	p, err := netsim.Named("bad")
	if err != nil {
		t.Fatal(err)
	}
	faults := []Fault{
		{Kind: FaultFreeze, Slot: 1, Frame: 60, Duration: 400 * time.Millisecond},
		{Kind: FaultPartition, Frame: 120, Duration: 300 * time.Millisecond},
		{Kind: FaultKill, Slot: 4, Frame: 200},
	}
	for _, seed := range []uint64{1, 2, 3} {
		for _, faulty := range []bool{false, true} {
			run := func(parallel bool) (*Result, uint64) {
				trace := fnv.New64a()
				cfg := Config{
					Members: 5, Frames: 300, Seed: seed, Profile: p,
					NewSim:   func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
					Commands: commandsEvery(3),
					OnReceive: func(now time.Duration, from, to bucket.Slot, data []byte) {
						var hdr [10]byte
						binary.LittleEndian.PutUint64(hdr[:], uint64(now))
						hdr[8], hdr[9] = byte(from), byte(to)
						trace.Write(hdr[:])
						trace.Write(data)
					},
					Parallel: parallel,
				}
				if faulty {
					cfg.Faults = faults
				}
				if got := (&harness{cfg: cfg}).parallel(); got != parallel {
					t.Fatalf("parallel %v: the harness would step in parallel: %v", parallel, got)
				}
				res, err := Run(cfg)
				if err != nil {
					t.Fatalf("seed %d, parallel %v: %v", seed, parallel, err)
				}
				return res, trace.Sum64()
			}
			inTurn, inTurnTrace := run(false)
			par, parTrace := run(true)
			if inTurnTrace != parTrace {
				t.Errorf("seed %d, faults %v: the datagrams differ", seed, faulty)
			}
			if !reflect.DeepEqual(inTurn, par) {
				t.Errorf("seed %d, faults %v: the results differ:\nin turn  %+v\nparallel %+v", seed, faulty, inTurn.Members, par.Members)
			}
			if inTurn.Commands() == 0 || len(inTurn.Survivors) < 4 {
				t.Fatalf("seed %d, faults %v: %d commands, survivors %v", seed, faulty, inTurn.Commands(), inTurn.Survivors)
			}
		}
	}
}

// Whatever reads a simulation as it steps keeps the members stepping in
// turn.
func TestParallelSteppingOnlyWhereSafe(t *testing.T) {
	base := Config{Parallel: true}
	for name, cfg := range map[string]Config{
		"OnStep":     {Parallel: true, OnStep: func(bucket.Slot, lockstep.Bucket, lockstep.Simulation) {}},
		"perturb":    {Parallel: true, Faults: []Fault{{Kind: FaultPerturb}}},
		"spectators": {Parallel: true, Spectators: 1},
	} {
		if (&harness{cfg: cfg}).parallel() {
			t.Errorf("%s: stepped in parallel", name)
		}
	}
	if (&harness{cfg: base, archive: &archive{}}).parallel() {
		t.Error("with an archive for joiners: stepped in parallel")
	}
	if !(&harness{cfg: base}).parallel() {
		t.Error("a plain run does not step in parallel")
	}
}
