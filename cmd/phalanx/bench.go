package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/netsim"
)

// The matrix phalanx bench runs.
var (
	benchPolicies   = []string{"adaptive", "aoe", "bucket-rtt", "fixed:4"}
	benchTransports = []string{locksteptest.TransportDatagram, locksteptest.TransportStream}
)

const (
	benchModemPeers  = 8    // the modem goal is about 8 members
	benchModemBudget = 3600 // bytes/s: 28.8 kbit/s
	benchFullFrames  = 12000
	benchQuickFrames = 1200
	netlibMaxFrames  = 12000
)

// benchFlags are phalanx bench's flags.
type benchFlags struct {
	quick    bool
	json     bool
	out      string
	peers    int
	frames   int
	seed     uint64
	profiles string
	frontier bool   // sweep fixed delays against adaptive instead of the matrix
	seeds    int    // --frontier: seeds from seed on
	members  string // --frontier: member counts
}

func (f *benchFlags) check() error {
	switch {
	case f.peers < 2 || f.peers > 64:
		return fmt.Errorf("--peers %d: want 2..64", f.peers)
	case f.frames < 0:
		return fmt.Errorf("--frames %d: want at least 1 (0: %d, or %d with --quick)", f.frames, benchFullFrames, benchQuickFrames)
	}
	if f.seeds < 1 {
		return fmt.Errorf("--seeds %d: want at least 1", f.seeds)
	}
	if _, err := parseMembers(f.members); err != nil {
		return err
	}
	_, err := f.profileList()
	return err
}

func (f *benchFlags) frameCount() int {
	switch {
	case f.frames > 0:
		return f.frames
	case f.quick:
		return benchQuickFrames
	}
	return benchFullFrames
}

func (f *benchFlags) profileList() ([]string, error) {
	if f.profiles == "" {
		return netsim.Names(), nil
	}
	var names []string
	for name := range strings.SplitSeq(f.profiles, ",") {
		if _, err := netsim.Named(name); err != nil {
			return nil, fmt.Errorf("--profiles: %w", err)
		}
		names = append(names, name)
	}
	return names, nil
}

// benchRun is one run of the matrix: the phalanx sim report plus what the
// bench adds.
type benchRun struct {
	Policy    string `json:"policy"`
	Transport string `json:"transport"`
	*report
	OverFloorMS   float64 `json:"over_floor_ms"` // latency p95 − one-way p99
	StalledFrames int64   `json:"stalled_frames"`
	Retransmits   int64   `json:"retransmits"` // stream transport: segments sent again
	Error         string  `json:"error,omitempty"`

	latencies []time.Duration // sorted, for the plots
}

type pctls struct {
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	P9999 float64 `json:"p99_99"`
	Max   float64 `json:"max"`
}

func percentiles(ds []time.Duration) pctls {
	return pctls{
		P50:   ms(locksteptest.Percentile(ds, 50)),
		P99:   ms(locksteptest.Percentile(ds, 99)),
		P999:  ms(locksteptest.Percentile(ds, 99.9)),
		P9999: ms(locksteptest.Percentile(ds, 99.99)),
		Max:   ms(locksteptest.Percentile(ds, 100)),
	}
}

