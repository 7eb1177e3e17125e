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
	"syscall"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/netsim"
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
	// The view (memberview.go): phalanx peer --ui ADDR, and the member
	// processes of phalanx mesh --ui.
	ui       string
	uiLinger time.Duration
	uiFeed   bool
	uiScene  bool
	viewDone func(summary string) // set by runMember with --ui: publishes the end and keeps the page up
	// perturb alters this member's state after that frame (-1: never);
	// desyncReports is where it writes a desync report.
	perturb       int64
	desyncReports string
	// rejoin: come back into a running session with --key's identity;
	// late: join a running session into an open slot; slots: the
	// session's slots, open ones past --peers included (0: --peers).
	rejoin bool
	late   bool
	slots  int
	// spectators: how many spectators (phalanx watch) this member serves;
	// checkpointEvery: how often it saves its game for members that come
	// back and for spectators.
	spectators      int
	checkpointEvery int
	relayFlags
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
	fs.StringVar(&mf.ui, "ui", "", "serve a live view of this member on `ADDR` (like 127.0.0.1:8080; port 0 picks one), printed as a URL")
	fs.DurationVar(&mf.uiLinger, "ui-linger", 0, "with --ui: keep the page up this long after the session (0: until interrupted)")
	fs.BoolVar(&mf.uiFeed, "ui-feed", false, "(phalanx mesh --ui) print view lines and take orders from the page on stdin")
	fs.BoolVar(&mf.uiScene, "ui-scene", false, "(phalanx mesh --ui) describe the world in the view lines")
	fs.Int64Var(&mf.perturb, "perturb", -1, "after `FRAME` alter this member's simulation state, so that the others find a desync")
	fs.IntVar(&mf.checkpointEvery, "checkpoint-every", 200, "save the game every `N` frames for members that come back and spectators (0: they step every frame from 0)")
	fs.IntVar(&mf.spectators, "spectators", 0, "serve at most `N` spectators (phalanx watch) at once (0: refuse them)")
	fs.BoolVar(&mf.rejoin, "rejoin", false, "come back into a running session with the identity of --key, a member the others dropped: --join lists one or more live members")
	fs.BoolVar(&mf.late, "late", false, "join a running session late, with an identity no member had, into an open slot (see --slots): --join lists one or more live members")
	fs.IntVar(&mf.slots, "slots", 0, "slots of the session: the --peers members start it, the slots past them are open for late joiners (phalanx peer --late); every member and joiner gives the same (0: as many as --peers)")
	fs.StringVar(&mf.desyncReports, "desync-reports", "", "write a report into `DIR` when this member finds a desync (default: beside its --record replay)")
	mf.registerRelay(fs)
}

