package main

import (
	"testing"

	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
)

// The two halves of phalanx sim --peers 64 --sim null on broadband, apart:
// short enough to run under a cache simulator (docs/benchmarks.md,
// "Virtual-time speed").

// simBenchFlags are the flags of phalanx sim --peers 64 --frames frames
// --sim null.
func simBenchFlags(frames int) runFlags {
	return runFlags{peers: 64, frames: frames, seed: 1, profile: "broadband", sim: "null", frameMS: 50, budget: -1,
		policy: "adaptive", transport: locksteptest.TransportDatagram}
}

// BenchmarkSim64Lockstep is the lockstep run of 64 members for 100 frames.
func BenchmarkSim64Lockstep(b *testing.B) {
	f := simBenchFlags(100)
	profile, err := loadProfile(f.profile)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		g, err := newGame(f.sim, f.peers, f.seed)
		if err != nil {
			b.Fatal(err)
		}
		res, err := locksteptest.Run(f.harnessConfig(profile, g))
		if err != nil || !res.Identical {
			b.Fatalf("%v, identical %v", err, res.Identical)
		}
	}
}

// BenchmarkSim64Cursors is the cursors' two runs of 64 members for 200
// frames.
func BenchmarkSim64Cursors(b *testing.B) {
	f := simBenchFlags(200)
	profile, err := loadProfile(f.profile)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		simulateCursors(&f, profile)
	}
}
