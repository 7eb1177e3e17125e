package locksteptest

import (
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// Running the members' cores side by side within windows gives the same
// run as in turn: the same result, member for member, over a few seeds and
// profiles, with and without faults (a freeze, a partition, a kill, a
// leave; and six of ten members killed, which leaves the other four in a
// minority: the run ends, within a window, when the last stops), signed and
// unsigned.
func TestWindowsChangeNothing(t *testing.T) {
	faults := []Fault{
		{Kind: FaultFreeze, Slot: 1, Frame: 60, Duration: 400 * time.Millisecond},
		{Kind: FaultPartition, Frame: 120, Duration: 300 * time.Millisecond},
		{Kind: FaultKill, Slot: 4, Frame: 200},
		{Kind: FaultLeave, Slot: 2, Frame: 240},
	}
	var kills []Fault
	for slot := range bucket.Slot(6) {
		kills = append(kills, Fault{Kind: FaultKill, Slot: slot, Frame: 40})
	}
	for _, c := range []struct {
		profile  string
		members  int
		seed     uint64
		faults   []Fault
		unsigned bool
		stopped  bool // every member stops
		raced    bool // checked under the race detector too
	}{
		{"broadband", 10, 1, nil, false, false, true},
		{"bad", 6, 2, faults, false, false, true},
		{"bad", 6, 3, nil, true, false, false},
		{"intercontinental", 5, 4, faults, true, false, false},
		{"modem", 8, 8, faults, false, false, false},
		{"intercontinental", 10, 6, kills, false, true, true},
	} {
		if raceEnabled && !c.raced {
			continue
		}
		p, err := netsim.Named(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		run := func(windows bool) *Result {
			cfg := Config{
				Members: c.members, Frames: 260, Seed: c.seed, Profile: p,
				NewSim:   func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
				Commands: commandsEvery(3),
				Unsigned: c.unsigned,
				Windows:  windows,
			}
			cfg.Faults = c.faults
			res, err := Run(cfg)
			if err != nil {
				t.Fatalf("%+v, windows %v: %v", c, windows, err)
			}
			return res
		}
		inTurn, side := run(false), run(true)
		if inTurn.windows != 0 || side.windows < 100 {
			t.Fatalf("%+v: %d and %d windows", c, inTurn.windows, side.windows)
		}
		if side.endedInWindow != c.stopped {
			t.Errorf("%+v: ended within a window: %v", c, side.endedInWindow)
		}
		side.windows, side.endedInWindow = 0, false
		if !reflect.DeepEqual(inTurn, side) {
			t.Errorf("%+v: the results differ:\nin turn %+v\nwindows %+v", c, inTurn.Members, side.Members)
		}
		if inTurn.Commands() == 0 || c.stopped != (len(inTurn.Survivors) == 0) {
			t.Fatalf("%+v: %d commands, survivors %v", c, inTurn.Commands(), inTurn.Survivors)
		}
	}
}

// Whatever reads the run as it goes or is shared between members keeps it
// in turn.
func TestWindowsOnlyWhereSafe(t *testing.T) {
	p, err := netsim.Named("broadband")
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]Config{
		"Parallel":  {Parallel: true},
		"OnReceive": {OnReceive: func(time.Duration, bucket.Slot, bucket.Slot, []byte) {}},
		"storm":     {Faults: []Fault{{Kind: FaultStorm}}},
		"mute":      {Faults: []Fault{{Kind: FaultMute}}},
		"stream":    {Transport: TransportStream},
	} {
		cfg.Windows, cfg.Members, cfg.Frames, cfg.Profile = true, 4, 100, p
		cfg.NewSim = func(bucket.Slot) lockstep.Simulation { return &NullSim{} }
		res, err := Run(cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.windows != 0 {
			t.Errorf("%s: %d windows run side by side", name, res.windows)
		}
	}
}
