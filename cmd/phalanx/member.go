package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/examples/rts/cursor"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/peer"
)

// memberFlags are the flags of one member process: phalanx peer, and the
// processes phalanx mesh starts.
type memberFlags struct {
	runFlags
	index     int
	session   string
	join      []string
	listen    string
	key       string
	mdns      bool
	packetLog string
	mesh      bool // driven by phalanx mesh over stdin and stdout
	showAddr  bool
	// lobbyTimeout bounds the wait for the other members in the lobby.
	lobbyTimeout time.Duration
}

func (mf *memberFlags) register(fs *flag.FlagSet) {
	mf.runFlags.register(fs, 2, 600)
	fs.IntVar(&mf.index, "index", -1, "the process number phalanx mesh gave this member")
	fs.StringVar(&mf.session, "session", "phalanx", "session ID: every member of a session uses the same")
	fs.Func("join", "another member's multiaddr, /ip4/.../udp/PORT/quic-v1/p2p/ID (repeatable)", func(v string) error {
		mf.join = append(mf.join, v)
		return nil
	})
	fs.StringVar(&mf.listen, "listen", peer.DefaultListenAddr, "libp2p listen multiaddr")
	fs.StringVar(&mf.key, "key", "", "identity key file (created if missing; empty: a fresh identity)")
	fs.BoolVar(&mf.mdns, "mdns", false, "find the other members on the LAN with mDNS instead of --join")
	fs.StringVar(&mf.packetLog, "packet-log", "", "write one line per packet sent or received to `FILE`")
	fs.BoolVar(&mf.showAddr, "show-addr", false, "print every address this member listens on (for the others' --join; with --json as a JSON list) and exit; use with --key and a fixed --listen port")
	fs.DurationVar(&mf.lobbyTimeout, "lobby-timeout", 5*time.Minute, "give up when the other members have not all answered in the lobby after this long")
}

// errShowAddr ends a member that was only asked for its address.
var errShowAddr = errors.New("address shown")

// exitStopped is the exit code of a member that stopped by the rules: the
// others dropped it (it was frozen or cut off past the drop timeout) or it
// was on the minority side of a split. 1 is a failure, 2 a usage error.
const exitStopped = 3

// runPeer is phalanx peer: one member, joining the others by multiaddr.
func runPeer(args []string, stdout, stderr io.Writer) int {
	return runMemberCmd("peer", args, stdout, stderr, false)
}

// runMemberChild is the member process phalanx mesh starts.
func runMemberChild(args []string, stdout, stderr io.Writer) int {
	return runMemberCmd("member", args, stdout, stderr, true)
}

