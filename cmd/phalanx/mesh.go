package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/reckon"
)

// phalanx mesh runs every member as its own process over real QUIC on
// loopback. The parent starts one "phalanx member" process per member,
// tells each the others' addresses once all have started, shows their
// progress, and merges their results into the report of the command-line
// contract.
//
// Parent and members talk in lines of JSON: a member prints its addresses
// ({"type":"addrs"}), progress ({"type":"progress"}) and finally its result
// ({"type":"result"}) on its standard output, and reads the other members'
// addresses ({"type":"peers"}) from its standard input.

// memberMsg is one line a member prints.
type memberMsg struct {
	Type  string   `json:"type"`
	Slot  int      `json:"slot"`
	Addrs []string `json:"addrs,omitempty"`
	// progress
	Frame   int64   `json:"frame,omitempty"`
	RTTms   float64 `json:"rtt_ms,omitempty"`
	Delay   int     `json:"delay,omitempty"`
	Stalls  int64   `json:"stalls,omitempty"`
	UpBps   float64 `json:"up_bps,omitempty"`
	DownBps float64 `json:"down_bps,omitempty"`
	// cmds: the commands this member submitted (seq, unix ns) and
	// executed (slot, seq, unix ns) since its previous cmds line
	Submits [][2]int64 `json:"submits,omitempty"`
	Execs   [][3]int64 `json:"execs,omitempty"`
	// result
	Result *memberResult `json:"result,omitempty"`
}

// memberResult is what one member measured.
type memberResult struct {
	Slot       int                              `json:"slot"`
	Index      int                              `json:"index"` // the parent's number for the process
	Completed  bool                             `json:"completed"`
	FinalHash  string                           `json:"final_hash"`
	Stepped    int64                            `json:"stepped"`
	Stalls     int64                            `json:"stalls"`
	Delay      int                              `json:"delay"`
	BytesUp    int64                            `json:"bytes_up"`   // UDP payload plus 28 bytes per packet
	BytesDown  int64                            `json:"bytes_down"` // likewise
	Packets    int64                            `json:"packets_up"`
	Seconds    float64                          `json:"seconds"`     // how long it measured
	CPUSeconds float64                          `json:"cpu_seconds"` // CPU time the process used meanwhile
	OneWay     []float64                        `json:"oneway_ms"`   // delays the network applied to its packets (a sample)
	Events     []event                          `json:"events"`
	Reckon     map[reckon.Method]reckon.Metrics `json:"reckon"`
	Error      string                           `json:"error,omitempty"`
	// Stopped is the reason this member stopped by the rules (dropped,
	// minority), with the error saying so in Error; "" otherwise.
	Stopped string `json:"stopped,omitempty"`
	// EndRSSMB and EndCPUS are the member's own reading when it finished
	// its frames: its resident set size and the CPU time it used in all
	// (phalanx mesh --json), the last sample of its series.
	EndRSSMB float64 `json:"end_rss_mb,omitempty"`
	EndCPUS  float64 `json:"end_cpu_s,omitempty"`
	// EndHeapKB is its live heap after a garbage collection at the same
	// moment, the session still open.
	EndHeapKB float64 `json:"end_heap_kb,omitempty"`
}

