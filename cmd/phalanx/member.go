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
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/examples/rts/cursor"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/lockstep/replay"
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
		for _, a := range mf.join { // before the host starts
			if _, err := libp2ppeer.AddrInfoFromString(a); err != nil {
				return fmt.Errorf("--join %q: %v; want /ip4/ADDR/udp/PORT/quic-v1/p2p/ID as another member's --show-addr prints it", a, err)
			}
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
	var others []libp2ppeer.AddrInfo
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
	case mf.mdns:
		if others, err = peer.DiscoverMDNS(ctx, host, "phalanx-"+mf.session, mf.peers-1); err != nil {
			return res, err
		}
	}
	for _, a := range mf.join {
		ai, err := libp2ppeer.AddrInfoFromString(a)
		if err != nil {
			return res, fmt.Errorf("--join %q: %w", a, err)
		}
		others = append(others, *ai)
	}

	g0, err := newGame(mf.sim, mf.peers, mf.seed)
	if err != nil {
		return res, err
	}
	lobbyCtx, cancelLobby := context.WithTimeoutCause(ctx, mf.lobbyTimeout,
		fmt.Errorf("gave up after --lobby-timeout %v: start the members missing, check the --join addresses, or raise --lobby-timeout", mf.lobbyTimeout))
	sess, err := peer.Join(lobbyCtx, host, peer.SessionParams{
		SessionID: mf.session, Members: mf.peers, FrameMillis: mf.frameMS,
		Sim: mf.sim, SimVersion: g0.version,
	}, others)
	cancelLobby()
	if err != nil {
		return res, err
	}
	res.Slot = int(sess.Self)
	// The game's seed is the one the members agreed on, so no member chose it.
	g, err := newGame(mf.sim, mf.peers, sess.Seed.Uint64())
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
	tr, err := peer.NewTransport(ctx, host, sess, tc)
	if err != nil {
		return res, err
	}
	defer tr.Close()

	// --record: this member's replay, written as the session runs.
	var rw *replay.Writer
	if mf.record != "" {
		if err := os.MkdirAll(mf.record, 0o755); err != nil {
			return res, err
		}
		file, err := os.Create(filepath.Join(mf.record, fmt.Sprintf("member-%d.phx", sess.Self)))
		if err != nil {
			return res, err
		}
		defer file.Close()
		h := replay.Header{
			Session: []byte(sess.ID), FrameLength: sess.Frame(), SimName: g.name, SimVersion: g.version,
			SimConfig: g.config, Seed: sess.Seed, Self: sess.Self,
		}
		for _, id := range sess.Members {
			h.Members = append(h.Members, id.String())
		}
		if rw, err = replay.NewWriter(file, h); err != nil {
			return res, err
		}
	}

	origin := time.Now()
	clock := func() time.Duration { return time.Since(origin) }
	cc := (&mf.runFlags).coreConfig(profile)
	cc.Members, cc.Self, cc.Session = mf.peers, sess.Self, sess.Tag()
	cc.Start = sess.Start.Sub(origin)
	cc.Logger = logger
	if !mf.unsigned {
		// Each member signs its command stream with its identity, unless
		// some member's peer ID embeds no key to check it with.
		if v, verr := sess.StatementVerifier(); verr == nil {
			cc.Signer, cc.Verifier = host.StatementSigner(), v
		} else {
			logger.Warn("members' statements cannot be checked: playing unsigned", "err", verr)
		}
	}
	frames := bucket.Frame(mf.frames)

	var mu sync.Mutex
	stepped := bucket.Frame(-1) // the newest frame of the run stepped, under mu
	// The commands submitted and executed since the last progress line,
	// streamed to phalanx mesh with it: bounded by the commands of one
	// progress interval.
	batch := memberMsg{Type: "cmds", Slot: int(sess.Self)}
	submitted := int64(0)
	// Cursors shared by dead reckoning, outside the lockstep agreement.
	cursors := cursor.New(cursor.Config{Members: mf.peers, Self: int(sess.Self), Seed: sess.Seed.Uint64()})
	sessionTime := func() time.Duration { return time.Since(sess.Start) }
	finished := make(chan struct{})
	var finishOnce sync.Once
	sim := g.newSim(sess.Self)
	s, err := lockstep.NewSession(lockstep.SessionConfig{
		Core: cc, Sim: sim, Transport: tr, Clock: clock, Logger: logger,
		OnDatagram: func(from bucket.Slot, data []byte) {
			mu.Lock()
			defer mu.Unlock()
			_ = cursors.Receive(sessionTime(), int(from), data) // a malformed update is dropped
		},
		OnStep: func(f bucket.Frame, cmds []bucket.Command, sim lockstep.Simulation, hash uint64) {
			now := time.Now().UnixNano()
			mu.Lock()
			defer mu.Unlock()
			if f >= frames {
				return
			}
			stepped = f
			if rw != nil {
				_ = rw.Record(lockstep.Bucket{Frame: f, Commands: cmds}, sim) // the writer keeps its error for Close
			}
			if mf.mesh {
				for _, c := range cmds {
					batch.Execs = append(batch.Execs, [3]int64{int64(c.Slot), int64(c.Seq), now})
				}
			}
			if f == frames-1 {
				res.FinalHash, res.Completed = fmt.Sprintf("%016x", sim.Hash()), true
				finishOnce.Do(func() { close(finished) })
			}
		},
		OnEvent: func(e lockstep.Event) {
			if e.Type == lockstep.EventStop {
				mu.Lock()
				res.Stopped = string(e.Reason)
				mu.Unlock()
			}
			if (e.Type == lockstep.EventLeave && e.LastFrame >= frames-1) || e.Frame > frames {
				return // members leaving after the last frame: the end of the run
			}
			ev := event{Observer: int(sess.Self), Type: eventType(e), Frame: int64(e.Frame), Member: int(e.Member), Section: e.Section, Reason: string(e.Reason), Detail: e.Detail}
			if e.Type == lockstep.EventDrop || e.Type == lockstep.EventLeave {
				last := int64(e.LastFrame)
				ev.LastFrame = &last
			}
			mu.Lock()
			res.Events = append(res.Events, ev)
			if c, ok := replay.ChangeOf(e); ok && rw != nil {
				rw.Membership(c)
			}
			mu.Unlock()
		},
		OnStatement: func(st lockstep.StatementOf) {
			mu.Lock()
			defer mu.Unlock()
			if rw != nil {
				rw.Statement(replay.Statement{Member: st.Member, Tag: cc.Session, Seal: st.Statement.Seal, Count: st.Statement.Count, Signature: st.Statement.Signature})
			}
		},
	})
	if err != nil {
		return res, err
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(runCtx) }()

	// Issue this member's commands at the frames of the wall clock, and
	// report progress.
	frameLen := time.Duration(mf.frameMS) * time.Millisecond
	tick := time.NewTicker(frameLen / 2)
	defer tick.Stop()
	next := bucket.Frame(0)
	lastProgress := time.Time{}
	measureFrom := time.Now()
	var (
		playing          bool
		playFrom         time.Time
		upFrom, downFrom int64
	)
	cpuAtStart := cpuSeconds()
	var runErrV error
