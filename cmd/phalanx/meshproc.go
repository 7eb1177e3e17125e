package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// procLine is one line a member process printed.
type procLine struct {
	p   *meshProc
	msg memberMsg
}

// startProc starts member process index with args; its reader sends its
// lines to m.feed.
func (m *meshRun) startProc(ctx context.Context, exe string, index int, args []string) (*meshProc, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = memberEnv(os.Environ())
	cmd.Stderr = &prefixWriter{w: m.stderr, prefix: fmt.Sprintf("[member %d] ", index)}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startSlack(cmd, memberTimerSlack); err != nil {
		return nil, fmt.Errorf("starting a member: %w", err)
	}
	p := &meshProc{index: index, cmd: cmd, stdin: stdin, slot: -1}
	m.procs = append(m.procs, p)
	m.readers.Add(1)
	go func() {
		defer m.readers.Done()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var msg memberMsg
			if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
				fmt.Fprintf(m.stderr, "[member %d] %s\n", p.index, sc.Text())
				continue
			}
			m.feed <- procLine{p, msg}
		}
	}()
	return p, nil
}

// memberSchedtrace is the GODEBUG setting member processes run with
// unless their environment sets schedtrace itself: with any schedtrace
// the Go runtime's monitor thread (sysmon) never sleeps deeply, and so
// no longer restarts polling every 20 µs each time a member, woken from
// idle by a packet or a timer, makes a system call; it backs off to every
// 10 ms instead. That halves a member's context switches. The interval,
// the largest the runtime takes (about 24.8 days of monotonic clock),
// keeps the scheduler's trace line from being printed but on a machine up
// longer than that (once at start, then at that interval); a fatal error
// also prints the scheduler's state.
const memberSchedtrace = "schedtrace=2147483647"

// memberMaxProcs is the GOMAXPROCS the processes startProc starts
// (members, rejoiners and spectators alike) run with unless their
// environment sets GOMAXPROCS itself: one processor. A rejoiner's catch-up
// re-simulates on one goroutine anyway, and a spectator serving others is
// a member's wake-ups without the game. A member is idle most
// of the time and wakes for a few hundred packets and timers a second;
// with a second processor idle, every goroutine one of them readies (the
// socket's reader handing a packet to its QUIC connection, the connection
// a datagram to its link's reader, the session a datagram to a link's
// writer) also wakes a second thread to look for work, which mostly finds
// none and sleeps again. With one processor the goroutines run in turn on
// the thread that woke, and a member's CPU falls by a fifth to a quarter. The
// member's work between wake-ups (a frame's step of the game, a packet)
// is short; but while the system runs other work the member waits whole,
// so on a busy machine its latency is higher (docs/benchmarks.md, "One
// processor per member").
const memberMaxProcs = "1"

// memberEnv returns env with memberSchedtrace added to GODEBUG, unless
// GODEBUG already sets schedtrace, and GOMAXPROCS set to memberMaxProcs,
// unless env sets it.
func memberEnv(env []string) []string {
	out := make([]string, 0, len(env)+2)
	debug, procs := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			debug = v
			continue
		}
		procs = procs || strings.HasPrefix(kv, "GOMAXPROCS=")
		out = append(out, kv)
	}
	if !procs {
		out = append(out, "GOMAXPROCS="+memberMaxProcs)
	}
	for _, kv := range strings.Split(debug, ",") {
		if strings.HasPrefix(kv, "schedtrace=") {
			return append(out, "GODEBUG="+debug)
		}
	}
	if debug != "" {
		debug += ","
	}
	return append(out, "GODEBUG="+debug+memberSchedtrace)
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