// slotCount is the session's number of slots, the open ones included: the
// game has a player for each.
func (mf *memberFlags) slotCount() int { return max(mf.peers, mf.slots) }

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
	fs := newFlagSet("phalanx "+name, "phalanx "+name+" [flags]", stderr,
		"Runs one member of a session over real QUIC. It prints its address; start the",
		"other members with --join ADDR (or all with --mdns on a LAN).",
	)
	var mf memberFlags
	mf.register(fs)
	mf.mesh = mesh
	check := func() error {
		if err := mf.check(); err != nil {
			return err
		}
		if err := mf.checkRelay(); err != nil {
			return err
		}
		if mf.rejoin && (mf.key == "" || !mesh && len(mf.join) == 0) {
			return errors.New("--rejoin needs --key (the identity of the member that comes back) and --join (a live member)")
		}
		if mf.late && (mf.rejoin || !mesh && len(mf.join) == 0) {
			return errors.New("--late needs --join (a live member), and no --rejoin")
		}
		if mf.slots != 0 && (mf.slots < mf.peers || mf.slots > 64) {
			return fmt.Errorf("--slots %d: want --peers (%d) to 64", mf.slots, mf.peers)
		}
		if !mesh && !mf.rejoin && !mf.late && !mf.mdns && !mf.showAddr && mf.relay == "" && len(mf.join) != mf.peers-1 {
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
	} else if mf.json && !mf.showAddr {
		printResultJSON(stdout, res)
	} else if res.Slot >= 0 { // it took part in a session
		fmt.Fprintf(stdout, "member %d: stepped to frame %d, final hash %s, %d stalls\n", res.Slot, res.Stepped, res.FinalHash, res.Stalls)
		for _, e := range res.Events {
			fmt.Fprintf(stdout, "  event: %s of member %d at frame %d\n", e.Type, e.Member, e.Frame)
		}
	}
	if mf.viewDone != nil {
		mf.viewDone(peerSummary(res, err))
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
	stdin := bufio.NewReader(os.Stdin) // phalanx mesh: the others' addresses, then the page's orders
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	profile, err := loadProfile(mf.profile)
	if err != nil {
		return res, err
	}
	host, err := peer.NewHost(ctx, peer.HostConfig{ListenAddrs: []string{mf.listen}, IdentityFile: mf.key, Logger: logger,
		NAT: mf.relay != "", PublicCIDRs: mf.publicCIDRs})
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
		line, err := stdin.ReadBytes('\n')
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
	g0, err := newGame(mf.sim, mf.slotCount(), mf.seed)
	if err != nil {
		return res, err
	}
	tc := peer.TransportConfig{Mode: transportMode(mf.transport), Profile: &profile, Logger: logger}
	if unimpaired(profile) {
		tc.Profile = nil // the socket as it is: no wrapper on the path
	}
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
	game := func(s *peer.Agreement) *game {
		g, err := newGame(mf.sim, mf.slotCount(), s.Seed.Uint64())
		if err != nil {
			panic(err) // the same game with another seed was built above
		}
		return g
	}
	cfg := peer.MemberConfig{
		Host: host,
		Params: peer.SessionParams{
			SessionID: mf.session, Members: mf.peers, FrameMillis: mf.frameMS,
			Sim: mf.sim, SimVersion: g0.version, Frames: mf.frames, Slots: mf.slots,
		},
		Join:         others,
		MDNS:         mf.mdns,
		Meet:         mf.meet(),
		LobbyTimeout: mf.lobbyTimeout,
		Rejoin:       mf.rejoin || mf.late,
		Spectators:   mf.spectators,
		CheckpointEvery: func() int {
			if mf.checkpointEvery <= 0 {
				return -1
			}
			return mf.checkpointEvery
		}(),
		NewSim: func(s *peer.Agreement) lockstep.Simulation {
			run.started(s, game(s))
			sim := run.g.newSim(s.Self)
			run.sim = sim // used only on the stepping goroutine
			return sim
		},
		Input:         run.input,
		Configure:     func(c *lockstep.Config) { mf.runFlags.applyTo(c, profile) },
		Transport:     tc,
		DesyncReports: mf.desyncReports,
		OnStep:        run.onStep,
		OnDatagram: func(from bucket.Slot, data []byte) {
			run.mu.Lock()
			defer run.mu.Unlock()
			_ = run.cursors.Receive(run.sessionTime(), int(from), data) // a malformed update is dropped
		},
		Logger: logger,
	}
	if mf.record != "" {
		cfg.Record = &peer.Recording{Dir: mf.record, SimConfig: func(s *peer.Agreement) []byte { return game(s).config }}
	}
	if err := run.startView(stdin, stdout, stderr); err != nil {
		return res, err
	}
	m, err := peer.Start(ctx, cfg)
	if err != nil {
		return res, err
	}
	run.m = m
	run.drive(ctx)
	st, err := m.Wait()
	for _, p := range m.DesyncReports() {
		fmt.Fprintln(stderr, "desync report written:", p)
	}
	if errors.Is(err, peer.ErrLobbyTimeout) {
		err = fmt.Errorf("gave up after --lobby-timeout %v: %w; start the members missing, check the --join addresses, or raise --lobby-timeout", mf.lobbyTimeout, err)
	}
	return run.finish(st), err
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
	so := st.Socket
	return int64(so.WrittenBytes + udpHeader*so.Written), int64(so.ReadBytes + udpHeader*so.Read), int64(so.Written)
}

// unimpaired reports whether every phase of p leaves packets alone (a
// profile file of phases without settings).
func unimpaired(p netsim.Profile) bool {
	for _, ph := range p.Phases {
		if ph.Conditions != (netsim.Conditions{}) {
			return false
		}
	}
	return true
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
