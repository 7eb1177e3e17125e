package main

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/lockstep"
)

func TestParsePolicy(t *testing.T) {
	frame := 50 * time.Millisecond
	good := map[string]lockstep.Policy{
		"":           lockstep.Adaptive{},
		"adaptive":   lockstep.Adaptive{},
		"aoe":        lockstep.Turns{Length: 4, Ahead: 2},
		"bucket-rtt": lockstep.Turns{Ahead: 1},
		"fixed:1":    lockstep.Fixed{Frames: 1},
		"fixed:12":   lockstep.Fixed{Frames: 12},
	}
	for name, want := range good {
		if got, err := parsePolicy(name, frame); err != nil || got != want {
			t.Errorf("parsePolicy(%q) = %#v, %v; want %#v", name, got, err, want)
		}
	}
	for _, name := range []string{"fixed:0", "fixed:-2", "fixed:", "fixed:x", "turns", "Adaptive"} {
		if got, err := parsePolicy(name, frame); err == nil {
			t.Errorf("parsePolicy(%q) = %#v, want an error", name, got)
		}
	}
}
