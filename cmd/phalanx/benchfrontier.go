package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/phalanx-net/phalanx/internal/chart"
)

// The frontier: phalanx bench --frontier sweeps fixed delays against the
// adaptive policy on each profile, member count and seed.

// frontierFixed is the range of fixed delays swept per profile, in frames:
// from one that stalls often to one that hardly ever does. fixed:1 seals
// each frame at its own time, so every frame waits a one-way delay: it
// stalls nearly every frame on every profile and is left out.
var frontierFixed = map[string][2]int{
	"lan":              {2, 3},
	"broadband":        {2, 4},
	"intercontinental": {2, 8},
	"bad":              {4, 14},
	"modem":            {6, 20},
	"phased":           {2, 14},
}

// frontierFrames is how many frames each run of a profile plays: 4,000
// (200 s), and the whole six minutes of phased.
func frontierFrames(profile string, frames int) int {
	switch {
	case frames > 0:
		return frames
	case profile == "phased":
		return 7200
	}
	return 4000
}

// frontierTolerance is how much lower a fixed delay's p95 must be to count
// as better than adaptive's: differences under it are noise of the sketch
// and the seed.
const frontierTolerance = 5.0 // ms

// point is one policy's result on one profile and member count: per seed,
// and the mean over seeds.
type point struct {
	Policy        string    `json:"policy"`
	P95           float64   `json:"p95_ms"`           // mean over seeds
	StallRate     float64   `json:"stall_rate"`       // mean over seeds
	StallMSPerMin float64   `json:"stall_ms_per_min"` // mean over seeds
	Pareto        bool      `json:"pareto"`           // no other point of the frontier is better on all three
	Seeds         []*report `json:"-"`
	errs          []string  // per seed: the run's error, if any
}

// frontier is the sweep of one profile and member count.
type frontier struct {
	Profile string   `json:"profile"`
	Peers   int      `json:"peers"`
	Frames  int      `json:"frames"`
	Seeds   []uint64 `json:"seeds"`
	Points  []*point `json:"points"` // adaptive first, then fixed:N by N
	// Dominated lists, per seed, the fixed delays with a p95 lower than
	// adaptive's by more than frontierTolerance at a stall rate and stall
	// time no higher: none is the goal.
	Dominated []string `json:"dominated"`
	// BeatsOnBoth lists the fixed delays whose mean p95 and mean stall
	// time are both lower than adaptive's.
	BeatsOnBoth []string `json:"beats_on_both"`
	Errors      []string `json:"errors,omitempty"`
}

// better reports whether a beats b on p95 (by more than tol) at a stall
// rate and stall time no higher.
func better(a, b *report, tol float64) bool {
	return a.Latency.P95 < b.Latency.P95-tol && a.StallRate <= b.StallRate && a.StallMSPerMin <= b.StallMSPerMin
}

