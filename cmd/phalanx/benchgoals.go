package main

import (
	"fmt"
	"slices"

	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
)

// find returns the run of the matrix for a profile, transport and policy,
// or nil.
func find(runs []*benchRun, profile, transport, policy string) *benchRun {
	for _, r := range runs {
		if r.report != nil && r.Profile == profile && r.Transport == transport && r.Policy == policy {
			return r
		}
	}
	return nil
}

// goal is one of the bench's goals, judged on one run of the bench.
type goal struct {
	Goal   string `json:"goal"`
	Met    bool   `json:"met"`
	Detail string `json:"detail"`
}

// judgeGoals checks the bench's goals against the runs.
func judgeGoals(runs []*benchRun) []goal {
	var goals []goal
	var profiles []string
	for _, r := range runs {
		if r.report != nil && !slices.Contains(profiles, r.Profile) {
			profiles = append(profiles, r.Profile)
		}
	}
	// 1. adaptive: lower p95 than aoe and bucket-rtt at an equal or lower
	// stall rate, on the default transport.
	for _, p := range profiles {
		a := find(runs, p, locksteptest.TransportDatagram, "adaptive")
		for _, other := range []string{"aoe", "bucket-rtt"} {
			o := find(runs, p, locksteptest.TransportDatagram, other)
			if a == nil || o == nil {
				continue
			}
			g := goal{Goal: fmt.Sprintf("%s: adaptive p95 below %s's at an equal or lower stall rate (datagram)", p, other)}
			faster, steadier := a.Latency.P95 < o.Latency.P95, a.StallRate <= o.StallRate
			g.Met = faster && steadier
			g.Detail = fmt.Sprintf("p95 %.1f vs %.1f ms (%+.1f ms), stall rate %.5f vs %.5f", a.Latency.P95, o.Latency.P95, a.Latency.P95-o.Latency.P95, a.StallRate, o.StallRate)
			switch {
			case !faster && !steadier:
				g.Detail += ": adaptive is both slower and stalls more"
			case !faster:
				g.Detail += fmt.Sprintf(": adaptive is %.1f ms slower", a.Latency.P95-o.Latency.P95)
			case !steadier:
				g.Detail += fmt.Sprintf(": adaptive stalls %.5f more", a.StallRate-o.StallRate)
			}
			goals = append(goals, g)
		}
	}
	// 2. bad: datagrams stall at least 10× fewer frames than the stream.
	for _, pol := range benchPolicies {
		d := find(runs, "bad", locksteptest.TransportDatagram, pol)
		s := find(runs, "bad", locksteptest.TransportStream, pol)
		if d == nil || s == nil {
			continue
		}
		g := goal{Goal: fmt.Sprintf("bad: datagram stalls ≥10× fewer frames than stream (%s)", pol)}
		ratio := float64(s.StalledFrames) / float64(max(d.StalledFrames, 1))
		g.Met = s.StalledFrames >= 10*d.StalledFrames && s.StalledFrames > 0
		g.Detail = fmt.Sprintf("%d vs %d stalled frames (%.1f×); latency p95 %.1f vs %.1f ms", d.StalledFrames, s.StalledFrames, ratio, d.Latency.P95, s.Latency.P95)
		if !g.Met {
			g.Detail += fmt.Sprintf(": %.1f× short of 10×", 10/max(ratio, 0.001))
		}
		g.Detail += failure(s)
		goals = append(goals, g)
	}
	// 3. modem, 8 members: every policy's upload against 28.8 kbit/s.
	for _, tr := range benchTransports {
		for _, pol := range benchPolicies {
			r := find(runs, "modem", tr, pol)
			if r == nil {
				continue
			}
			g := goal{Goal: fmt.Sprintf("modem, %d members: %s over %s within the 28.8 kbit/s budget", r.Peers, pol, tr)}
			g.Met = r.Bytes.Up <= benchModemBudget && r.Peers == benchModemPeers && failure(r) == ""
			g.Detail = fmt.Sprintf("%.0f B/s up = %.2f kbit/s, %.1f%% of the budget", r.Bytes.Up, r.Bytes.Up*8/1000, 100*r.Bytes.Up/benchModemBudget) + failure(r)
			goals = append(goals, g)
		}
	}
	return goals
}

// failure describes how a run failed, or is "".
func failure(r *benchRun) string {
	switch {
	case r.Error != "":
		return "; the run failed: " + r.Error
	case len(r.Sides) > 1:
		return fmt.Sprintf("; the session split in %d", len(r.Sides))
	case !r.Identical:
		return "; the members diverged"
	}
	return ""
}
