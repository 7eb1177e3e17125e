package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-net/phalanx/lockstep"
)

// policyNames are the scheduling policies --policy accepts besides fixed:N.
const policyNames = "adaptive, aoe, bucket-rtt, fixed:N"

// parsePolicy returns the scheduling policy named on the command line, for
// frames of length frame: "adaptive" (the default: delay from what
// happened), "aoe" (200 ms turns, two turns ahead), "bucket-rtt" (turns of
// one RTT, one turn ahead) or "fixed:N" (a constant N frames ahead).
func parsePolicy(name string, frame time.Duration) (lockstep.Policy, error) {
	switch {
	case name == "" || name == "adaptive":
		return lockstep.Adaptive{}, nil
	case name == "aoe":
		return lockstep.AoE(frame), nil
	case name == "bucket-rtt":
		return lockstep.BucketRTT(), nil
	case strings.HasPrefix(name, "fixed:"):
		n, err := strconv.Atoi(strings.TrimPrefix(name, "fixed:"))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("policy %q: want fixed:N with N ≥ 1 frames", name)
		}
		return lockstep.Fixed{Frames: n}, nil
	}
	return nil, fmt.Errorf("unknown policy %q (known: %s)", name, policyNames)
}