// parseMembers parses --members: a comma-separated list of member counts.
func parseMembers(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > 64 {
			return nil, fmt.Errorf("--members %q: want a comma-separated list of 2..64", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// frontierJobs adds the sweep's runs to jobs and returns the frontiers they
// fill.
func (f *benchFlags) frontierJobs(jobs []benchJob) ([]*frontier, []benchJob) {
	profiles, _ := f.profileList()        // checked
	members, _ := parseMembers(f.members) // checked
	var fronts []*frontier
	for _, name := range profiles {
		lo, hi := 1, 16
		if r, ok := frontierFixed[name]; ok {
			lo, hi = r[0], r[1]
		}
		policies := []string{"adaptive"}
		for n := lo; n <= hi; n++ {
			policies = append(policies, fmt.Sprintf("fixed:%d", n))
		}
		for _, peers := range members {
			fr := &frontier{Profile: name, Peers: peers, Frames: frontierFrames(name, f.frames), Dominated: []string{}, BeatsOnBoth: []string{}}
			for s := range f.seeds {
				fr.Seeds = append(fr.Seeds, f.seed+uint64(s))
			}
			for _, pol := range policies {
				pt := &point{Policy: pol, Seeds: make([]*report, len(fr.Seeds)), errs: make([]string, len(fr.Seeds))}
				fr.Points = append(fr.Points, pt)
				for i, seed := range fr.Seeds {
					rf := &runFlags{
						peers: peers, frames: fr.Frames, seed: seed, profile: name, sim: "null",
						frameMS: 50, budget: -1, policy: pol, transport: "datagram",
					}
					r := &benchRun{Policy: pol, Transport: rf.transport}
					jobs = append(jobs, benchJob{
						label: fmt.Sprintf("%-16s %2d members seed %d %-10s", name, peers, seed, pol),
						run: func() {
							r.measureQuiet(rf)
							pt.Seeds[i], pt.errs[i] = r.report, r.Error
						},
						result: func() string {
							if r.report == nil {
								return "error: " + r.Error
							}
							return fmt.Sprintf("p95 %7.1f ms, stall rate %.5f, %7.1f stall ms/min", r.Latency.P95, r.StallRate, r.StallMSPerMin)
						},
					})
				}
			}
			fronts = append(fronts, fr)
		}
	}
	return fronts, jobs
}

// judge computes the means, the Pareto points and the dominance findings
// once every run is in.
func (fr *frontier) judge() {
	for _, pt := range fr.Points {
		for i, e := range pt.errs {
			if e != "" {
				fr.Errors = append(fr.Errors, fmt.Sprintf("seed %d %s: %s", fr.Seeds[i], pt.Policy, e))
			}
		}
		n := 0
		var p95, rate, perMin float64
		for _, r := range pt.Seeds {
			if r == nil {
				continue
			}
			n++
			p95 += r.Latency.P95
			rate += r.StallRate
			perMin += r.StallMSPerMin
		}
		if n > 0 {
			pt.P95 = math.Round(p95/float64(n)*10) / 10
			pt.StallRate = math.Round(rate/float64(n)*1e5) / 1e5
			pt.StallMSPerMin = math.Round(perMin/float64(n)*10) / 10
		}
	}
	for _, pt := range fr.Points {
		pt.Pareto = !slices.ContainsFunc(fr.Points, func(o *point) bool {
			return o != pt && o.P95 <= pt.P95 && o.StallRate <= pt.StallRate && o.StallMSPerMin <= pt.StallMSPerMin &&
				(o.P95 < pt.P95 || o.StallRate < pt.StallRate || o.StallMSPerMin < pt.StallMSPerMin)
		})
	}
	a := fr.Points[0]
	for _, pt := range fr.Points[1:] {
		for i, r := range pt.Seeds {
			if ar := a.Seeds[i]; r != nil && ar != nil && better(r, ar, frontierTolerance) {
				fr.Dominated = append(fr.Dominated, fmt.Sprintf("seed %d: %s p95 %.1f ms, stall rate %.5f, %.1f stall ms/min against adaptive's %.1f ms, %.5f, %.1f",
					fr.Seeds[i], pt.Policy, r.Latency.P95, r.StallRate, r.StallMSPerMin, ar.Latency.P95, ar.StallRate, ar.StallMSPerMin))
			}
		}
		if pt.P95 < a.P95 && pt.StallMSPerMin < a.StallMSPerMin {
			fr.BeatsOnBoth = append(fr.BeatsOnBoth, pt.Policy)
		}
	}
}

// printFrontiers prints each frontier as a markdown table.
func printFrontiers(w io.Writer, fronts []*frontier) {
	fmt.Fprintln(w, "### The frontier: fixed delays against adaptive")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Means over the seeds of each profile and member count. ◆ marks the Pareto frontier (no other point lower on p95, stall rate and stall time at once). Adaptive is dominated on a seed when a fixed delay has a p95 lower by more than %.0f ms at a stall rate and stall time no higher.\n\n", frontierTolerance)
	for _, fr := range fronts {
		fmt.Fprintf(w, "#### %s, %d members, %d frames, seeds %v\n\n", fr.Profile, fr.Peers, fr.Frames, fr.Seeds)
		fmt.Fprintln(w, "| policy | p95 (ms) | stall rate | stall ms/min | frontier |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		for _, pt := range fr.Points {
			mark := ""
			if pt.Pareto {
				mark = "◆"
			}
			name := pt.Policy
			if name == "adaptive" {
				name = "**adaptive**"
			}
			fmt.Fprintf(w, "| %s | %.1f | %.5f | %.1f | %s |\n", name, pt.P95, pt.StallRate, pt.StallMSPerMin, mark)
		}
		fmt.Fprintln(w)
		switch {
		case len(fr.Dominated) == 0:
			fmt.Fprintln(w, "Adaptive is dominated on no seed.")
		default:
			fmt.Fprintf(w, "Adaptive is dominated %d times:\n", len(fr.Dominated))
			for _, d := range fr.Dominated {
				fmt.Fprintln(w, "- "+d)
			}
		}
		if len(fr.BeatsOnBoth) > 0 {
			fmt.Fprintf(w, "Lower mean p95 and stall time than adaptive: %s.\n", strings.Join(fr.BeatsOnBoth, ", "))
		}
		for _, e := range fr.Errors {
			fmt.Fprintln(w, "- error: "+e)
		}
		fmt.Fprintln(w)
	}
}

// writeFrontierPlots draws one plot per frontier: p95 against stall time,
// the fixed delays as a line of labelled points, adaptive as one mark.
func writeFrontierPlots(dir string, fronts []*frontier) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, fr := range fronts {
		var fixed [][2]float64
		a := fr.Points[0]
		xmin, xmax, ymax := a.P95, a.P95, a.StallMSPerMin
		for _, pt := range fr.Points[1:] {
			fixed = append(fixed, [2]float64{pt.P95, pt.StallMSPerMin})
			xmin, xmax, ymax = min(xmin, pt.P95), max(xmax, pt.P95), max(ymax, pt.StallMSPerMin)
		}
		panel := chart.Panel{
			Title:  fmt.Sprintf("%s, %d members: p95 against stall time (means over seeds %v)", fr.Profile, fr.Peers, fr.Seeds),
			XLabel: "latency p95 (ms)",
			YLabel: "stall time (ms per member-minute; 0 drawn at 0.1)",
			LogY:   true,
			// Fixed ranges: a log axis needs one, also when nothing stalled.
			Fixed: true,
			XMin:  math.Floor(xmin*0.9/10) * 10,
			XMax:  math.Ceil(xmax*1.05/10) * 10,
			YMin:  0.1,
			YMax:  roundUp(max(ymax, 1) * 2),
			Lines: []chart.Line{
				{Label: fmt.Sprintf("%s to %s, left to right", fr.Points[1].Policy, fr.Points[len(fr.Points)-1].Policy), Color: "#555555", Width: 1.2, Dashed: true, Points: fixed, Circles: true},
				{Label: fmt.Sprintf("adaptive: p95 %.1f ms, %.1f ms/min", a.P95, a.StallMSPerMin), Color: "#1b9e77", Width: 3, Points: [][2]float64{{a.P95, a.StallMSPerMin}}, Circles: true},
			},
		}
		b, err := chart.SVG(560, 420, panel)
		if err != nil {
			return paths, fmt.Errorf("%s: %w", fr.Profile, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("frontier-%s-%d.svg", fr.Profile, fr.Peers))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