func runMesh(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("phalanx mesh", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs, 4, 600)
	var kills []string
	fs.Func("kill", "kill member process `INDEX@FRAME` (the parent's process number) when it reaches that frame (repeatable)", func(v string) error {
		kills = append(kills, v)
		return nil
	})
	freezes := map[int]meshFreeze{}
	fs.Func("freeze", "stop member process `INDEX@FRAME:DURATION` (SIGSTOP) when it reaches that frame, and continue it (SIGCONT) after DURATION, like 1@100:10s (repeatable)", func(v string) error {
		at, dur, ok := strings.Cut(v, ":")
		i, fr, ok2 := strings.Cut(at, "@")
		idx, err1 := strconv.Atoi(i)
		frame, err2 := strconv.ParseInt(fr, 10, 64)
		d, err3 := time.ParseDuration(dur)
		if !ok || !ok2 || err1 != nil || err2 != nil || err3 != nil || idx < 0 || frame < 0 || d <= 0 {
			return fmt.Errorf("want INDEX@FRAME:DURATION, like 1@100:10s")
		}
		freezes[idx] = meshFreeze{frame: frame, d: d}
		return nil
	})
	timeout := fs.Duration("timeout", 0, "give up after this long (0: the run's length plus a tenth and a minute)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: phalanx mesh [flags]")
		fmt.Fprintln(stderr, "\nRuns every member as its own process over real QUIC on loopback, impaired by the profile.")
		fmt.Fprintln(stderr, "With --transport stream every member carries its packets on QUIC streams instead of datagrams.")
		fmt.Fprintln(stderr, "Exits 0 when every surviving member reached the same hash. A member stopped by the rules")
		fmt.Fprintln(stderr, "(dropped, or in a minority; its process exits 3) is not a survivor and not a failure.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code := parseFlags(fs, args, func() error { return f.check() }); code >= 0 {
		return code
	}
	if _, err := loadProfile(f.profile); err != nil {
		fmt.Fprintln(stderr, "phalanx mesh:", err)
		return 2
	}
	if _, err := newGame(f.sim, f.peers, f.seed); err != nil {
		fmt.Fprintln(stderr, "phalanx mesh:", err)
		return 2
	}
	killAt := map[int]int64{}
	for _, k := range kills {
		i, fr, ok := strings.Cut(k, "@")
		idx, err1 := strconv.Atoi(i)
		frame, err2 := strconv.ParseInt(fr, 10, 64)
		if !ok || err1 != nil || err2 != nil || idx < 0 || idx >= f.peers || frame < 0 {
			fmt.Fprintf(stderr, "phalanx mesh: --kill %q: want INDEX@FRAME with INDEX in 0..%d\n", k, f.peers-1)
			return 2
		}
		killAt[idx] = frame
	}
	if *timeout == 0 {
		// A session under load runs behind the wall clock: an hour of
		// 8 members on a busy 2-core machine fell more than a minute
		// behind.
		run := time.Duration(f.frames) * time.Duration(f.frameMS) * time.Millisecond
		*timeout = run + run/10 + time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "phalanx mesh:", err)
		return 1
	}
	for idx := range freezes {
		if idx >= f.peers {
			fmt.Fprintf(stderr, "phalanx mesh: --freeze %d: want INDEX in 0..%d\n", idx, f.peers-1)
			return 2
		}
	}
	m := &meshRun{f: &f, stdout: stdout, stderr: stderr, n: f.peers, killAt: killAt, freezes: freezes, lat: newCmdLatencies()}
	return m.run(ctx, exe)
}

type meshProc struct {
	index    int
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	addrs    []string
	slot     int
	progress memberMsg
	result   *memberResult
	killed   bool
	frozen   bool
	exitErr  error
	// usage is its series of memory and CPU samples: bounded by the
	// run's time limit over the sampling interval (about 60 a run).
	usage    []usageSample
	usageAt  time.Duration // when the last sample was taken
	usageCPU float64       // the CPU seconds used by then
}

// meshFreeze is one --freeze: at a frame, for a while.
type meshFreeze struct {
	frame int64
	d     time.Duration
}

type meshRun struct {
	f      *runFlags
	stdout io.Writer
	stderr io.Writer
	n      int
	killAt map[int]int64
	// freezes are the --freeze flags by process index.
	freezes map[int]meshFreeze

	mu    sync.Mutex
	procs []*meshProc
	lat   *cmdLatencies
}

func (m *meshRun) memberArgs(index int) []string {
	f := m.f
	args := []string{"member",
		"--peers", strconv.Itoa(f.peers), "--frames", strconv.Itoa(f.frames), "--seed", strconv.FormatUint(f.seed, 10),
		"--profile", f.profile, "--sim", f.sim, "--frame-ms", strconv.Itoa(f.frameMS),
		"--delay", strconv.Itoa(f.delay), "--budget", strconv.Itoa(f.budget), "--policy", f.policy, "--transport", f.transport,
		"--index", strconv.Itoa(index),
		"--session", fmt.Sprintf("mesh-%d-%d", f.seed, os.Getpid()),
	}
	if f.record != "" {
		args = append(args, "--record", f.record)
	}
	return args
}

