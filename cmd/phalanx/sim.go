package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
)

func runSim(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("phalanx sim", "phalanx sim [flags]", stderr,
		"Runs members over the virtual network: virtual time, seeded, no sockets.",
		"Exits 0 when every surviving member stepped identical buckets and reached the same hash;",
		"members stopped by the rules (dropped, or in a minority after a split) are not survivors,",
		"and a run in which none survives exits 1.",
	)
	var f runFlags
	f.register(fs, 4, 600)
	var ff faultFlags
	ff.register(fs)
	cpuprofile := fs.String("cpuprofile", "", "developer flag: write a CPU profile of the run to `FILE` (read it with go tool pprof)")
	if code := parseFlags(fs, args, func() error { return f.check() }); code >= 0 {
		return code
	}
	if err := ff.check(f.peers, f.frames); err != nil {
		fmt.Fprintln(stderr, "phalanx sim:", err)
		return 2
	}
	profile, err := loadProfile(f.profile)
	if err != nil {
		fmt.Fprintln(stderr, "phalanx sim:", err)
		return 2
	}
	g, err := newGame(f.sim, ff.members(f.peers), f.seed)
	if err != nil {
		fmt.Fprintln(stderr, "phalanx sim:", err)
		return 2
	}
	var rec *recorder
	if f.record != "" {
		all := f // open slots have replays too
		all.peers = ff.members(f.peers)
		if rec, err = newRecorder(f.record, &all, g); err != nil {
			fmt.Fprintln(stderr, "phalanx sim: --record:", err)
			return 1
		}
	}
	if *cpuprofile != "" {
		pf, err := os.Create(*cpuprofile)
		if err == nil {
			err = pprof.StartCPUProfile(pf)
		}
		if err != nil {
			fmt.Fprintln(stderr, "phalanx sim: --cpuprofile:", err)
			return 1
		}
		defer pf.Close()
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	hc := f.harnessConfig(profile, g)
	hc.OnStep, hc.OnEvent, hc.OnStatement = rec.hook(), rec.eventHook(), rec.statementHook()
	hc.OnSpectator = rec.spectatorHook()
	hc.Faults, hc.Perturb = ff.faults, g.perturb
	hc.Members, hc.Open, hc.CheckpointEvery = ff.members(f.peers), ff.open(f.peers), ff.checkpointEvery
	hc.Spectators, hc.SpectatorDelay, hc.SpectatorsFrom = ff.spectators, ff.spectatorDelay, bucket.Frame(ff.spectatorsAt)
	hc.StallFrom, hc.StallTo = bucket.Frame(ff.stallFrom), bucket.Frame(ff.stallTo)
	// The cursors (the dead-reckoning half) share nothing with the
	// lockstep run: they go on their own goroutine meanwhile.
	cursors := make(chan reckonReport, 1)
	go func() { cursors <- simulateCursors(&f, profile) }()
	res, err := locksteptest.Run(hc)
	wall := time.Since(start)
	reckonRep := <-cursors
	recErr := rec.finish()
	if recErr != nil {
		fmt.Fprintln(stderr, "phalanx sim: --record:", recErr)
	}
	rec.printReports(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "phalanx sim:", err)
		if res == nil {
			return 1
		}
	}
	rep := newReport(&f, profile.Name, res, wall)
	rep.Reckon = reckonRep
	rep.print(stdout)
	if f.json {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(stdout, string(b))
	}
	if len(res.Survivors) == 0 {
		fmt.Fprintln(stderr, "phalanx sim: no member finished")
	}
	if err != nil || !rep.Identical || recErr != nil || len(res.Survivors) == 0 {
		return 1
	}
	return 0
}