// benchResult is everything one phalanx bench measured.
type benchResult struct {
	Runs   []*benchRun  `json:"runs"`
	Netlib []*netlibRun `json:"netlib"`
	Goals  []goal       `json:"goals"`
	Plots  []string     `json:"plots,omitempty"`
	// Frontier is the sweep of --frontier: per profile and member count,
	// adaptive's point and the fixed delays'.
	Frontier []*frontier `json:"frontier,omitempty"`
}

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("phalanx bench", "phalanx bench [flags]", stderr,
		"Runs the scheduling policies (adaptive, aoe, bucket-rtt, fixed:4) over both transports",
		"(datagram, stream) on every network profile in virtual time with the null simulation,",
		"plus the netlib article's scenario (RTT 200 ms, 2% loss); prints a markdown report and",
		"writes plots. Progress goes to stderr. Exits 1 if a run over datagrams failed or",
		"diverged; failures of the stream baseline are reported, not fatal.",
	)
	var f benchFlags
	fs.BoolVar(&f.quick, "quick", false, fmt.Sprintf("short runs (%d frames a run unless --frames): the whole matrix in well under a minute", benchQuickFrames))
	fs.BoolVar(&f.json, "json", false, `print {"runs": [...], ...} as one JSON object on the last line`)
	fs.StringVar(&f.out, "out", "docs/images", "write the plots (SVG) to `DIR`; empty: no plots")
	fs.IntVar(&f.peers, "peers", 4, fmt.Sprintf("members per run (the modem profile always runs %d)", benchModemPeers))
	fs.IntVar(&f.frames, "frames", 0, fmt.Sprintf("frames per run (0: %d, or %d with --quick)", benchFullFrames, benchQuickFrames))
	fs.Uint64Var(&f.seed, "seed", 1, "seed of every run: the same seeds for every combination")
	fs.StringVar(&f.profiles, "profiles", "", "comma-separated profiles to run (default: all built-in profiles)")
	fs.BoolVar(&f.frontier, "frontier", false, "instead of the matrix, sweep fixed:N against adaptive on each profile, member count (--members) and seed (--seeds), and print the Pareto frontier (4,000 frames a run, phased 7,200, unless --frames)")
	fs.IntVar(&f.seeds, "seeds", 5, "--frontier: how many seeds, from --seed on")
	fs.StringVar(&f.members, "members", "4,8", "--frontier: comma-separated member counts")
	if code := parseFlags(fs, args, func() error { return f.check() }); code >= 0 {
		return code
	}
	start := time.Now()
	var res *benchResult
	if f.frontier {
		res = &benchResult{Runs: []*benchRun{}, Netlib: []*netlibRun{}, Goals: []goal{}}
		var jobs []benchJob
		res.Frontier, jobs = f.frontierJobs(nil)
		runPool(stderr, jobs)
		for _, fr := range res.Frontier {
			fr.judge()
		}
		if f.out != "" {
			plots, err := writeFrontierPlots(f.out, res.Frontier)
			if err != nil {
				fmt.Fprintln(stderr, "phalanx bench: plots:", err)
				return 1
			}
			res.Plots = plots
		}
		printFrontiers(stdout, res.Frontier)
		fmt.Fprintf(stdout, "%d runs in %.1f s of wall time on %d CPUs\n", len(jobs), time.Since(start).Seconds(), runtime.NumCPU())
		if f.json && !printBenchJSON(stdout, stderr, res) {
			return 1
		}
		for _, fr := range res.Frontier {
			if len(fr.Errors) > 0 {
				return 1
			}
		}
		return 0
	}
	res = f.run(stderr)
	res.Goals = judgeGoals(res.Runs)
	if f.out != "" {
		plots, err := writePlots(f.out, res)
		if err != nil {
			fmt.Fprintln(stderr, "phalanx bench: plots:", err)
			return 1
		}
		res.Plots = plots
	}
	f.printMarkdown(stdout, res, time.Since(start))
	if f.json && !printBenchJSON(stdout, stderr, res) {
		return 1
	}
	// The stream is the baseline: its failures are findings. Phalanx's own
	// transport must never fail.
	for _, r := range res.Runs {
		if r.Transport == locksteptest.TransportDatagram && (r.report == nil || r.Error != "" || !r.Identical) {
			return 1
		}
	}
	for _, n := range res.Netlib {
		if n.Transport == locksteptest.TransportDatagram && (n.Error != "" || !n.Identical) {
			return 1
		}
	}
	return 0
}

// benchJob is one virtual run of the bench.
type benchJob struct {
	label  string
	run    func() // fills its result
	result func() string
}

// run performs the matrix and the netlib scenario on a pool of
// runtime.NumCPU() workers, reporting progress on stderr.
func (f *benchFlags) run(stderr io.Writer) *benchResult {
	profiles, _ := f.profileList() // checked
	res := &benchResult{}
	var jobs []benchJob
	for _, name := range profiles {
		for _, tr := range benchTransports {
			for _, pol := range benchPolicies {
				r := &benchRun{Policy: pol, Transport: tr}
				res.Runs = append(res.Runs, r)
				rf := f.runFlags(name, pol, tr)
				jobs = append(jobs, benchJob{
					label: fmt.Sprintf("%-16s %-8s %-10s", name, tr, pol),
					run:   func() { r.measure(rf) },
					result: func() string {
						if r.report == nil {
							return "error: " + r.Error
						}
						return fmt.Sprintf("p95 %7.1f ms, stall rate %.4f, %6.0f B/s up", r.Latency.P95, r.StallRate, r.Bytes.Up)
					},
				})
			}
		}
	}
	netlibFrames := min(2*f.frameCount(), netlibMaxFrames)
	for _, tr := range benchTransports {
		n := &netlibRun{Transport: tr, Policy: "adaptive"}
		res.Netlib = append(res.Netlib, n)
		jobs = append(jobs, benchJob{
			label: fmt.Sprintf("%-16s %-8s %-10s", "netlib-rtt200", tr, "adaptive"),
			run:   func() { n.measure(f.peers, netlibFrames, f.seed) },
			result: func() string {
				return fmt.Sprintf("%d deliveries, %.2f%% within 100 ms, p99.9 %.0f ms", n.Samples, 100*n.Within100, n.DelayMS.P999)
			},
		})
	}
	runPool(stderr, jobs)
	return res
}