func runMemberCmd(name string, args []string, stdout, stderr io.Writer, mesh bool) int {
	fs := flag.NewFlagSet("phalanx "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var mf memberFlags
	mf.register(fs)
	mf.mesh = mesh
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: phalanx %s [flags]\n\n", name)
		fmt.Fprintln(stderr, "Runs one member of a session over real QUIC. It prints its address; start the")
		fmt.Fprintln(stderr, "other members with --join ADDR (or all with --mdns on a LAN).")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	check := func() error {
		if err := mf.check(); err != nil {
			return err
		}
		if !mesh && !mf.mdns && !mf.showAddr && len(mf.join) != mf.peers-1 {
			return fmt.Errorf("%d members need %d --join addresses (or --mdns), got %d", mf.peers, mf.peers-1, len(mf.join))
		}
		if _, err := peer.ParseAddrs(mf.join...); err != nil { // before the host starts
			return fmt.Errorf("--join: %v; want /ip4/ADDR/udp/PORT/quic-v1/p2p/ID as another member's --show-addr prints it", err)
		}
		if mf.lobbyTimeout <= 0 {
			return fmt.Errorf("--lobby-timeout %v: want more than 0", mf.lobbyTimeout)
		}
		return nil
	}
	if code := parseFlags(fs, args, check); code >= 0 {
		return code
	}
	if path := os.Getenv("PHALANX_CPUPROFILE"); path != "" {
		// A CPU profile of this member, for looking into its costs.
		if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil {
			defer f.Close()
			if pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := time.Duration(mf.frames) * time.Duration(mf.frameMS) * time.Millisecond
	timeout := mf.lobbyTimeout + run + run/10 + 2*time.Minute // beyond phalanx mesh's own limit
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := runMember(ctx, &mf, stdout, stderr)
	if errors.Is(err, errShowAddr) {
		return 0
	}
	if err != nil {
		res.Error = err.Error()
	}
	if mesh {
		b, _ := json.Marshal(memberMsg{Type: "result", Slot: res.Slot, Result: res})
		fmt.Fprintln(stdout, string(b))
	} else if res.Slot >= 0 { // it took part in a session
		fmt.Fprintf(stdout, "member %d: stepped to frame %d, final hash %s, %d stalls\n", res.Slot, res.Stepped, res.FinalHash, res.Stalls)
		for _, e := range res.Events {
			fmt.Fprintf(stdout, "  event: %s of member %d at frame %d\n", e.Type, e.Member, e.Frame)
		}
	}
	if errors.Is(err, lockstep.ErrStopped) {
		fmt.Fprintf(stderr, "phalanx %s: this member stopped (%s): %v\n", name, res.Stopped, err)
		return exitStopped
	}
	if err != nil {
		fmt.Fprintf(stderr, "phalanx %s: %v\n", name, err)
		return 1
	}
	return 0
}

// runMember runs one member from start to finish.
func runMember(ctx context.Context, mf *memberFlags, stdout, stderr io.Writer) (*memberResult, error) {
	res := &memberResult{Slot: -1, Index: mf.index, Events: []event{}}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	profile, err := loadProfile(mf.profile)
	if err != nil {
		return res, err
	}
	host, err := peer.NewHost(ctx, peer.HostConfig{ListenAddrs: []string{mf.listen}, IdentityFile: mf.key, Logger: logger})
	if err != nil {
		return res, err
	}
	defer host.Close()
	var addrs []string
	for _, a := range host.Addrs() {
		addrs = append(addrs, a.String())
	}
	switch {
	case mf.mesh:
		b, _ := json.Marshal(memberMsg{Type: "addrs", Addrs: addrs})
		fmt.Fprintln(stdout, string(b))
	case mf.showAddr && mf.json:
		b, _ := json.Marshal(struct {
			ID    string   `json:"id"`
			Addrs []string `json:"addrs"`
		}{host.ID().String(), addrs})
		fmt.Fprintln(stdout, string(b))
		return res, errShowAddr
	case mf.showAddr:
		// Every address: listening on 0.0.0.0 gives one per interface, and
		// another machine needs one of the non-loopback ones.
		for _, a := range addrs {
			fmt.Fprintln(stdout, a)
		}
		return res, errShowAddr
	default:
		for _, a := range addrs {
			fmt.Fprintf(stdout, "listening on %s\n", a)
		}
	}

	// The other members' addresses.
	switch {
	case mf.mesh:
		line, err := bufio.NewReader(os.Stdin).ReadBytes('\n')
		if err != nil {
			return res, fmt.Errorf("reading the other members' addresses: %w", err)
		}
		var msg memberMsg
		if err := json.Unmarshal(line, &msg); err != nil || msg.Type != "peers" {
			return res, fmt.Errorf("unexpected message from phalanx mesh: %q", line)
		}
		mf.join = msg.Addrs
	}
	others, err := peer.ParseAddrs(mf.join...)
	if err != nil {
		return res, err
	}
	g0, err := newGame(mf.sim, mf.peers, mf.seed)
	if err != nil {
		return res, err
	}
	tc := peer.TransportConfig{Mode: transportMode(mf.transport), Profile: &profile, Logger: logger}
	if mf.packetLog != "" {
		f, err := os.Create(mf.packetLog)
		if err != nil {
			return res, err
		}
		defer f.Close()
		tc.PacketLog = f
	}
	run := &memberRun{mf: mf, res: res, stdout: stdout, batch: memberMsg{Type: "cmds"}}
	// The game is built anew from the seed the members agreed on, so no
	// member chose it.
	game := func(s *peer.Session) *game {
		g, err := newGame(mf.sim, mf.peers, s.Seed.Uint64())
		if err != nil {
			panic(err) // the same game with another seed was built above
		}
		return g
	}
	cfg := peer.MemberConfig{
		Host: host,
		Params: peer.SessionParams{
			SessionID: mf.session, Members: mf.peers, FrameMillis: mf.frameMS,
			Sim: mf.sim, SimVersion: g0.version, Frames: mf.frames,
		},
		Join:         others,
		MDNS:         mf.mdns,
		LobbyTimeout: mf.lobbyTimeout,
		NewSim: func(s *peer.Session) lockstep.Simulation {
			run.started(s, game(s))
			return run.g.newSim(s.Self)
		},
		Input:     run.input,
		Configure: func(c *lockstep.Config) { mf.runFlags.applyTo(c, profile) },
		Transport: tc,
		OnStep:    run.onStep,
		OnEvent:   run.onEvent,
		OnDatagram: func(from bucket.Slot, data []byte) {
			run.mu.Lock()
			defer run.mu.Unlock()
			_ = run.cursors.Receive(run.sessionTime(), int(from), data) // a malformed update is dropped
		},
		Logger: logger,
	}
	if mf.record != "" {
		cfg.Record = &peer.Recording{Dir: mf.record, SimConfig: func(s *peer.Session) []byte { return game(s).config }}
	}
	m, err := peer.Start(ctx, cfg)
	if err != nil {
		return res, err
	}
	run.m = m
	run.drive(ctx)
	st, err := m.Wait()
	if errors.Is(err, peer.ErrLobbyTimeout) {
		err = fmt.Errorf("gave up after --lobby-timeout %v: %w; start the members missing, check the --join addresses, or raise --lobby-timeout", mf.lobbyTimeout, err)
	}
	return run.finish(st), err
}

// memberRun is one member of phalanx peer or phalanx mesh once it has
// started: its game, its cursors and what it reports.
type memberRun struct {
	mf     *memberFlags
	m      *peer.Member
	res    *memberResult
	stdout io.Writer

	mu      sync.Mutex // guards everything below, used from the member's goroutines
	sess    *peer.Session
	g       *game
	cursors *cursor.Share
	// batch holds the commands submitted and executed since the last
	// progress line, streamed to phalanx mesh with it: bounded by the
	// commands of one progress interval.
	batch     memberMsg
	submitted int64
	cpuStart  float64
	from      time.Time
}

// started sets up the run once the lobby has agreed on the session.
func (r *memberRun) started(s *peer.Session, g *game) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sess, r.g = s, g
	r.res.Slot = int(s.Self)
	r.batch.Slot = int(s.Self)
	r.cursors = cursor.New(cursor.Config{Members: r.mf.peers, Self: int(s.Self), Seed: s.Seed.Uint64()})
	r.cpuStart, r.from = cpuSeconds(), time.Now()
}

func (r *memberRun) sessionTime() time.Duration { return time.Since(r.sess.Start) }

// input returns this member's commands of a frame, noting when they were
// submitted for phalanx mesh.
func (r *memberRun) input(f bucket.Frame) [][]byte {
	cmds := r.g.commands(r.sess.Self, f)
	if r.mf.mesh {
		now := time.Now().UnixNano()
		r.mu.Lock()
		for range cmds {
			r.batch.Submits = append(r.batch.Submits, [2]int64{r.submitted, now})
			r.submitted++
		}
		r.mu.Unlock()
	}
	return cmds
}

// onStep notes the commands executed, for phalanx mesh, and at the last
// frame the member's own memory reading.
func (r *memberRun) onStep(f bucket.Frame, cmds []bucket.Command, _ uint64) {
	if r.mf.mesh {
		now := time.Now().UnixNano()
		r.mu.Lock()
		for _, c := range cmds {
			r.batch.Execs = append(r.batch.Execs, [3]int64{int64(c.Slot), int64(c.Seq), now})
		}
		r.mu.Unlock()
		if f == bucket.Frame(r.mf.frames)-1 {
			// Measured while the session is still open.
			rss, cpu, err := procUsage(os.Getpid())
			heap := liveHeapKB()
			r.mu.Lock()
			if err == nil {
				r.res.EndRSSMB, r.res.EndCPUS = rss, cpu
			}
			r.res.EndHeapKB = heap
			r.mu.Unlock()
		}
	}
}

// onEvent keeps the session's events for the report.
func (r *memberRun) onEvent(e lockstep.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Type == lockstep.EventStop {
		r.res.Stopped = string(e.Reason)
	}
	ev := event{Observer: r.res.Slot, Type: eventType(e), Frame: int64(e.Frame), Member: int(e.Member), Section: e.Section, Reason: string(e.Reason), Detail: e.Detail}
	if e.Type == lockstep.EventDrop || e.Type == lockstep.EventLeave {
		last := int64(e.LastFrame)
		ev.LastFrame = &last
	}
	r.res.Events = append(r.res.Events, ev)
}

// drive shares the cursors and, for phalanx mesh, reports progress every
// half second, until the member is done.
func (r *memberRun) drive(ctx context.Context) {
	tick := time.NewTicker(time.Duration(r.mf.frameMS) * time.Millisecond / 2)
	defer tick.Stop()
	var (
		lastProgress     time.Time
		playing          bool
		playFrom         time.Time
		upFrom, downFrom int64
	)
	for {
		select {
		case <-r.m.Done():
			r.flushCmds()
			return
		case <-ctx.Done():
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = r.m.Close(closeCtx)
			cancel()
			return
		case <-tick.C:
		}
		if r.m.Phase() != peer.PhasePlaying {
			continue
		}
		r.mu.Lock()
		pos := r.sessionTime()
		if pos >= 0 {
			r.cursors.Tick(pos, func(u []byte) { _ = r.m.Broadcast(u) })
		}
		r.mu.Unlock()
		if !r.mf.mesh || time.Since(lastProgress) < 500*time.Millisecond {
			continue
		}
		lastProgress = time.Now()
		st := r.m.Status()
		up, down, _ := wireBytes(r.m.TransportStats())
		// Rates of the play itself: from frame 0 on, not the lobby's and
		// the handshakes' bytes before it.
		if !playing && pos >= 0 {
			playing, playFrom, upFrom, downFrom = true, time.Now(), up, down
		}
		secs := max(time.Since(playFrom).Seconds(), 1e-3)
		up, down = up-upFrom, down-downFrom
		if !playing {
			up, down = 0, 0
		}
		var rtt time.Duration
		for _, p := range st.Stats.Peers {
			rtt = max(rtt, p.RTT)
		}
		b, _ := json.Marshal(memberMsg{Type: "progress", Slot: st.Slot, Frame: int64(st.Frame),
			RTTms: float64(rtt) / 1e6, Delay: st.Stats.Core.Delay, Stalls: st.Stats.Core.Stalls,
			UpBps: float64(up) / secs, DownBps: float64(down) / secs})
		fmt.Fprintln(r.stdout, string(b))
		r.flushCmds()
	}
}

// finish fills the report from the member's final status.
func (r *memberRun) finish(st peer.Status) *memberResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.res
	if r.sess == nil {
		return res // it never played
	}
	res.Seconds = time.Since(r.from).Seconds()
	res.CPUSeconds = cpuSeconds() - r.cpuStart
	res.Reckon = r.cursors.Metrics(r.sessionTime())
	res.Completed, res.Stepped = st.Completed, int64(st.Frame)
	if st.Frame >= 0 {
		res.FinalHash = fmt.Sprintf("%016x", st.Hash)
	}
	res.Stalls, res.Delay = st.Stats.Core.Stalls, st.Stats.Core.Delay
	ts := r.m.TransportStats()
	res.BytesUp, res.BytesDown, res.Packets = wireBytes(ts)
	res.OneWay = oneWaySample(ts)
	return res
}

// flushCmds prints the batch of submitted and executed commands, if any,
// for phalanx mesh, and empties it.
func (r *memberRun) flushCmds() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.batch.Submits)+len(r.batch.Execs) == 0 {
		return
	}
	b, _ := json.Marshal(r.batch)
	fmt.Fprintln(r.stdout, string(b))
	r.batch.Submits, r.batch.Execs = r.batch.Submits[:0], r.batch.Execs[:0]
}