loop:
	for {
		select {
		case <-finished:
			break loop
		case runErrV = <-runErr:
			break loop
		case <-ctx.Done():
			runErrV = ctx.Err()
			break loop
		case <-tick.C:
		}
		pos := time.Until(sess.Start)
		cur := bucket.Frame(-1)
		if pos <= 0 {
			cur = bucket.Frame(-pos / frameLen)
		}
		if cur >= 0 {
			mu.Lock()
			cursors.Tick(sessionTime(), func(u []byte) { _ = s.Broadcast(u) })
			mu.Unlock()
		}
		for ; next <= cur && next < frames; next++ {
			for _, c := range g.commands(sess.Self, next) {
				if err := s.Submit(c); err != nil {
					break
				}
				if mf.mesh {
					mu.Lock()
					batch.Submits = append(batch.Submits, [2]int64{submitted, time.Now().UnixNano()})
					mu.Unlock()
				}
				submitted++
			}
		}
		if mf.mesh && time.Since(lastProgress) >= 500*time.Millisecond {
			lastProgress = time.Now()
			st := s.Stats()
			up, down, _ := wireBytes(tr)
			// Rates of the play itself: from frame 0 on, not the lobby's and
			// the handshakes' bytes before it.
			if !playing && pos <= 0 {
				playing, playFrom, upFrom, downFrom = true, time.Now(), up, down
			}
			secs := max(time.Since(playFrom).Seconds(), 1e-3)
			up, down = up-upFrom, down-downFrom
			if !playing {
				up, down = 0, 0
			}
			var rtt time.Duration
			for _, p := range st.Peers {
				rtt = max(rtt, p.RTT)
			}
			b, _ := json.Marshal(memberMsg{Type: "progress", Slot: int(sess.Self), Frame: int64(st.Stepped),
				RTTms: float64(rtt) / 1e6, Delay: st.Core.Delay, Stalls: st.Core.Stalls,
				UpBps: float64(up) / secs, DownBps: float64(down) / secs})
			fmt.Fprintln(stdout, string(b))
			flushCmds(stdout, &mu, &batch)
		}
	}
	res.Seconds = time.Since(measureFrom).Seconds()
	if mf.mesh {
		flushCmds(stdout, &mu, &batch)
		if rss, cpu, err := procUsage(os.Getpid()); err == nil {
			res.EndRSSMB, res.EndCPUS = rss, cpu
		}
		res.EndHeapKB = liveHeapKB()
	}
	mu.Lock()
	res.Reckon = cursors.Metrics(sessionTime())
	mu.Unlock()
	res.CPUSeconds = cpuSeconds() - cpuAtStart
	if rw != nil {
		mu.Lock()
		reason, last := replay.EndCompleted, frames-1
		hash, _ := strconv.ParseUint(res.FinalHash, 16, 64)
		if !res.Completed {
			reason, last, hash = replay.EndClosedEarly, bucket.Frame(rw.Frames()-1), sim.Hash()
		}
		if err := rw.Close(last, hash, reason); err != nil {
			res.Error = "recording: " + err.Error()
		}
		mu.Unlock()
	}
	st := s.Stats()
	mu.Lock()
	// Not st.Stepped: the session updates its counters after OnStep, so
	// they may lag behind the frame that ended the run.
	res.Stepped = int64(stepped)
	mu.Unlock()
	res.Stalls, res.Delay = st.Core.Stalls, st.Core.Delay
	res.BytesUp, res.BytesDown, res.Packets = wireBytes(tr)
	res.OneWay = oneWaySample(tr)
	if runErrV == nil {
		// Leave at an announced frame, so the others need not wait for a
		// timeout; give them a few seconds to acknowledge.
		closeCtx, cancelClose := context.WithTimeout(ctx, 5*time.Second)
		if err := s.Close(closeCtx); err != nil {
			stopRun()
		}
		cancelClose()
		return res, nil
	}
	if errors.Is(runErrV, context.Canceled) {
		runErrV = errors.New("interrupted")
	}
	return res, runErrV
}

// flushCmds prints the batch of submitted and executed commands, if any,
// for phalanx mesh, and empties it.
func flushCmds(stdout io.Writer, mu *sync.Mutex, batch *memberMsg) {
	mu.Lock()
	defer mu.Unlock()
	if len(batch.Submits)+len(batch.Execs) == 0 {
		return
	}
	b, _ := json.Marshal(batch)
	fmt.Fprintln(stdout, string(b))
	batch.Submits, batch.Execs = batch.Submits[:0], batch.Execs[:0]
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
func wireBytes(tr *peer.Transport) (up, down, packets int64) {
	st := tr.Stats()
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
func oneWaySample(tr *peer.Transport) []float64 {
	st := tr.Stats()
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
