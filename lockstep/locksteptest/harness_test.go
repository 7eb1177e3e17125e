package locksteptest

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// commandsEvery returns a generator issuing one 12-byte command per member
// every n frames, staggered by member.
func commandsEvery(n int) func(bucket.Slot, bucket.Frame) [][]byte {
	return func(s bucket.Slot, f bucket.Frame) [][]byte {
		if (int(f)+int(s)*7)%n == 0 {
			return [][]byte{{byte(s), byte(f), byte(f >> 8), 1, 2, 3, 4, 5, 6, 7, 8, 9}}
		}
		return nil
	}
}

func runProfile(t testing.TB, profile string, members, frames int, seed uint64, core lockstep.Config) *Result {
	t.Helper()
	return runOver(t, profile, members, frames, seed, core, TransportDatagram)
}

// runOver runs members NullSims on the named profile over transport,
// keeping every sample.
func runOver(t testing.TB, profile string, members, frames int, seed uint64, core lockstep.Config, transport string) *Result {
	t.Helper()
	p, err := netsim.Named(profile)
	if err != nil {
		t.Fatal(err)
	}
	if core.Budget == 0 && profile == "modem" {
		core.Budget = 3600
	}
	res, err := Run(Config{
		Members:   members,
		Frames:    frames,
		Seed:      seed,
		Profile:   p,
		Core:      core,
		NewSim:    func(bucket.Slot) lockstep.Simulation { return &NullSim{} },
		Commands:  commandsEvery(10),
		Transport: transport,
		// Every sample, for the tests that compare runs sample by sample
		// and the sketches with the samples.
		KeepSamples: true,
	})
	if err != nil {
		t.Fatalf("%s over %s, seed %d: %v", profile, transport, seed, err)
	}
	return res
}

// TestIdenticalOverSeedsAndProfiles is the property the engine exists for:
// on every network profile and for many seeds, every member steps identical
// buckets and reaches the same hash, and every submitted command executes on
// every member.
func TestIdenticalOverSeedsAndProfiles(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for _, profile := range netsim.Names() {
		for seed := range uint64(seeds) {
			members := 2 + int(seed)%5
			t.Run(fmt.Sprintf("%s/seed=%d/members=%d", profile, seed, members), func(t *testing.T) {
				res := runProfile(t, profile, members, 300, seed, lockstep.Config{})
				if !res.Identical {
					t.Fatalf("not identical: first divergent frame %d", res.Diverged)
				}
				submitted := int64(0)
				for _, m := range res.Members {
					submitted += m.Stats.Submitted
					if len(m.Errors) > 0 {
						t.Fatalf("member %d: submit errors %v", m.Slot, m.Errors)
					}
				}
				// Commands submitted late in the run may execute after the
				// last frame; every earlier one must have executed everywhere.
				if executed := int64(res.Commands()); executed < submitted-int64(members)*int64(lockstep.DefaultMaxDelay/10+1) {
					t.Fatalf("%d of %d commands executed on every member", executed, submitted)
				}
			})
		}
	}
}

// TestSameSeedSameRun: the harness is deterministic, byte for byte.
func TestSameSeedSameRun(t *testing.T) {
	a := runProfile(t, "bad", 4, 300, 7, lockstep.Config{})
	b := runProfile(t, "bad", 4, 300, 7, lockstep.Config{})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	c := runProfile(t, "bad", 4, 300, 8, lockstep.Config{})
	if reflect.DeepEqual(a.Latencies, c.Latencies) {
		t.Fatal("runs with different seeds are the same")
	}
}

// TestDetectsDivergence checks the harness's ground truth can fail: a member
// whose simulation differs is reported.
func TestDetectsDivergence(t *testing.T) {
	p, _ := netsim.Named("lan")
	res, err := Run(Config{
		Members: 3, Frames: 100, Seed: 1, Profile: p,
		NewSim: func(s bucket.Slot) lockstep.Simulation {
			if s == 2 {
				return &perturbed{at: 40}
			}
			return &NullSim{}
		},
		Commands: commandsEvery(5),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Identical || res.Diverged != 40 || res.Desynced != 1 {
		t.Fatalf("identical=%v diverged=%d desynced=%d, want false, 40, 1", res.Identical, res.Diverged, res.Desynced)
	}
}

type perturbed struct {
	NullSim
	at bucket.Frame
}

func (p *perturbed) Step(f bucket.Frame, cmds []bucket.Command) {
	p.NullSim.Step(f, cmds)
	if f == p.at {
		p.state++
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	p, _ := netsim.Named("lan")
	newSim := func(bucket.Slot) lockstep.Simulation { return &NullSim{} }
	for name, cfg := range map[string]Config{
		"no members": {Members: 0, Frames: 10, Profile: p, NewSim: newSim},
		"no frames":  {Members: 2, Frames: 0, Profile: p, NewSim: newSim},
		"no sim":     {Members: 2, Frames: 10, Profile: p},
		"no profile": {Members: 2, Frames: 10, NewSim: newSim},
	} {
		if _, err := Run(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestModemBudget: on the modem profile the budget keeps every member under
// 28.8 kbit/s, headers included.
func TestModemBudget(t *testing.T) {
	res := runProfile(t, "modem", 8, 600, 1, lockstep.Config{Budget: 3600})
	if !res.Identical {
		t.Fatal("not identical")
	}
	for _, m := range res.Members {
		if rate := float64(m.Stats.BytesSent) / res.Duration.Seconds(); rate > 3600 {
			t.Errorf("member %d sent %.0f B/s, budget 3600", m.Slot, rate)
		}
	}
}

// TestPercentilesAgreeWithSamples: the percentiles a run reports from its
// bounded sketches are within 1 % of the exact nearest-rank percentiles of
// the samples it recorded, over datagrams and over streams.
func TestPercentilesAgreeWithSamples(t *testing.T) {
	for _, res := range []*Result{
		runProfile(t, "bad", 4, 1000, 3, lockstep.Config{}),
		runStream(t, "bad", 3, 800, 4, TransportStream),
	} {
		if len(res.Latencies) < 150 || len(res.OneWay) < 5000 || res.Commands() != len(res.Latencies) {
			t.Fatalf("%d latencies (%d counted), %d one-way delays", len(res.Latencies), res.Commands(), len(res.OneWay))
		}
		for _, p := range []float64{0, 1, 50, 95, 99, 99.9, 100} {
			for _, c := range []struct {
				name       string
				got, exact time.Duration
			}{
				{"latency", res.LatencyPercentile(p), Percentile(res.Latencies, p)},
				{"one-way delay", res.OneWayPercentile(p), Percentile(res.OneWay, p)},
			} {
				if diff := math.Abs(float64(c.got - c.exact)); diff > 0.01*float64(c.exact)+1 {
					t.Errorf("%s p%v: reported %v, exact %v", c.name, p, c.got, c.exact)
				}
			}
		}
	}
}
