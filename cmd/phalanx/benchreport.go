package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"
)

func (f *benchFlags) printMarkdown(w io.Writer, res *benchResult, wall time.Duration) {
	frames := f.frameCount()
	fmt.Fprintf(w, "## phalanx bench\n\n")
	fmt.Fprintf(w, "%d members per run (modem: %d), %d frames of 50 ms (%.0f s of play), seed %d, the null simulation with the rts generator's command rate; %d runs in %.1f s of wall time on %d CPUs.\n\n",
		f.peers, benchModemPeers, frames, float64(frames)/20, f.seed, len(res.Runs)+len(res.Netlib), wall.Seconds(), runtime.NumCPU())
	fmt.Fprintln(w, "Latency: a command's submission to its execution on the last member. Floor: the one-way p99, the network's own delay of every datagram or segment. Over floor: latency p95 − one-way p99. Stall rate: share of frames a member waited for a seal. Stall ms/min: how long a member's frame clock waited, per member and minute of play. Up: bytes per member per second on the wire, 56 bytes of headers per datagram or segment, retransmissions included.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| profile | transport | policy | peers | identical | latency p50 / p95 / p99 (ms) | one-way p99 (ms) | p95 over floor (ms) | stall rate | stalled frames | stall ms/min | up B/s | up kbit/s |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range res.Runs {
		if r.report == nil {
			fmt.Fprintf(w, "| %s | %s | %s | | error: %s | | | | | | | | |\n", "?", r.Transport, r.Policy, r.Error)
			continue
		}
		ident := fmt.Sprint(r.Identical)
		if len(r.Sides) > 1 {
			ident += fmt.Sprintf(" (split in %d)", len(r.Sides))
		}
		switch {
		case strings.Contains(r.Error, "did not finish"):
			ident += ", did not finish"
		case r.Error != "":
			ident += " (" + r.Error + ")"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %.0f / %.0f / %.0f | %.1f | %.0f | %.5f | %d | %.1f | %.0f | %.1f |\n",
			r.Profile, r.Transport, r.Policy, r.Peers, ident, r.Latency.P50, r.Latency.P95, r.Latency.P99,
			r.OneWay.P99, r.OverFloorMS, r.StallRate, r.StalledFrames, r.StallMSPerMin, r.Bytes.Up, r.Bytes.Up*8/1000)
	}
	fmt.Fprintln(w)
	if len(res.Goals) > 0 {
		fmt.Fprintln(w, "### Goals")
		fmt.Fprintln(w)
		for _, g := range res.Goals {
			mark := "✓"
			if !g.Met {
				mark = "✗"
			}
			fmt.Fprintf(w, "- %s %s — %s\n", mark, g.Goal, g.Detail)
		}
		fmt.Fprintln(w)
	}
	if len(res.Netlib) > 0 {
		fmt.Fprintln(w, "### The netlib article's scenario: RTT 200 ms, 2% loss")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Every member issues a command every frame. Delivery delay: from the first time a datagram carrying a command left its sender for a member to the first time one reached that member's core (over the stream: when the stream handed it on in order), per command and receiver.")
		fmt.Fprintln(w)
		fmt.Fprint(w, "| delivered within | seed: redundant resends every 100 ms (napkin) | seed: timeouts only (napkin)")
		for _, n := range res.Netlib {
			fmt.Fprintf(w, " | %s (%s)", n.Transport, n.Policy)
		}
		fmt.Fprintln(w, " |")
		fmt.Fprint(w, "|---|---|---")
		for range res.Netlib {
			fmt.Fprint(w, "|---")
		}
		fmt.Fprintln(w, "|")
		rows := []struct {
			label        string
			seed, seedTO string
			get          func(n *netlibRun) float64
		}{
			{"100 ms", "98%", "98%", func(n *netlibRun) float64 { return n.Within100 }},
			{"200 ms", "99.96%", "98%", func(n *netlibRun) float64 { return n.Within200 }},
			{"300 ms", "99.9992%", "98%", func(n *netlibRun) float64 { return n.Within300 }},
			{"340 ms", "≈100%", "99.96%", func(n *netlibRun) float64 { return n.Within340 }},
		}
		for _, row := range rows {
			fmt.Fprintf(w, "| %s | %s | %s", row.label, row.seed, row.seedTO)
			for _, n := range res.Netlib {
				fmt.Fprintf(w, " | %s", pct(row.get(n)))
			}
			fmt.Fprintln(w, " |")
		}
		fmt.Fprint(w, "| delay p50 / p99 / p99.9 / p99.99 / max (ms) | 100 / 200 / 200 / 300 / 340 | 100 / 340 / 340 / — / —")
		for _, n := range res.Netlib {
			fmt.Fprintf(w, " | %.0f / %.0f / %.0f / %.0f / %.0f", n.DelayMS.P50, n.DelayMS.P99, n.DelayMS.P999, n.DelayMS.P9999, n.DelayMS.Max)
		}
		fmt.Fprintln(w, " |")
		fmt.Fprint(w, "| deliveries measured | | ")
		for _, n := range res.Netlib {
			fmt.Fprintf(w, " | %d", n.Samples)
		}
		fmt.Fprintln(w, " |")
		fmt.Fprint(w, "| command latency p50 / p99 (ms), stall rate | | ")
		for _, n := range res.Netlib {
			fmt.Fprintf(w, " | %.0f / %.0f, %.5f", n.Latency.P50, n.Latency.P99, n.StallRate)
		}
		fmt.Fprintln(w, " |")
		fmt.Fprintln(w)
	}
	if len(res.Plots) > 0 {
		fmt.Fprintln(w, "### Plots")
		fmt.Fprintln(w)
		for _, p := range res.Plots {
			fmt.Fprintf(w, "- %s\n", p)
		}
		fmt.Fprintln(w)
	}
}

// pct formats a share as a percentage with the decimals it needs.
func pct(v float64) string {
	switch {
	case v >= 1:
		return "100%"
	case v >= 0.9999:
		return fmt.Sprintf("%.4f%%", 100*v)
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}
