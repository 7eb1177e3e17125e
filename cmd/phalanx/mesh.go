package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
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

func runMesh(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("phalanx mesh", "phalanx mesh [flags]", stderr,
		"Runs every member as its own process over real QUIC on loopback, impaired by the profile.",
		"With --transport stream every member carries its packets on QUIC streams instead of datagrams.",
		"Exits 0 when every surviving member reached the same hash. A member stopped by the rules",
		"(dropped, or in a minority; its process exits 3) is not a survivor and not a failure.",
	)
	var f runFlags
	f.register(fs, 4, 600)
	var kills []string
	fs.Func("kill", "kill member process `INDEX@FRAME` (the parent's process number) when it reaches that frame (repeatable)", func(v string) error {
		kills = append(kills, v)
		return nil
	})
	freezes := map[int]meshFreeze{}
	fs.Func("freeze", "stop member process `INDEX@FRAME:DURATION` (SIGSTOP) when it reaches that frame, and continue it (SIGCONT) after DURATION, like 1@100:10s (repeatable; not on Windows)", func(v string) error {
		if !canFreeze {
			return fmt.Errorf("stopping a process needs SIGSTOP, which this system does not have")
		}
		at, dur, ok := strings.Cut(v, ":")
		idx, frame, ok2 := indexAt(at)
		d, err3 := time.ParseDuration(dur)
		if !ok || !ok2 || err3 != nil || d <= 0 {
			return fmt.Errorf("want INDEX@FRAME:DURATION, like 1@100:10s")
		}
		freezes[idx] = meshFreeze{frame: frame, d: d}
		return nil
	})
	ui := fs.Bool("ui", false, "serve a live view of the session on loopback, printed as a URL (see also --ui-addr, --ui-linger)")
	uiAddr := fs.String("ui-addr", "127.0.0.1:0", "with --ui: the `ADDR` to serve the view on")
	uiLinger := fs.Duration("ui-linger", 0, "with --ui: keep the page up this long after the session (0: until interrupted)")
	perturbs := atFlag(fs, "perturb", "after `INDEX@FRAME` alter that member process's simulation state, so that the others find a desync (repeatable)", "INDEX@FRAME, like 1@100")
	rejoinAt := atFlag(fs, "rejoin", "start member process `INDEX@FRAME`, killed before (--kill), again with the same key once a survivor reached that frame: it comes back into the session and catches up (repeatable)", "INDEX@FRAME, like 1@400")
	slots := fs.Int("slots", 0, "slots of the session: the --peers members start it, the slots past them are open for --late joiners (0: as many as --peers)")
	lateAt := atFlag(fs, "late", "start a member process with a new identity once a member reached `SLOT@FRAME`: it joins late into an open slot (see --slots; it takes the lowest one free) and catches up (repeatable)", "SLOT@FRAME, like 4@300")
	spectators := fs.Int("spectators", 0, "`N` phalanx watch processes watch the session over QUIC once it runs, each served by two members")
	spectatorDelay := fs.Duration("spectator-delay", 0, "spectators step this `DURATION` behind the live frame (like 2m)")
	checkpointEvery := fs.Int("checkpoint-every", 200, "members save the game every `N` frames for members that come back and spectators (0: they step every frame from 0)")
	spectatorsPerMember := fs.Int("spectators-per-member", 0, "each member serves at most `N` spectators, and sends the others to spectators that serve (0: enough for every spectator)")
	spectatorsServe := fs.Int("spectators-serve", 2, "each spectator serves at most `N` other spectators")
	spectatorsAt := fs.Int64("spectators-at", 1, "spectators start once every member stepped `FRAME`, and catch up first")
	timeout := fs.Duration("timeout", 0, "give up after this long (0: the run's length plus a tenth and a minute)")
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
		idx, frame, ok := indexAt(k)
		if !ok || idx >= f.peers {
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
	for idx, fr := range rejoinAt {
		if k, ok := killAt[idx]; !ok || k >= fr {
			fmt.Fprintf(stderr, "phalanx mesh: --rejoin %d@%d: want a --kill of that member process at an earlier frame\n", idx, fr)
			return 2
		}
	}
	if err := checkLate(&f, *slots, lateAt); err != nil {
		fmt.Fprintln(stderr, "phalanx mesh:", err)
		return 2
	}
	if *spectators < 0 || *spectators > 32 || *spectatorDelay < 0 || *spectatorsPerMember < 0 || *spectatorsServe < 0 || *spectatorsServe > 64 {
		fmt.Fprintln(stderr, "phalanx mesh: --spectators: want 0 to 32, --spectator-delay 0 or more")
		return 2
	}
	m := &meshRun{f: &f, stdout: stdout, stderr: stderr, n: f.peers, killAt: killAt, freezes: freezes, perturbs: perturbs, lat: newCmdLatencies(), rejoinAt: rejoinAt,
		slots: *slots, lateAt: lateAt, spectatorsPerMember: *spectatorsPerMember, spectatorsServe: *spectatorsServe,
		spectators: *spectators, spectatorDelay: *spectatorDelay, spectatorsAt: max(*spectatorsAt, 1), checkpointEvery: *checkpointEvery}
	if len(rejoinAt) > 0 {
		if m.keyDir, err = os.MkdirTemp("", "phalanx-mesh-keys-"); err != nil {
			fmt.Fprintln(stderr, "phalanx mesh:", err)
			return 1
		}
		defer os.RemoveAll(m.keyDir)
	}
	if *ui {
		m.view = newMeshView(m)
		m.view.publish(false, "")
		url, stop, err := serveView(*uiAddr, m.view.srv, stdout)
		if err != nil {
			fmt.Fprintln(stderr, "phalanx mesh:", err)
			return 2
		}
		defer stop()
		defer lingerView(url, *uiLinger, stdout)
	}
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
	// spectator: a phalanx watch process (meshwatch.go), watch its result
	spectator bool
	watch     *watchResult
	exitErr   error
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
	// perturbs are the --perturb flags: frames by process index.
	perturbs map[int]int64

	// rejoinAt are the --rejoin flags: frames by process index (meshrejoin.go).
	rejoinAt map[int]int64
	// slots is --slots; lateAt are the --late flags: frames by open slot
	// (meshrejoin.go).
	slots  int
	lateAt map[int]int64
	// spectators and spectatorDelay are --spectators and
	// --spectator-delay (meshwatch.go).
	spectators     int
	spectatorDelay time.Duration
	spectatorsAt   int64

	// spectatorsPerMember and spectatorsServe are
	// --spectators-per-member and --spectators-serve (meshwatch.go).
	spectatorsPerMember, spectatorsServe int

	// checkpointEvery is --checkpoint-every, passed to the members.
	checkpointEvery int
	keyDir          string
	rejoins         []*meshRejoin
	feed            chan procLine
	readers         sync.WaitGroup

	mu    sync.Mutex
	procs []*meshProc
	lat   *cmdLatencies
	view  *meshView // --ui, else nil
}

func (m *meshRun) memberArgs(index int) []string {
	f := m.f
	args := []string{"member",
		"--peers", strconv.Itoa(f.peers), "--frames", strconv.Itoa(f.frames), "--seed", strconv.FormatUint(f.seed, 10),
		"--profile", f.profile, "--sim", f.sim, "--frame-ms", strconv.Itoa(f.frameMS),
		"--delay", strconv.Itoa(f.delay), "--budget", strconv.Itoa(f.budget), "--policy", f.policy, "--transport", f.transport,
		"--index", strconv.Itoa(index),
		"--session", m.sessionID(),
	}
	if f.record != "" {
		args = append(args, "--record", f.record)
	}
	if _, ok := m.rejoinAt[index]; ok {
		args = append(args, "--key", m.keyFile(index))
	}
	if m.spectators > 0 {
		args = append(args, "--spectators", strconv.Itoa(m.spectatorPlaces()))
	}
	args = append(args, "--checkpoint-every", strconv.Itoa(m.checkpointEvery))
	if m.slots > 0 {
		args = append(args, "--slots", strconv.Itoa(m.slots))
	}
	if fr, ok := m.perturbs[index]; ok {
		args = append(args, "--perturb", strconv.FormatInt(fr, 10))
	}
	if m.view != nil {
		args = append(args, "--ui-feed")
		if index == 0 {
			args = append(args, "--ui-scene")
		}
	}
	return args
}

func (m *meshRun) run(ctx context.Context, exe string) int {
	start := time.Now()
	lines := make(chan procLine, 64)
	// The readers send to feed and the last one closes it; the loop below
	// reads lines, which it sets to nil when it stops reading.
	m.feed = lines
	for i := range m.n {
		if _, err := m.startProc(ctx, exe, i, m.memberArgs(i)); err != nil {
			fmt.Fprintln(m.stderr, "phalanx mesh:", err)
			m.abort()
			return 1
		}
	}
	go func() {
		m.readers.Wait()
		close(m.feed)
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
				m.rejoinDue(ctx, exe, l.p)
				m.spectatorsDue(ctx, exe)
				if fz, ok := m.freezes[l.p.index]; ok && !l.p.frozen && l.msg.Frame >= fz.frame {
					l.p.frozen = true
					freeze(l.p.cmd.Process, fz.d)
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
			case "watch":
				l.p.watch = l.msg.Watch
			case "result":
				l.p.result = l.msg.Result
				if r := l.msg.Result; r.EndRSSMB > 0 {
					l.p.addUsage(time.Since(start), r.Stepped, r.EndRSSMB, r.EndCPUS)
				}
			}
			if m.view != nil {
				m.view.take(l.p, l.msg)
			}
			if l.msg.Type == "addrs" {
				m.rejoinAddrs(l.p)
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
	rejoinStalls := m.rejoinReport(rep)
	m.watchReport(rep)
	rep.print(m.stdout)
	if m.view != nil {
		m.mu.Lock()
		m.view.publish(true, rep.summary())
		m.mu.Unlock()
	}
	usage := m.usage()
	printUsage(m.stdout, usage)
	if m.f.json {
		b, _ := json.Marshal(meshReport{rep, m.f.transport, usage, rejoinStalls})
		fmt.Fprintln(m.stdout, string(b))
	}
	if !ok || !rep.Identical {
		return 1
	}
	return 0
}
