package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/peer/netsim"
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
}

func (f *benchFlags) check() error {
	switch {
	case f.peers < 2 || f.peers > 64:
		return fmt.Errorf("--peers %d: want 2..64", f.peers)
	case f.frames < 0:
		return fmt.Errorf("--frames %d: want at least 1 (0: %d, or %d with --quick)", f.frames, benchFullFrames, benchQuickFrames)
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

// netlibRun is one transport's delivery delays in the netlib seed's
// scenario.
type netlibRun struct {
	Transport string  `json:"transport"`
	Policy    string  `json:"policy"`
	Samples   int     `json:"samples"`     // commands × receivers
	Within100 float64 `json:"within_100"`  // share delivered within 100 ms
	Within200 float64 `json:"within_200"`  // … within 200 ms
	Within300 float64 `json:"within_300"`  // … within 300 ms
	Within340 float64 `json:"within_340"`  // … within 340 ms
	DelayMS   pctls   `json:"delay_ms"`    // first send → first arrival
	Latency   pctls   `json:"latency_ms"`  // submit → execution on the last member
	Undeliver int     `json:"undelivered"` // sent more than 5 s before the end and never arrived
	Identical bool    `json:"identical"`
	StallRate float64 `json:"stall_rate"`
	Error     string  `json:"error,omitempty"`

	delays []time.Duration // sorted
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

// goal is one of issue 8's goals, judged on one run of the bench.
type goal struct {
	Goal   string `json:"goal"`
	Met    bool   `json:"met"`
	Detail string `json:"detail"`
}

// benchResult is everything one phalanx bench measured.
type benchResult struct {
	Runs   []*benchRun  `json:"runs"`
	Netlib []*netlibRun `json:"netlib"`
	Goals  []goal       `json:"goals"`
	Plots  []string     `json:"plots,omitempty"`
}

func runBench(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("phalanx bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f benchFlags
	fs.BoolVar(&f.quick, "quick", false, fmt.Sprintf("short runs (%d frames a run unless --frames): the whole matrix in well under a minute", benchQuickFrames))
	fs.BoolVar(&f.json, "json", false, `print {"runs": [...], ...} as one JSON object on the last line`)
	fs.StringVar(&f.out, "out", "docs/images", "write the plots (SVG) to `DIR`; empty: no plots")
	fs.IntVar(&f.peers, "peers", 4, fmt.Sprintf("members per run (the modem profile always runs %d)", benchModemPeers))
	fs.IntVar(&f.frames, "frames", 0, fmt.Sprintf("frames per run (0: %d, or %d with --quick)", benchFullFrames, benchQuickFrames))
	fs.Uint64Var(&f.seed, "seed", 1, "seed of every run: the same seeds for every combination")
	fs.StringVar(&f.profiles, "profiles", "", "comma-separated profiles to run (default: all built-in profiles)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: phalanx bench [flags]")
		fmt.Fprintln(stderr, "\nRuns the scheduling policies (adaptive, aoe, bucket-rtt, fixed:4) over both transports")
		fmt.Fprintln(stderr, "(datagram, stream) on every network profile in virtual time with the null simulation,")
		fmt.Fprintln(stderr, "plus the netlib seed's scenario (RTT 200 ms, 2% loss); prints a markdown report and")
		fmt.Fprintln(stderr, "writes plots. Progress goes to stderr. Exits 1 if a run over datagrams failed or")
		fmt.Fprintln(stderr, "diverged; failures of the stream baseline are reported, not fatal.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args, func() error { return f.check() }); code >= 0 {
		return code
	}
	start := time.Now()
	res := f.run(stderr)
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
	if f.json {
		b, err := json.Marshal(res)
		if err != nil {
			fmt.Fprintln(stderr, "phalanx bench:", err)
			return 1
		}
		fmt.Fprintln(stdout, string(b))
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
	return res
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

// measure runs one combination of the matrix.
func (r *benchRun) measure(f *runFlags) {
	profile, _ := netsim.Named(f.profile) // the names come from netsim
	g, err := newGame(f.sim, f.peers, f.seed)
	if err != nil {
		r.Error = err.Error()
		return
	}
	start := time.Now()
	hc := f.harnessConfig(profile, g)
	hc.KeepSamples = true // for the plots
	res, err := locksteptest.Run(hc)
	if err != nil {
		r.Error = err.Error()
		if res == nil {
			return
		}
	}
	r.report = newReport(f, profile.Name, res, time.Since(start))
	r.OverFloorMS = math.Round((r.Latency.P95-r.OneWay.P99)*100) / 100
	for _, m := range res.Members {
		if !m.Killed {
			r.StalledFrames += m.Stats.Stalls
		}
	}
	for _, s := range res.Streams {
		r.Retransmits += s.Retransmits
	}
	r.latencies = slices.Clone(res.Latencies)
	slices.Sort(r.latencies)
}

// netlibProfile is the scenario of the netlib seed's table: 100 ms each
// way (RTT 200 ms), no jitter, 2% random loss, no bandwidth limit.
func netlibProfile() netsim.Profile {
	return netsim.Profile{Name: "netlib-rtt200", Phases: []netsim.Phase{{
		Duration:   time.Minute,
		Conditions: netsim.Conditions{Latency: 100 * time.Millisecond, Loss: 20_000},
	}}}
}

// measure runs the netlib scenario over one transport: every member issues
// a 12-byte command every frame, and every command's delivery delay to each
// other member is measured from the first time a datagram carrying it was
// sent (to that member) to the first time one reached that member's core —
// over the stream transport, when the stream handed it on in order. That is
// the seed's "time it would take for messages to arrive at their
// destination", redundant copies and retransmissions included.
func (n *netlibRun) measure(peers, frames int, seed uint64) {
	t := newDeliveryTracker(peers)
	f := &runFlags{peers: peers, frames: frames, seed: seed, sim: "null", frameMS: 50, budget: -1, policy: n.Policy, transport: n.Transport}
	profile := netlibProfile()
	res, err := locksteptest.Run(locksteptest.Config{
		Members: peers,
		Frames:  frames,
		Seed:    seed,
		Profile: profile,
		Core:    f.coreConfig(profile),
		NewSim:  func(bucket.Slot) lockstep.Simulation { return &locksteptest.NullSim{} },
		Commands: func(slot bucket.Slot, frame bucket.Frame) [][]byte {
			return [][]byte{{byte(slot), byte(frame), byte(frame >> 8), byte(frame >> 16), 1, 2, 3, 4, 5, 6, 7, 8}}
		},
		Tamper: func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
			t.observe(sideSent, now, from, to, data)
			return data
		},
		OnReceive: func(now time.Duration, from, to bucket.Slot, data []byte) {
			t.observe(sideArrived, now, from, to, data)
		},
		Transport:   n.Transport,
		KeepSamples: true, // the latencies' far tail
	})
	if err != nil {
		n.Error = err.Error()
		if res == nil {
			return
		}
	}
	n.Identical = res.Identical
	var stalls int64
	for _, m := range res.Members {
		stalls += m.Stats.Stalls
	}
	n.StallRate = math.Round(float64(stalls)/float64(peers*frames)*1e5) / 1e5
	lat := res.Latencies
	n.Latency = percentiles(lat)
	for k, sent := range t.first[sideSent] {
		if at, ok := t.first[sideArrived][k]; ok {
			n.delays = append(n.delays, at-sent)
		} else if sent < res.Duration-5*time.Second {
			n.Undeliver++
		}
	}
	slices.Sort(n.delays)
	n.Samples = len(n.delays)
	n.DelayMS = percentiles(n.delays)
	within := func(limit time.Duration) float64 {
		i, _ := slices.BinarySearch(n.delays, limit+1)
		return float64(i) / float64(max(1, len(n.delays)))
	}
	n.Within100 = within(100 * time.Millisecond)
	n.Within200 = within(200 * time.Millisecond)
	n.Within300 = within(300 * time.Millisecond)
	n.Within340 = within(340 * time.Millisecond)
}

// deliveryTracker notes when each command first left its sender towards
// each receiver and when it first reached that receiver's core, by parsing
// the datagrams (lockstep/wire).
type deliveryTracker struct {
	pkt   wire.Packet
	ref   [2][][]uint32                    // [side][from][to]: newest full sequence number seen, for unwrapping
	first [2]map[deliveryKey]time.Duration // [side]: first time seen
}

// Sides of a deliveryTracker.
const (
	sideSent    = 0
	sideArrived = 1
)

type deliveryKey struct {
	from, to bucket.Slot
	seq      uint32
}

func newDeliveryTracker(members int) *deliveryTracker {
	t := &deliveryTracker{}
	for side := range 2 {
		t.first[side] = map[deliveryKey]time.Duration{}
		t.ref[side] = make([][]uint32, members)
		for i := range members {
			t.ref[side][i] = make([]uint32, members)
		}
	}
	return t
}

// observe notes the commands of a datagram from from to to seen at now on
// one side (sent or arrived).
func (t *deliveryTracker) observe(side int, now time.Duration, from, to bucket.Slot, data []byte) {
	if wire.Parse(data, &t.pkt) != nil || len(t.pkt.Commands) == 0 {
		return
	}
	ref := &t.ref[side][from][to]
	next := wire.Unwrap16(*ref, t.pkt.Next)
	*ref = max(*ref, next)
	first := next - uint32(len(t.pkt.Commands))
	for i := range t.pkt.Commands {
		k := deliveryKey{from, to, first + uint32(i)}
		if _, ok := t.first[side][k]; !ok {
			t.first[side][k] = now
		}
	}
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

// judgeGoals checks issue 8's goals against the runs.
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

func (f *benchFlags) printMarkdown(w io.Writer, res *benchResult, wall time.Duration) {
	frames := f.frameCount()
	fmt.Fprintf(w, "## phalanx bench\n\n")
	fmt.Fprintf(w, "%d members per run (modem: %d), %d frames of 50 ms (%.0f s of play), seed %d, the null simulation with the rts generator's command rate; %d runs in %.1f s of wall time on %d CPUs.\n\n",
		f.peers, benchModemPeers, frames, float64(frames)/20, f.seed, len(res.Runs)+len(res.Netlib), wall.Seconds(), runtime.NumCPU())
	fmt.Fprintln(w, "Latency: a command's submission to its execution on the last member. Floor: the one-way p99, the network's own delay of every datagram or segment. Over floor: latency p95 − one-way p99. Stall rate: share of frames a member waited for a seal. Up: bytes per member per second on the wire, 56 bytes of headers per datagram or segment, retransmissions included.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| profile | transport | policy | peers | identical | latency p50 / p95 / p99 (ms) | one-way p99 (ms) | p95 over floor (ms) | stall rate | stalled frames | up B/s | up kbit/s |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range res.Runs {
		if r.report == nil {
			fmt.Fprintf(w, "| %s | %s | %s | | error: %s | | | | | | | |\n", "?", r.Transport, r.Policy, r.Error)
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
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %.0f / %.0f / %.0f | %.1f | %.0f | %.5f | %d | %.0f | %.1f |\n",
			r.Profile, r.Transport, r.Policy, r.Peers, ident, r.Latency.P50, r.Latency.P95, r.Latency.P99,
			r.OneWay.P99, r.OverFloorMS, r.StallRate, r.StalledFrames, r.Bytes.Up, r.Bytes.Up*8/1000)
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
		fmt.Fprintln(w, "### The netlib seed's scenario: RTT 200 ms, 2% loss")
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

// Plots: SVG written by hand.

var policyColors = map[string]string{
	"adaptive":   "#1b9e77",
	"aoe":        "#d95f02",
	"bucket-rtt": "#7570b3",
	"fixed:4":    "#e7298a",
}

// svgPlot accumulates one SVG image.
type svgPlot struct {
	b    strings.Builder
	w, h float64
}

var svgEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func newSVG(w, h float64, title string) *svgPlot {
	s := &svgPlot{w: w, h: h}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif">`+"\n", w, h, w, h)
	fmt.Fprintf(&s.b, `<rect width="%.0f" height="%.0f" fill="white"/>`+"\n", w, h)
	s.text(w/2, 24, "middle", 15, "#222", title, `font-weight="bold"`)
	return s
}

func (s *svgPlot) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	d := ""
	if dash != "" {
		d = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
	}
	fmt.Fprintf(&s.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%.1f"%s/>`+"\n", x1, y1, x2, y2, stroke, width, d)
}

func (s *svgPlot) text(x, y float64, anchor string, size int, fill, str, extra string) {
	fmt.Fprintf(&s.b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d" fill="%s" %s>%s</text>`+"\n", x, y, anchor, size, fill, extra, svgEscaper.Replace(str))
}

func (s *svgPlot) rect(x, y, w, h float64, fill, stroke string, opacity float64) {
	fmt.Fprintf(&s.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="%.2f" stroke="%s" stroke-width="0.8"/>`+"\n", x, y, max(w, 0), max(h, 0), fill, opacity, stroke)
}

func (s *svgPlot) circle(x, y, r float64, fill, stroke string) {
	fmt.Fprintf(&s.b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="%s" stroke-width="1.2"/>`+"\n", x, y, r, fill, stroke)
}

func (s *svgPlot) polyline(pts [][2]float64, stroke string, width float64, dash string) {
	if len(pts) < 2 {
		return
	}
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.1f,%.1f", p[0], p[1])
	}
	d := ""
	if dash != "" {
		d = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
	}
	fmt.Fprintf(&s.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round"%s/>`+"\n", b.String(), stroke, width, d)
}

func (s *svgPlot) bytes() []byte { return []byte(s.b.String() + "</svg>\n") }

// frame is a plot area inside an SVG: data coordinates to pixels.
type frame struct {
	x0, y0, x1, y1 float64 // pixel box: left, top, right, bottom
	xmax           float64 // x axis from 0 to xmax
	ymin, ymax     float64 // y axis (log10 values when log is set)
	log            bool
}

func (fr frame) px(x float64) float64 { return fr.x0 + (fr.x1-fr.x0)*min(max(x/fr.xmax, 0), 1) }

func (fr frame) py(y float64) float64 {
	if fr.log {
		y = math.Log10(max(y, math.Pow(10, fr.ymin)))
	}
	t := (y - fr.ymin) / (fr.ymax - fr.ymin)
	return fr.y1 - (fr.y1-fr.y0)*min(max(t, 0), 1)
}

// niceStep returns a step of 1, 2 or 5 times a power of ten that cuts
// span into at most n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func fmtTick(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// axes draws the box, the grid and the tick labels of a linear x axis and a
// linear or log y axis.
func (s *svgPlot) axes(fr frame, xlabel, ylabel string, yfmt func(float64) string) {
	step := niceStep(fr.xmax, 8)
	for x := 0.0; x <= fr.xmax+step/1e6; x += step {
		s.line(fr.px(x), fr.y0, fr.px(x), fr.y1, "#e6e6e6", 1, "")
		s.text(fr.px(x), fr.y1+16, "middle", 11, "#444", fmtTick(x), "")
	}
	s.axesY(fr, ylabel, yfmt)
	s.text((fr.x0+fr.x1)/2, fr.y1+38, "middle", 12, "#222", xlabel, "")
}

type legendEntry struct {
	label, color, dash string
	bar                bool
	opacity            float64
	marker             bool
}

// legend draws entries one under another, from (x, y) at the top left.
func (s *svgPlot) legend(x, y float64, entries []legendEntry) {
	for i, e := range entries {
		s.legendItem(x, y+14+float64(i)*18, e)
	}
}

// legendRow draws entries side by side, from (x, y) at the top left.
func (s *svgPlot) legendRow(x, y float64, entries []legendEntry) {
	for _, e := range entries {
		s.legendItem(x, y+14, e)
		x += float64(len([]rune(e.label)))*6.2 + 56
	}
}

func (s *svgPlot) legendItem(x, cy float64, e legendEntry) {
	switch {
	case e.bar:
		s.rect(x, cy-6, 22, 10, e.color, e.color, e.opacity)
	case e.marker:
		s.circle(x+11, cy-1, 4, "white", e.color)
	default:
		s.line(x, cy-1, x+22, cy-1, e.color, 2.2, e.dash)
	}
	s.text(x+30, cy+3, "start", 11, "#222", e.label, "")
}

// legendHeight is the height legend takes for n entries.
func legendHeight(n int) float64 { return float64(n)*18 + 8 }

// writePlots writes the bench's plots into dir and returns their paths.
func writePlots(dir string, res *benchResult) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	write := func(name string, s *svgPlot) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, s.bytes(), 0o644); err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	}
	var profiles []string
	for _, r := range res.Runs {
		if r.report != nil && !slices.Contains(profiles, r.Profile) {
			profiles = append(profiles, r.Profile)
		}
	}
	for _, p := range profiles {
		if s := plotCDF(res.Runs, p); s != nil {
			if err := write("bench-cdf-"+p+".svg", s); err != nil {
				return paths, err
			}
		}
	}
	if len(profiles) > 0 {
		if err := write("bench-stalls.svg", plotBars(res.Runs, profiles, false)); err != nil {
			return paths, err
		}
		if err := write("bench-bandwidth.svg", plotBars(res.Runs, profiles, true)); err != nil {
			return paths, err
		}
	}
	if len(res.Netlib) > 0 {
		if err := write("bench-netlib.svg", plotNetlib(res.Netlib)); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// shareAtMost returns the share of sorted ds at or below x.
func shareAtMost(ds []time.Duration, x time.Duration) float64 {
	i, found := slices.BinarySearch(ds, x+1)
	_ = found
	return float64(i) / float64(max(1, len(ds)))
}

// plotCDF draws the latency CDF of every policy over datagrams on one
// profile, with adaptive over the stream dashed for comparison.
func plotCDF(runs []*benchRun, profile string) *svgPlot {
	type curve struct {
		r     *benchRun
		label string
		color string
		dash  string
	}
	var curves []curve
	xmax := 0.0
	for _, pol := range benchPolicies {
		if r := find(runs, profile, locksteptest.TransportDatagram, pol); r != nil && len(r.latencies) > 0 {
			curves = append(curves, curve{r, pol + " (datagram)", policyColors[pol], ""})
			xmax = max(xmax, float64(locksteptest.Percentile(r.latencies, 99.5))/1e6)
		}
	}
	if len(curves) == 0 {
		return nil
	}
	if r := find(runs, profile, locksteptest.TransportStream, "adaptive"); r != nil && len(r.latencies) > 0 {
		curves = append(curves, curve{r, "adaptive (stream)", "#555", "6 4"})
	}
	floor := curves[0].r.OneWay.P99
	xmax = max(xmax, floor) * 1.1
	xmax = math.Ceil(xmax/niceStep(xmax, 8)) * niceStep(xmax, 8)
	r0 := curves[0].r
	s := newSVG(760, 462+legendHeight(len(curves)), fmt.Sprintf("Command latency, profile %s (%d members, %d frames)", profile, r0.Peers, r0.Frames))
	fr := frame{x0: 70, y0: 54, x1: 740, y1: 410, xmax: xmax, ymin: 0, ymax: 1}
	s.axes(fr, "latency: submission to execution on the last member (ms)", "share of commands", func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) })
	s.line(fr.px(floor), fr.y0, fr.px(floor), fr.y1, "#c00", 1.2, "2 3")
	s.text(fr.px(floor), fr.y0-5, "middle", 10, "#c00", fmt.Sprintf("one-way p99 %.0f ms: the floor", floor), "")
	var legend []legendEntry
	for _, c := range curves {
		var pts [][2]float64
		const n = 600
		for i := 0; i <= n; i++ {
			x := xmax * float64(i) / n
			pts = append(pts, [2]float64{fr.px(x), fr.py(shareAtMost(c.r.latencies, time.Duration(x*1e6)))})
		}
		s.polyline(pts, c.color, 2, c.dash)
		label := fmt.Sprintf("%s: p95 %.0f ms, stall rate %.4f", c.label, c.r.Latency.P95, c.r.StallRate)
		if c.r.Latency.P95 > xmax {
			label += " (off the chart)"
		}
		legend = append(legend, legendEntry{label: label, color: c.color, dash: c.dash})
	}
	s.legend(fr.x0, fr.y1+48, legend)
	return s
}

// plotBars draws, per profile, one bar per policy and transport: the stall
// rate (log scale) or the upload in kbit/s with the modem's budget.
func plotBars(runs []*benchRun, profiles []string, bandwidth bool) *svgPlot {
	title, ylabel := "Stall rate: share of frames a member waited for a seal", "stall rate (log scale)"
	if bandwidth {
		title, ylabel = "Upload per member on the wire (headers and retransmissions included)", "kbit/s per member"
	}
	value := func(r *benchRun) float64 {
		if bandwidth {
			return r.Bytes.Up * 8 / 1000
		}
		return r.StallRate
	}
	s := newSVG(900, 470, title)
	fr := frame{x0: 70, y0: 44, x1: 880, y1: 380, xmax: 1}
	if bandwidth {
		top := benchModemBudget * 8.0 / 1000
		for _, r := range runs {
			if r.report != nil {
				top = max(top, value(r))
			}
		}
		step := niceStep(top*1.1, 5)
		fr.ymax = math.Ceil(top*1.1/step) * step
		s.axesY(fr, ylabel, func(v float64) string { return fmtTick(v) })
	} else {
		fr.log, fr.ymin, fr.ymax = true, -5, 0
		s.axesY(fr, ylabel, func(v float64) string { return fmtTick(v) })
	}
	groupW := (fr.x1 - fr.x0) / float64(len(profiles))
	barW := (groupW - 30) / float64(len(benchPolicies)*len(benchTransports)+1)
	for gi, p := range profiles {
		gx := fr.x0 + float64(gi)*groupW + 15
		for ti, tr := range benchTransports {
			for pi, pol := range benchPolicies {
				r := find(runs, p, tr, pol)
				x := gx + float64(ti*(len(benchPolicies)+1)+pi)*barW
				if r == nil {
					continue
				}
				v := value(r)
				opacity := 0.9
				if tr == locksteptest.TransportStream {
					opacity = 0.35
				}
				top := fr.py(v)
				if !bandwidth && v <= 0 {
					s.text(x+barW/2, fr.y1-3, "middle", 9, policyColors[pol], "0", "")
					continue
				}
				s.rect(x+1, top, barW-2, fr.y1-top, policyColors[pol], policyColors[pol], opacity)
			}
			mid := gx + (float64(ti*(len(benchPolicies)+1))+float64(len(benchPolicies))/2)*barW
			s.text(mid, fr.y1+14, "middle", 10, "#555", tr, "")
		}
		s.text(gx+(groupW-30)/2, fr.y1+32, "middle", 12, "#222", p, `font-weight="bold"`)
		s.text(gx+(groupW-30)/2, fr.y1+47, "middle", 11, "#555", profileMembers(runs, p), "")
		if bandwidth && p == "modem" {
			y := fr.py(benchModemBudget * 8.0 / 1000)
			s.line(gx-8, y, gx+groupW-22, y, "#c00", 1.5, "5 3")
			s.text(gx+groupW-22, y-5, "end", 11, "#c00", "28.8 kbit/s budget", "")
		}
	}
	var legend []legendEntry
	for _, pol := range benchPolicies {
		legend = append(legend, legendEntry{label: pol, color: policyColors[pol], bar: true, opacity: 0.9})
	}
	legend = append(legend, legendEntry{label: "pale: the stream transport", color: "#777", bar: true, opacity: 0.35})
	s.legendRow(fr.x0, fr.y1+58, legend)
	if !bandwidth {
		s.text(fr.x1, fr.y1+72, "end", 10, "#555", "0: no stall", "")
	}
	return s
}

func profileMembers(runs []*benchRun, profile string) string {
	for _, r := range runs {
		if r.report != nil && r.Profile == profile {
			return fmt.Sprintf("%d members", r.Peers)
		}
	}
	return ""
}

// axesY draws the box and the y axis of a bar chart.
func (s *svgPlot) axesY(fr frame, ylabel string, yfmt func(float64) string) {
	if fr.log {
		for e := fr.ymin; e <= fr.ymax; e++ {
			y := fr.py(math.Pow(10, e))
			s.line(fr.x0, y, fr.x1, y, "#e6e6e6", 1, "")
			s.text(fr.x0-6, y+4, "end", 11, "#444", yfmt(math.Pow(10, e)), "")
		}
	} else {
		ystep := niceStep(fr.ymax-fr.ymin, 5)
		for y := fr.ymin; y <= fr.ymax+ystep/1e6; y += ystep {
			s.line(fr.x0, fr.py(y), fr.x1, fr.py(y), "#e6e6e6", 1, "")
			s.text(fr.x0-6, fr.py(y)+4, "end", 11, "#444", yfmt(y), "")
		}
	}
	s.rect(fr.x0, fr.y0, fr.x1-fr.x0, fr.y1-fr.y0, "none", "#888", 0)
	s.text(18, (fr.y0+fr.y1)/2, "middle", 12, "#222", ylabel, fmt.Sprintf(`transform="rotate(-90 18 %.1f)"`, (fr.y0+fr.y1)/2))
}

// plotNetlib draws, for the netlib scenario, the share of deliveries still
// outstanding after a delay (log scale), per transport, with the seed's
// napkin figures as markers.
func plotNetlib(runs []*netlibRun) *svgPlot {
	xmax := 400.0
	for _, n := range runs {
		xmax = max(xmax, n.DelayMS.P9999*1.1)
	}
	xmax = math.Ceil(xmax/niceStep(xmax, 8)) * niceStep(xmax, 8)
	s := newSVG(760, 452+legendHeight(len(runs)+2), "Delivery delay at RTT 200 ms and 2% loss (the netlib seed's scenario)")
	fr := frame{x0: 80, y0: 44, x1: 740, y1: 400, xmax: xmax, log: true, ymin: -6, ymax: 0}
	s.axes(fr, "delay from a command's first send to its arrival at a member (ms)", "share not yet delivered (log)", func(v float64) string {
		return strconv.FormatFloat(math.Pow(10, math.Round(math.Log10(v))+2), 'f', -1, 64) + "%"
	})
	var legend []legendEntry
	colors := map[string]string{locksteptest.TransportDatagram: policyColors["adaptive"], locksteptest.TransportStream: "#555"}
	for _, n := range runs {
		if len(n.delays) == 0 {
			continue
		}
		var pts [][2]float64
		for x := 0.0; x <= xmax; x += xmax / 800 {
			out := 1 - shareAtMost(n.delays, time.Duration(x*1e6))
			if out <= 0 {
				pts = append(pts, [2]float64{fr.px(x), fr.y1})
				break
			}
			pts = append(pts, [2]float64{fr.px(x), fr.py(out)})
		}
		dash := ""
		if n.Transport == locksteptest.TransportStream {
			dash = "6 4"
		}
		s.polyline(pts, colors[n.Transport], 2, dash)
		legend = append(legend, legendEntry{label: fmt.Sprintf("%s (%s): %s within 100 ms, p99.9 %.0f ms", n.Transport, n.Policy, pct(n.Within100), n.DelayMS.P999), color: colors[n.Transport], dash: dash})
	}
	// The seed's napkin table, as the share still outstanding after each
	// delay.
	for _, p := range [][2]float64{{100, 0.02}, {200, 0.0004}, {300, 0.000008}} {
		s.circle(fr.px(p[0]), fr.py(p[1]), 4.5, "white", "#d95f02")
	}
	s.line(fr.px(100), fr.py(0.02), fr.px(340), fr.py(0.02), "#7570b3", 1.5, "2 3")
	legend = append(legend,
		legendEntry{label: "seed napkin, redundant resends every 100 ms", color: "#d95f02", marker: true},
		legendEntry{label: "seed napkin, timeouts only (2% wait until 340 ms)", color: "#7570b3", dash: "2 3"})
	s.legend(fr.x0, fr.y1+48, legend)
	return s
}