// transportMode returns the peer transport mode of a --transport value
// (checked by runFlags.check). Every member of a session must use the
// same: a member in the other mode fails to connect, naming it.
func transportMode(transport string) peer.Mode {
	if transport == locksteptest.TransportStream {
		return peer.ModeStream
	}
	return peer.ModeDatagram
}

// udpHeader is the IPv4 and UDP header bytes counted per packet on the wire.
const udpHeader = 28

// wireBytes returns the bytes this member sent and received on the wire
// (every UDP payload, QUIC's own packets included, plus 28 bytes of IPv4
// and UDP header each) and the packets it sent.
func wireBytes(st peer.TransportStats) (up, down, packets int64) {
	if im := st.Impairment; im != nil {
		up = int64(im.Bytes + udpHeader*im.Written)
		down = int64(im.ReadBytes + udpHeader*im.Read)
		packets = int64(im.Written)
	}
	return up, down, packets
}

// oneWaySample returns, in milliseconds, the delays the network applied to
// a sample of this member's packets: the floor any lockstep scheme is bound
// by.
func oneWaySample(st peer.TransportStats) []float64 {
	if st.Impairment == nil {
		return nil
	}
	out := make([]float64, 0, len(st.Impairment.Delays))
	for _, d := range st.Impairment.Delays {
		out = append(out, float64(d)/1e6)
	}
	return out
}

// cpuSeconds returns the CPU time this process has used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
