package lockstep_test

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

func TestPolicyDefaultsAndNames(t *testing.T) {
	tests := []struct {
		policy lockstep.Policy
		want   lockstep.Policy
		name   string
	}{
		{nil, lockstep.Adaptive{}, "adaptive"},
		{&lockstep.Adaptive{}, lockstep.Adaptive{}, "adaptive"},
		{lockstep.Fixed{Frames: 3}, lockstep.Fixed{Frames: 3}, "fixed:3"},
		{&lockstep.Fixed{Frames: 5}, lockstep.Fixed{Frames: 5}, "fixed:5"},
		{lockstep.AoE(50 * time.Millisecond), lockstep.Turns{Length: 4, Ahead: 2}, "turns:4x2"},
		{lockstep.AoE(30 * time.Millisecond), lockstep.Turns{Length: 7, Ahead: 2}, "turns:7x2"},
		{lockstep.BucketRTT(), lockstep.Turns{Length: 0, Ahead: 1}, "turns:0x1"},
	}
	for _, tt := range tests {
		cfg := memberConfig(2, 0)
		cfg.Policy = tt.policy
		c := newCore(t, cfg, 0)
		if got := c.Config().Policy; got != tt.want || got.String() != tt.name {
			t.Errorf("policy %v: the core runs %#v (%q), want %#v (%q)", tt.policy, got, got, tt.want, tt.name)
		}
	}
}

// Turns advance a member's seal once a turn, and a command submitted
// during a turn executes at the first frame of the turn Ahead turns later.
func TestPolicyTurnsSealOnceATurn(t *testing.T) {
	cfg := lockstep.Config{Members: 1, Session: testSession, Policy: lockstep.Turns{Length: 4, Ahead: 2}}
	c := newCore(t, cfg, 0)
	for f := range 16 {
		now := time.Duration(f)*frameLen + frameLen/2
		c.Ready(now)
		turn := f / 4
		if seal, want := c.Stats().Seal, bucket.Frame(4*(turn+2)-1); seal != want {
			t.Errorf("frame %d (turn %d): seal %d, want %d (the last frame of turn %d)", f, turn, seal, want, turn+1)
		}
		got, err := c.Submit(now, []byte{byte(f)})
		if err != nil {
			t.Fatal(err)
		}
		if want := bucket.Frame(4 * (turn + 2)); got != want {
			t.Errorf("submitted in frame %d (turn %d): stamped %d, want %d (the first frame of turn %d)", f, turn, got, want, turn+2)
		}
	}
	if d := c.Stats().Delay; d != 8 {
		t.Errorf("Stats().Delay %d, want 8 (two turns of four frames)", d)
	}
}