// report is the result of a run, printed for people and as the JSON object
// of the command-line contract.
type report struct {
	Peers     int     `json:"peers"`
	Frames    int     `json:"frames"`
	FrameMS   int     `json:"frame_ms"`
	Sim       string  `json:"sim"`
	Profile   string  `json:"profile"`
	Seed      uint64  `json:"seed"`
	Identical bool    `json:"identical"`
	FinalHash string  `json:"final_hash"`
	Desyncs   int     `json:"desyncs"`
	StallRate float64 `json:"stall_rate"`
	// StalledMS is how long the members' frame clocks waited for seals,
	// summed over members (lockstep.Stats.Stalled); StallMSPerMin the same
	// per member and minute of play (frames × frame length).
	StalledMS     float64 `json:"stalled_ms"`
	StallMSPerMin float64 `json:"stall_ms_per_min"`
	Latency       struct {
		P50 float64 `json:"p50"`
		P95 float64 `json:"p95"`
		P99 float64 `json:"p99"`
		Max float64 `json:"max"`
	} `json:"latency_ms"`
	OneWay struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"oneway_ms"`
	Bytes struct {
		Up   float64 `json:"up"`
		Down float64 `json:"down"`
	} `json:"bytes_per_peer_per_s"`
	Datagrams float64 `json:"datagrams_per_peer_per_s"`
	// Statements are the signed-stream work per member and second: its
	// statements signed and the others' checked (none with --unsigned).
	Statements struct {
		Signed   float64 `json:"signed"`
		Verified float64 `json:"verified"`
	} `json:"statements_per_peer_per_s"`
	DelayFrames []int `json:"delay_frames"`
	// LeadMS and LateMS are each member's adaptive lead and the lateness
	// it sizes it from (lockstep.Stats.Lead and Lag), at the end of a
	// virtual run.
	LeadMS    []float64 `json:"lead_ms,omitempty"`
	LateMS    []float64 `json:"late_ms,omitempty"`
	Survivors []int     `json:"survivors"`
	// Stopped lists the members that stopped by the rules: dropped by the
	// others, or on the minority side of a split. They do not count
	// against identical.
	Stopped    []stopped   `json:"stopped"`
	Events     []event     `json:"events"`
	Admissions []admission `json:"admissions"`
	Spectators []watcher   `json:"spectators"`
	// WindowStallRate: the members' stalls per frame over --stall-window.
	WindowStallRate *float64     `json:"window_stall_rate,omitempty"`
	Sides           []side       `json:"sides,omitempty"`
	Reckon          reckonReport `json:"reckon,omitzero"`
	Commands        int          `json:"commands"`
	CPUPercent      float64      `json:"cpu_percent_per_member,omitempty"` // phalanx mesh: CPU time per member process, percent of one core
	VirtualS        float64      `json:"virtual_s"`
	WallS           float64      `json:"wall_s"`
}

// event is one event a member saw, in the JSON of the contract.
type event struct {
	Observer  int    `json:"observer"`
	Type      string `json:"type"`
	Frame     int64  `json:"frame"`
	Member    int    `json:"member"`
	LastFrame *int64 `json:"last_frame,omitempty"`
	Section   string `json:"section,omitempty"`
	Reason    string `json:"reason,omitempty"` // drops, leaves and stops: silent, stalled, left, violation, minority, dropped
	Detail    string `json:"detail,omitempty"`
}

// eventType is an event's type in the JSON of the contract, whose event
// types are drop, leave, desync and violation: a member that stopped by the
// rules (lockstep.EventStop) reports a drop of itself (member = observer),
// whose reason says why: dropped, or minority.
func eventType(e lockstep.Event) string {
	if e.Type == lockstep.EventStop {
		return lockstep.EventDrop.String()
	}
	return e.Type.String()
}

// stopped is a member that stopped by the rules, with its reason (dropped
// or minority) and its error.
type stopped struct {
	Member int    `json:"member"`
	Reason string `json:"reason"`
	Frame  int64  `json:"frame"` // the first frame it did not step
	Error  string `json:"error"`
}

// stoppedOf returns the stop of a member from its events, if any.
func stoppedOf(slot int, events []lockstep.Event, err error) (stopped, bool) {
	if err == nil {
		return stopped{}, false
	}
	st := stopped{Member: slot, Error: err.Error()}
	for _, e := range events {
		if e.Type == lockstep.EventStop {
			st.Reason, st.Frame = string(e.Reason), int64(e.Frame)
		}
	}
	return st, true
}

// side is one group of survivors that stepped identical histories, with the
// members it dropped or saw leave.
type side struct {
	Members   []int  `json:"members"`
	FinalHash string `json:"final_hash"`
	Dropped   []int  `json:"dropped"`
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

// setStalled sets the stall time of the report: stalled, summed over
// members members, who played frames frames of r.FrameMS.
func (r *report) setStalled(stalled time.Duration, members, frames int) {
	r.StalledMS = ms(stalled)
	minutes := float64(frames) * float64(r.FrameMS) / 60000
	r.StallMSPerMin = math.Round(r.StalledMS/float64(max(1, members))/max(minutes, 1e-9)*100) / 100
}

func newReport(f *runFlags, profile string, res *locksteptest.Result, wall time.Duration) *report {
	r := &report{Peers: f.peers, Frames: f.frames, FrameMS: f.frameMS, Sim: f.sim, Profile: profile, Seed: f.seed}
	r.Identical = res.Identical
	r.Survivors = []int{}
	for _, s := range res.Survivors {
		r.Survivors = append(r.Survivors, int(s))
	}
	// Desyncs: survivors outside the largest group of identical histories.
	for _, g := range res.Groups[min(1, len(res.Groups)):] {
		r.Desyncs += len(g)
	}
	if len(res.Groups) > 0 {
		r.FinalHash = fmt.Sprintf("%016x", res.Members[res.Groups[0][0]].FinalHash)
	}
	r.Events = []event{}
	r.Admissions, r.Spectators = admissionsOf(res), spectatorsOf(res)
	if res.WindowFrames > 0 {
		rate := math.Round(float64(res.WindowStalls)/float64(res.WindowFrames)*1e5) / 1e5
		r.WindowStallRate = &rate
	}
	r.Stopped = []stopped{}
	for _, m := range res.Members {
		if st, ok := stoppedOf(int(m.Slot), m.Events, m.Stopped); ok {
			r.Stopped = append(r.Stopped, st)
		}
	}
	for _, m := range res.Members {
		for _, e := range m.Events {
			if e.Type == lockstep.EventRejoin || e.Type == lockstep.EventJoin {
				continue // listed under admissions, with who reported them
			}
			ev := event{Observer: int(m.Slot), Type: eventType(e), Frame: int64(e.Frame), Member: int(e.Member), Section: e.Section, Reason: string(e.Reason), Detail: e.Detail}
			if e.Type == lockstep.EventDrop || e.Type == lockstep.EventLeave {
				last := int64(e.LastFrame)
				ev.LastFrame = &last
			}
			r.Events = append(r.Events, ev)
		}
	}
	if len(res.Groups) > 1 {
		for _, g := range res.Groups {
			sd := side{FinalHash: fmt.Sprintf("%016x", res.Members[g[0]].FinalHash), Dropped: []int{}}
			for _, s := range g {
				sd.Members = append(sd.Members, int(s))
			}
			for _, e := range res.Members[g[0]].Events {
				if e.Type == lockstep.EventDrop || e.Type == lockstep.EventLeave {
					sd.Dropped = append(sd.Dropped, int(e.Member))
				}
			}
			r.Sides = append(r.Sides, sd)
		}
	}
	var stalls, up, down, dgrams, signed, verified int64
	var stalled time.Duration
	for _, m := range res.Members {
		if m.Killed || m.Open {
			continue
		}
		stalled += m.Stats.Stalled
		signed += m.Stats.StatementsSigned
		verified += m.Stats.StatementsVerified
		stalls += m.Stats.Stalls
		up += m.Stats.BytesSent
		down += m.Stats.BytesReceived
		dgrams += m.Stats.Datagrams
		r.DelayFrames = append(r.DelayFrames, m.Stats.Delay)
		r.LeadMS = append(r.LeadMS, ms(m.Stats.Lead))
		r.LateMS = append(r.LateMS, ms(m.Stats.Lag))
	}
	n := float64(max(1, len(r.DelayFrames)))
	secs := max(res.Duration.Seconds(), 1e-9)
	r.StallRate = math.Round(float64(stalls)/n/float64(f.frames)*1e5) / 1e5
	r.setStalled(stalled, int(n), f.frames)
	r.Bytes.Up = math.Round(float64(up) / n / secs)
	r.Bytes.Down = math.Round(float64(down) / n / secs)
	r.Datagrams = math.Round(float64(dgrams)/n/secs*10) / 10
	r.Statements.Signed = math.Round(float64(signed)/n/secs*10) / 10
	r.Statements.Verified = math.Round(float64(verified)/n/secs*10) / 10
	r.Latency.P50 = ms(res.LatencyPercentile(50))
	r.Latency.P95 = ms(res.LatencyPercentile(95))
	r.Latency.P99 = ms(res.LatencyPercentile(99))
	r.Latency.Max = ms(res.LatencyPercentile(100))
	r.OneWay.P50 = ms(res.OneWayPercentile(50))
	r.OneWay.P99 = ms(res.OneWayPercentile(99))
	r.Commands = res.Commands()
	r.VirtualS = math.Round(res.Duration.Seconds()*100) / 100
	r.WallS = math.Round(wall.Seconds()*100) / 100
	return r
}

func (r *report) print(w io.Writer) {
	verdict := "IDENTICAL: every surviving member stepped the same buckets and reached the same hash"
	if !r.Identical {
		verdict = fmt.Sprintf("DIVERGED: %d surviving member(s) differ from the largest group", r.Desyncs)
	}
	for _, e := range r.Events {
		line := fmt.Sprintf("  event seen by member %d: %s of member %d at frame %d", e.Observer, e.Type, e.Member, e.Frame)
		if e.LastFrame != nil {
			line += fmt.Sprintf(", last frame %d", *e.LastFrame)
		}
		if e.Section != "" {
			line += fmt.Sprintf(", section %q", e.Section)
		}
		if e.Reason != "" {
			line += ", reason " + e.Reason
		}
		if e.Detail != "" {
			line += " (" + e.Detail + ")"
		}
		fmt.Fprintln(w, line)
	}
	for _, st := range r.Stopped {
		fmt.Fprintf(w, "  member %d stopped at frame %d (%s): %s\n", st.Member, st.Frame, st.Reason, st.Error)
	}
	for _, sd := range r.Sides {
		fmt.Fprintf(w, "  side %v: dropped %v, final hash %s\n", sd.Members, sd.Dropped, sd.FinalHash)
	}
	fmt.Fprintf(w, "%s, %d frames of %s at %d ms, profile %s, seed %d\n", plural(r.Peers, "member"), r.Frames, r.Sim, r.FrameMS, r.Profile, r.Seed)
	fmt.Fprintf(w, "  latency submit→execution on the last member: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms (%d commands)\n",
		r.Latency.P50, r.Latency.P95, r.Latency.P99, r.Latency.Max, r.Commands)
	fmt.Fprintf(w, "  network one-way delay (the floor): p50 %.1f ms, p99 %.1f ms\n", r.OneWay.P50, r.OneWay.P99)
	fmt.Fprintf(w, "  stall rate %.4f, stalled %.0f ms in all (%.1f ms per member-minute), delay now %v frames\n", r.StallRate, r.StalledMS, r.StallMSPerMin, r.DelayFrames)
	fmt.Fprintf(w, "  per member: %.0f B/s up, %.0f B/s down, %.1f datagrams/s (IP, UDP and QUIC headers counted)\n", r.Bytes.Up, r.Bytes.Down, r.Datagrams)
	if r.CPUPercent > 0 {
		fmt.Fprintf(w, "  CPU per member process: %.1f%% of one core\n", r.CPUPercent)
	}
	fmt.Fprintf(w, "  %.1f s of play in %.2f s\n", r.VirtualS, r.WallS)
	for _, m := range []string{"snap", "linear", "quadratic", "cubic"} {
		if mt, ok := r.Reckon.Methods[m]; ok {
			fmt.Fprintf(w, "  cursors (dead reckoning, %-9s): %.2f updates/s, error mean %.3f p99 %.3f, largest jump %.3f\n", m, mt.UpdatesPerS, mt.ErrorMean, mt.ErrorP99, mt.MaxJump)
		}
	}
	r.Reckon.Interest.print(w)
	r.printAdmissions(w)
	fmt.Fprintf(w, "%s; final hash %s\n", verdict, r.FinalHash)
}