func (m *meshRun) run(ctx context.Context, exe string) int {
	start := time.Now()
	lines := make(chan struct {
		p   *meshProc
		msg memberMsg
	}, 64)
	// The readers send to feed and the last one closes it; the loop below
	// reads lines, which it sets to nil when it stops reading.
	feed := lines
	var readers sync.WaitGroup
	for i := range m.n {
		cmd := exec.CommandContext(ctx, exe, m.memberArgs(i)...)
		cmd.Stderr = &prefixWriter{w: m.stderr, prefix: fmt.Sprintf("[member %d] ", i)}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			fmt.Fprintln(m.stderr, "phalanx mesh:", err)
			m.abort()
			return 1
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			fmt.Fprintln(m.stderr, "phalanx mesh:", err)
			m.abort()
			return 1
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(m.stderr, "phalanx mesh: starting a member:", err)
			m.abort()
			return 1
		}
		p := &meshProc{index: i, cmd: cmd, stdin: stdin, slot: -1}
		m.procs = append(m.procs, p)
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 1<<20), 64<<20)
			for sc.Scan() {
				var msg memberMsg
				if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
					fmt.Fprintf(m.stderr, "[member %d] %s\n", p.index, sc.Text())
					continue
				}
				feed <- struct {
					p   *meshProc
					msg memberMsg
				}{p, msg}
			}
		}()
	}
	go func() {
		readers.Wait()
		close(feed)
	}()
	tty := isTerminal(m.stdout)
	over := "datagrams"
	if m.f.transport == locksteptest.TransportStream {
		over = "streams (the reliable ordered baseline)"
	}
	fmt.Fprintf(m.stdout, "%s over QUIC %s on loopback, profile %s, %d frames of %s at %d ms\n", plural(m.n, "member"), over, m.f.profile, m.f.frames, m.f.sim, m.f.frameMS)
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	lastPrint := time.Time{}
	every := usageInterval(time.Duration(m.f.frames) * time.Duration(m.f.frameMS) * time.Millisecond)
	lastUsage := -every
	drawn := 0
	addrsSent := false
	for lines != nil {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil
				break
			}
			m.mu.Lock()
			switch l.msg.Type {
			case "addrs":
				l.p.addrs = l.msg.Addrs
			case "progress":
				l.p.progress = l.msg
				l.p.slot = l.msg.Slot
				if fr, ok := m.killAt[l.p.index]; ok && !l.p.killed && l.msg.Frame >= fr {
					l.p.killed = true
					_ = l.p.cmd.Process.Signal(syscall.SIGKILL)
					fmt.Fprintf(m.stderr, "phalanx mesh: killed member process %d at frame %d\n", l.p.index, l.msg.Frame)
					m.lat.recheck(m.live())
				}
				if fz, ok := m.freezes[l.p.index]; ok && !l.p.frozen && l.msg.Frame >= fz.frame {
					l.p.frozen = true
					proc := l.p.cmd.Process
					_ = proc.Signal(syscall.SIGSTOP)
					time.AfterFunc(fz.d, func() { _ = proc.Signal(syscall.SIGCONT) })
					fmt.Fprintf(m.stderr, "phalanx mesh: stopped member process %d at frame %d for %v\n", l.p.index, l.msg.Frame, fz.d)
				}
			case "cmds":
				live := m.live()
				for _, s := range l.msg.Submits {
					m.lat.submitted(int64(l.msg.Slot), s[0], s[1], live)
				}
				for _, e := range l.msg.Execs {
					m.lat.executed(l.p.index, e[0], e[1], e[2], live)
				}
			case "result":
				l.p.result = l.msg.Result
				if r := l.msg.Result; r.EndRSSMB > 0 {
					l.p.addUsage(time.Since(start), r.Stepped, r.EndRSSMB, r.EndCPUS)
				}
			}
			if !addrsSent {
				all := true
				for _, p := range m.procs {
					all = all && len(p.addrs) > 0
				}
				if all {
					addrsSent = true
					for _, p := range m.procs {
						var others []string
						for _, q := range m.procs {
							if q != p {
								others = append(others, q.addrs[0])
							}
						}
						b, _ := json.Marshal(memberMsg{Type: "peers", Addrs: others})
						fmt.Fprintln(p.stdin, string(b))
					}
				}
			}
			m.mu.Unlock()
		case <-ticker.C:
			m.mu.Lock()
			if t := time.Since(start); t-lastUsage >= every {
				lastUsage = t
				for _, p := range m.procs {
					if p.result == nil && !p.killed {
						p.sampleUsage(t)
					}
				}
				m.lat.sweep(time.Now())
			}
			if tty {
				drawn = m.drawTable(drawn)
			} else if time.Since(lastPrint) >= 5*time.Second {
				m.printProgress()
				lastPrint = time.Now()
			}
			m.mu.Unlock()
		case <-ctx.Done():
			fmt.Fprintln(m.stderr, "phalanx mesh: timed out")
			m.stopAll()
			lines = nil
		}
	}
	for _, p := range m.procs {
		p.exitErr = p.cmd.Wait()
		p.stdin.Close()
	}
	if tty {
		m.drawTable(drawn)
	}
	rep, ok := m.report(time.Since(start))
	rep.print(m.stdout)
	usage := m.usage()
	printUsage(m.stdout, usage)
	if m.f.json {
		b, _ := json.Marshal(meshReport{rep, m.f.transport, usage})
		fmt.Fprintln(m.stdout, string(b))
	}
	if !ok || !rep.Identical {
		return 1
	}
	return 0
}