// runPool runs jobs on runtime.NumCPU() workers, reporting progress on
// stderr.
func runPool(stderr io.Writer, jobs []benchJob) {
	progress := newProgress(stderr, len(jobs))
	work := make(chan int)
	done := make(chan int)
	var wg sync.WaitGroup
	for range max(1, runtime.NumCPU()) {
		wg.Go(func() {
			for i := range work {
				t := time.Now()
				jobs[i].run()
				progress.wall[i] = time.Since(t)
				done <- i
			}
		})
	}
	go func() {
		for i := range jobs {
			work <- i
		}
		close(work)
		wg.Wait()
		close(done)
	}()
	for i := range done {
		progress.finished(jobs[i].label, jobs[i].result(), progress.wall[i])
	}
	progress.end()
}

func (f *benchFlags) runFlags(profile, policy, transport string) *runFlags {
	peers := f.peers
	if profile == "modem" {
		peers = benchModemPeers
	}
	return &runFlags{
		peers: peers, frames: f.frameCount(), seed: f.seed, profile: profile, sim: "null",
		frameMS: 50, budget: -1, policy: policy, transport: transport,
	}
}

// runHarness runs one combination in the harness, keeping its samples
// when keep, and fills the report; it returns the harness's result, or nil
// when there is none (r.Error says why).
func (r *benchRun) runHarness(f *runFlags, keep bool) *locksteptest.Result {
	profile, _ := netsim.Named(f.profile) // the names come from netsim
	g, err := newGame(f.sim, f.peers, f.seed)
	if err != nil {
		r.Error = err.Error()
		return nil
	}
	start := time.Now()
	hc := f.harnessConfig(profile, g)
	hc.KeepSamples = keep
	res, err := locksteptest.Run(hc)
	if err != nil {
		r.Error = err.Error()
		if res == nil {
			return nil
		}
	}
	r.report = newReport(f, profile.Name, res, time.Since(start))
	return res
}

// measureQuiet runs one combination without keeping its samples.
func (r *benchRun) measureQuiet(f *runFlags) {
	if r.runHarness(f, false) != nil && !r.Identical && r.Error == "" {
		r.Error = "members diverged"
	}
}

// measure runs one combination of the matrix, its samples kept for the
// plots.
func (r *benchRun) measure(f *runFlags) {
	res := r.runHarness(f, true)
	if res == nil {
		return
	}
	r.OverFloorMS = math.Round((r.Latency.P95-r.OneWay.P99)*100) / 100
	for _, m := range res.Members {
		if !m.Killed {
			r.StalledFrames += m.Stats.Stalls
		}
	}
	for _, s := range res.Reliable {
		r.Retransmits += s.Retransmits
	}
	r.latencies = slices.Clone(res.Latencies)
	slices.Sort(r.latencies)
}

// progress reports finished runs on stderr: a line per run, or one updating
// line on a terminal.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	n     int
	start time.Time
	wall  []time.Duration
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now(), wall: make([]time.Duration, total)}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) finished(label, result string, wall time.Duration) {
	p.n++
	line := fmt.Sprintf("[%2d/%d] %s %s (%.1f s)", p.n, p.total, label, result, wall.Seconds())
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
		return
	}
	fmt.Fprintln(p.w, line)
}

func (p *progress) end() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
	fmt.Fprintf(p.w, "%d runs in %.1f s on %d workers\n", p.total, time.Since(p.start).Seconds(), runtime.NumCPU())
}

// printBenchJSON prints res as one JSON line; it reports false, saying why
// on stderr, when res cannot be encoded.
func printBenchJSON(stdout, stderr io.Writer, res *benchResult) bool {
	b, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintln(stderr, "phalanx bench:", err)
		return false
	}
	fmt.Fprintln(stdout, string(b))
	return true
}
