package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/phalanx-net/phalanx/internal/chart"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
)

// The bench's plots, drawn by internal/chart.

var policyColors = map[string]string{
	"adaptive":   "#1b9e77",
	"aoe":        "#d95f02",
	"bucket-rtt": "#7570b3",
	"fixed:4":    "#e7298a",
}

const (
	floorColor  = "#cc0000"
	streamColor = "#555555"
)

// writePlots writes the bench's plots into dir and returns their paths.
func writePlots(dir string, res *benchResult) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	write := func(name string, w, h float64, p chart.Panel) error {
		b, err := chart.SVG(w, h, p)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		paths = append(paths, path)
		return nil
	}
	var profiles []string
	for _, r := range res.Runs {
		if r.report != nil && !slices.Contains(profiles, r.Profile) {
			profiles = append(profiles, r.Profile)
		}
	}
	for _, p := range profiles {
		if panel, ok := plotCDF(res.Runs, p); ok {
			if err := write("bench-cdf-"+p+".svg", 560, 480, panel); err != nil {
				return paths, err
			}
		}
	}
	if len(profiles) > 0 {
		if err := write("bench-stalls.svg", 680, 520, plotBars(res.Runs, profiles, false)); err != nil {
			return paths, err
		}
		if err := write("bench-bandwidth.svg", 680, 520, plotBars(res.Runs, profiles, true)); err != nil {
			return paths, err
		}
	}
	if len(res.Netlib) > 0 {
		if err := write("bench-netlib.svg", 560, 470, plotNetlib(res.Netlib)); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// shareAtMost returns the share of sorted ds at or below x.
func shareAtMost(ds []time.Duration, x time.Duration) float64 {
	i, _ := slices.BinarySearch(ds, x+1)
	return float64(i) / float64(max(1, len(ds)))
}

// cdf samples the share of sorted ds at or below each of n+1 points from 0
// to xmax milliseconds; out gives the share above instead.
func cdf(ds []time.Duration, xmax float64, n int, out bool) [][2]float64 {
	pts := make([][2]float64, 0, n+1)
	for i := 0; i <= n; i++ {
		x := xmax * float64(i) / float64(n)
		v := shareAtMost(ds, time.Duration(x*1e6))
		if out {
			v = 1 - v
		}
		pts = append(pts, [2]float64{x, v})
	}
	return pts
}

// roundUp rounds v up to a whole number of steps of 1, 2 or 5 times a power
// of ten, so that an axis ends on a tick.
func roundUp(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// plotCDF draws the latency CDF of every policy over datagrams on one
// profile, with adaptive over the stream dashed for comparison, and the
// network's one-way p99 as the floor.
func plotCDF(runs []*benchRun, profile string) (chart.Panel, bool) {
	var lines []chart.Line
	var first *benchRun
	xmax := 0.0
	add := func(r *benchRun, label, color string, dashed bool) {
		lines = append(lines, chart.Line{
			Label:  fmt.Sprintf("%s: p95 %.0f ms, stall rate %.4f", label, r.Latency.P95, r.StallRate),
			Color:  color,
			Width:  1.8,
			Dashed: dashed,
			Points: nil, // sampled once xmax is known
		})
	}
	var sources []*benchRun
	for _, pol := range benchPolicies {
		if r := find(runs, profile, locksteptest.TransportDatagram, pol); r != nil && len(r.latencies) > 0 {
			if first == nil {
				first = r
			}
			add(r, pol+" (datagram)", policyColors[pol], false)
			sources = append(sources, r)
			xmax = max(xmax, float64(locksteptest.Percentile(r.latencies, 99.5))/1e6)
		}
	}
	if first == nil {
		return chart.Panel{}, false
	}
	if r := find(runs, profile, locksteptest.TransportStream, "adaptive"); r != nil && len(r.latencies) > 0 {
		add(r, "adaptive (stream)", streamColor, true)
		sources = append(sources, r)
	}
	floor := first.OneWay.P99
	xmax = roundUp(max(xmax, floor) * 1.1)
	for i, r := range sources {
		lines[i].Points = cdf(r.latencies, xmax, 600, false)
	}
	return chart.Panel{
		Title:  fmt.Sprintf("Command latency, profile %s (%d members, %d frames)", profile, first.Peers, first.Frames),
		XLabel: "submission to execution on the last member (ms)",
		YLabel: "share of commands",
		Fixed:  true, XMax: xmax, YMin: 0, YMax: 1,
		YTicks: func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
		Lines:  lines,
		Marks:  []chart.Mark{{X: floor, Label: fmt.Sprintf("one-way p99 %.0f ms: the floor", floor), Color: floorColor}},
	}, true
}

// stallFloor is where a stall rate of 0 is drawn on the log axis.
const stallFloor = 1e-5

// plotBars draws, per profile, one bar per policy and transport: the stall
// rate (log scale, 0 drawn at the floor) or the upload in kbit/s with the
// modem's budget.
func plotBars(runs []*benchRun, profiles []string, bandwidth bool) chart.Panel {
	p := chart.Panel{
		Title:  "Stall rate: share of frames a member waited for a seal (0 drawn at 1e-5)",
		YLabel: "stall rate",
		LogY:   true,
		Fixed:  true, XMin: -0.5, XMax: float64(len(profiles)) - 0.5, YMin: stallFloor, YMax: 1,
	}
	value := func(r *benchRun) float64 { return r.StallRate }
	if bandwidth {
		p.Title, p.YLabel, p.LogY = "Upload per member on the wire (headers and retransmissions included)", "kbit/s per member", false
		value = func(r *benchRun) float64 { return r.Bytes.Up * 8 / 1000 }
		top := benchModemBudget * 8.0 / 1000
		for _, r := range runs {
			if r.report != nil {
				top = max(top, value(r))
			}
		}
		p.YMin, p.YMax = 0, roundUp(top*1.1)
		if slices.Contains(profiles, "modem") {
			p.Marks = append(p.Marks, chart.Mark{Horizontal: true, Y: benchModemBudget * 8.0 / 1000, Label: "modem budget, 28.8 kbit/s", Color: floorColor})
		}
	}
	for _, pr := range profiles {
		p.Groups = append(p.Groups, pr+"\n"+profileMembers(runs, pr))
	}
	for _, tr := range benchTransports {
		for _, pol := range benchPolicies {
			b := chart.Bars{Label: pol + " over " + tr, Color: policyColors[pol]}
			if tr == locksteptest.TransportStream {
				b.Opacity = 0.35
			}
			for _, pr := range profiles {
				v := 0.0
				if r := find(runs, pr, tr, pol); r != nil {
					v = value(r)
				}
				b.Values = append(b.Values, v)
			}
			p.Bars = append(p.Bars, b)
		}
	}
	return p
}

func profileMembers(runs []*benchRun, profile string) string {
	for _, r := range runs {
		if r.report != nil && r.Profile == profile {
			return fmt.Sprintf("%d members", r.Peers)
		}
	}
	return ""
}

// plotNetlib draws, for the netlib scenario, the share of deliveries still
// outstanding after a delay (log scale), per transport, with the article's
// napkin figures as markers.
func plotNetlib(runs []*netlibRun) chart.Panel {
	xmax := 400.0
	for _, n := range runs {
		xmax = max(xmax, n.DelayMS.P9999*1.1)
	}
	xmax = roundUp(xmax)
	p := chart.Panel{
		Title:  "Delivery delay at RTT 200 ms and 2% loss (the netlib scenario)",
		XLabel: "first send of a command to its arrival at a member (ms)",
		YLabel: "share not yet delivered",
		LogY:   true,
		YTicks: func(v float64) string { return strconv.FormatFloat(100*v, 'g', 3, 64) + "%" },
		Fixed:  true, XMax: xmax, YMin: 1e-6, YMax: 1,
	}
	colors := map[string]string{locksteptest.TransportDatagram: policyColors["adaptive"], locksteptest.TransportStream: streamColor}
	for _, n := range runs {
		if len(n.delays) == 0 {
			continue
		}
		p.Lines = append(p.Lines, chart.Line{
			Label:  fmt.Sprintf("%s (%s): %s within 100 ms, p99.9 %.0f ms", n.Transport, n.Policy, pct(n.Within100), n.DelayMS.P999),
			Color:  colors[n.Transport],
			Width:  1.8,
			Dashed: n.Transport == locksteptest.TransportStream,
			Points: cdf(n.delays, xmax, 800, true),
		})
	}
	// The article's napkin table, as the share still outstanding after
	// each delay.
	p.Lines = append(p.Lines,
		chart.Line{Label: "napkin figures, redundant resends every 100 ms", Color: "#d95f02", Circles: true,
			Points: [][2]float64{{100, 0.02}, {200, 0.0004}, {300, 0.000008}}},
		chart.Line{Label: "napkin figures, timeouts only (2% wait until 340 ms)", Color: "#7570b3", Dotted: true, Width: 1.5,
			Points: [][2]float64{{100, 0.02}, {340, 0.02}}})
	return p
}