// meshReport is the JSON of phalanx mesh: the report of the contract and
// how the packets travelled.
type meshReport struct {
	*report
	Transport string        `json:"transport"` // datagram or stream
	Members   []memberUsage `json:"members"`   // each member process: how it ended, its memory and CPU over time
}

// abort kills the member processes started so far and waits for them.
func (m *meshRun) abort() {
	m.stopAll()
	for _, p := range m.procs {
		_ = p.cmd.Wait()
		p.stdin.Close()
	}
}

func (m *meshRun) stopAll() {
	for _, p := range m.procs {
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Kill()
		}
	}
}

func (m *meshRun) progressLine(p *meshProc) string {
	pr := p.progress
	state := "running"
	switch {
	case p.killed:
		state = "killed"
	case p.result != nil:
		state = "done"
	case len(p.addrs) == 0:
		state = "starting"
	case pr.Type == "":
		state = "joining"
	}
	// Slot and frames only once known: the lobby gives the slot; a member
	// reports the newest frame it stepped (-1 before the first), and its
	// result the last frame of the run it stepped.
	slot, frames := " -", "    -"
	switch {
	case p.result != nil && p.result.Slot >= 0:
		slot, frames = fmt.Sprintf("%2d", p.result.Slot), fmt.Sprintf("%5d", min(p.result.Stepped+1, int64(m.f.frames)))
	case pr.Type != "":
		slot, frames = fmt.Sprintf("%2d", pr.Slot), fmt.Sprintf("%5d", min(pr.Frame+1, int64(m.f.frames)))
	}
	return fmt.Sprintf("  member %d (slot %s) %-8s frames %s/%d  rtt %6.1f ms  delay %2d frames  stalls %4d  %7.0f B/s up %7.0f B/s down",
		p.index, slot, state, frames, m.f.frames, pr.RTTms, pr.Delay, pr.Stalls, pr.UpBps, pr.DownBps)
}

// drawTable redraws the progress table in place; drawn is how many lines
// the previous call drew.
func (m *meshRun) drawTable(drawn int) int {
	if drawn > 0 {
		fmt.Fprintf(m.stdout, "\x1b[%dA", drawn)
	}
	for _, p := range m.procs {
		fmt.Fprintf(m.stdout, "\x1b[2K%s\n", m.progressLine(p))
	}
	return len(m.procs)
}

func (m *meshRun) printProgress() {
	for _, p := range m.procs {
		fmt.Fprintln(m.stdout, m.progressLine(p))
	}
}

