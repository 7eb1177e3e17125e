package locksteptest

import (
	"strings"
	"testing"
	"time"
)

// TestTwentySpectators: four members, twenty spectators, most of them
// served by other spectators; every spectator steps every frame and ends on
// the members' final hash, with and without a delay.
func TestTwentySpectators(t *testing.T) {
	for _, delay := range []time.Duration{0, 2 * time.Second} {
		res := runFaults(t, "broadband", 4, 800, 5, nil, nil, nullSims(true), func(c *Config) {
			c.Spectators, c.SpectatorDelay = 20, delay
		})
		if !res.Identical || len(res.Spectators) != 20 {
			t.Fatalf("delay %v: identical %v, %d spectators", delay, res.Identical, len(res.Spectators))
		}
		final := res.Members[0].FinalHash
		bySpectators := 0
		for _, s := range res.Spectators {
			if s.Diverged || s.Stepped != 799 || s.FinalHash != final {
				t.Fatalf("delay %v: spectator %+v, members' final hash %x", delay, s, final)
			}
			if strings.HasPrefix(s.ServedBy, "spectator") {
				bySpectators++
			}
		}
		if bySpectators != 12 {
			t.Fatalf("%d spectators served by spectators, want 12 (each member serves two)", bySpectators)
		}
		// Each member served two spectators' worth of buckets, whatever
		// the number of spectators.
		for slot, b := range res.SpectatorBytes {
			if b <= 0 || b > 2*res.Spectators[0].Bytes {
				t.Fatalf("member %d sent spectators %d bytes; one spectator received %d", slot, b, res.Spectators[0].Bytes)
			}
		}
		// The spectators finish the delay after the members.
		if res.Duration < 799*50*time.Millisecond+delay {
			t.Fatalf("delay %v: the run ended after %v", delay, res.Duration)
		}
	}
}

// TestLateSpectatorsCatchUp: spectators that arrive at frame 500 load a
// checkpoint, or without the snapshot interface every bucket from frame 0,
// and finish on the members' final hash.
func TestLateSpectatorsCatchUp(t *testing.T) {
	for _, snap := range []bool{true, false} {
		res := runFaults(t, "bad", 3, 900, 6, nil, nil, nullSims(snap), func(c *Config) {
			c.Spectators, c.SpectatorsFrom = 5, 500
		})
		if !res.Identical {
			t.Fatalf("snap %v: not identical", snap)
		}
		for _, s := range res.Spectators {
			if s.Diverged || s.Stepped != 899 || s.FinalHash != res.Members[0].FinalHash || s.From < 400 || snap != (s.Snapshot >= 0) {
				t.Fatalf("snap %v: spectator %+v", snap, s)
			}
		}
	}
}