// report merges the members' results into the contract's report. It
// returns false when a member that was not killed failed to report.
func (m *meshRun) report(wall time.Duration) (*report, bool) {
	f := m.f
	r := &report{Peers: f.peers, Frames: f.frames, FrameMS: f.frameMS, Sim: f.sim, Profile: f.profile, Seed: f.seed}
	r.Survivors, r.Events, r.Stopped = []int{}, []event{}, []stopped{}
	ok := true
	var results []*memberResult
	for _, p := range m.procs {
		if p.killed {
			continue
		}
		if p.result == nil {
			ok = false
			fmt.Fprintf(m.stderr, "phalanx mesh: member process %d did not report a result (%v)\n", p.index, p.exitErr)
			continue
		}
		if p.result.Stopped != "" {
			// Stopped by the rules: dropped, or in a minority. Not a
			// survivor, and not a failure of the run.
			st := stopped{Member: p.result.Slot, Reason: p.result.Stopped, Error: p.result.Error, Frame: p.result.Stepped + 1}
			r.Stopped = append(r.Stopped, st)
			r.Events = append(r.Events, p.result.Events...)
			continue
		}
		if p.result.Error != "" {
			ok = false
			fmt.Fprintf(m.stderr, "phalanx mesh: member process %d: %s\n", p.index, p.result.Error)
		}
		results = append(results, p.result)
	}
	slices.SortFunc(results, func(a, b *memberResult) int { return a.Slot - b.Slot })
	hashes := map[string][]int{}
	var stalls, up, down, packets int64
	var secs, cpu float64
	var oneway []time.Duration
	var cursors []map[reckon.Method]reckon.Metrics
	for _, res := range results {
		if res.Reckon != nil {
			cursors = append(cursors, res.Reckon)
		}
		r.Survivors = append(r.Survivors, res.Slot)
		if res.Completed {
			hashes[res.FinalHash] = append(hashes[res.FinalHash], res.Slot)
		} else {
			ok = false
		}
		stalls += res.Stalls
		up += res.BytesUp
		down += res.BytesDown
		packets += res.Packets
		secs = max(secs, res.Seconds)
		if res.Seconds > 0 {
			cpu += res.CPUSeconds / res.Seconds
		}
		r.DelayFrames = append(r.DelayFrames, res.Delay)
		r.Events = append(r.Events, res.Events...)
		for _, d := range res.OneWay {
			oneway = append(oneway, time.Duration(d*float64(time.Millisecond)))
		}
	}
	r.Identical = ok && len(hashes) == 1 && len(results) > 0
	best := 0
	for h, slots := range hashes {
		if len(slots) > best {
			best, r.FinalHash = len(slots), h
		}
	}
	r.Desyncs = len(results) - best
	// Commands still waiting for a member that has since gone count once
	// every survivor executed them; the rest were not executed on every
	// survivor within the run.
	var survivors uint64
	for _, p := range m.procs {
		if !p.killed && p.result != nil {
			survivors |= 1 << p.index
		}
	}
	m.lat.recheck(survivors)
	lat := &m.lat.lat
	n := float64(max(1, len(results)))
	secs = max(secs, 1e-9)
	r.StallRate = math.Round(float64(stalls)/n/float64(f.frames)*1e5) / 1e5
	r.Bytes.Up = math.Round(float64(up) / n / secs)
	r.Bytes.Down = math.Round(float64(down) / n / secs)
	r.Datagrams = math.Round(float64(packets)/n/secs*10) / 10
	r.CPUPercent = math.Round(cpu/n*1000) / 10
	r.Latency.P50 = roundMS(lat.Quantile(50))
	r.Latency.P95 = roundMS(lat.Quantile(95))
	r.Latency.P99 = roundMS(lat.Quantile(99))
	r.Latency.Max = roundMS(lat.Quantile(100))
	r.OneWay.P50 = ms(locksteptest.Percentile(oneway, 50))
	r.OneWay.P99 = ms(locksteptest.Percentile(oneway, 99))
	r.Commands = int(lat.Count())
	r.Reckon = mergeReckon(cursors)
	r.VirtualS = math.Round(secs*100) / 100
	r.WallS = math.Round(wall.Seconds()*100) / 100
	return r, ok
}

// prefixWriter prefixes every line written to w.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := slices.Index(p.buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
