package peer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
)

// Member is one member of a session, from the lobby to the end. Start
// returns one at once and runs it in the background; Run runs one to the
// end. Every method is safe for concurrent use and none blocks but Wait and
// Close.
type Member struct {
	cfg    MemberConfig
	log    *slog.Logger
	phase  atomic.Int32
	cancel context.CancelFunc
	done   chan struct{} // closed when the member has torn everything down
	ended  chan struct{} // closed when the last frame is stepped
	stop   chan struct{} // closed by Close
	once   sync.Once     // closes ended
	stopMu sync.Once     // closes stop

	mu      sync.Mutex
	sess    *Agreement
	tr      *Transport
	ls      *lockstep.Session
	rec     *recorder
	status  Status
	events  []lockstep.Event
	handed  []lockstep.Bucket // pull mode: buckets handed out and not yet reported
	paths   map[peer.ID]Path  // Meet: how each other member was reached
	lastCmd []bucket.Command
	reports []string // desync reports written (one per desync found: at most one)
	// drawn is the simulation NewSim built, used only on the goroutine
	// that steps it (a desync report draws it).
	drawn lockstep.Simulation
	// states keeps drawn's recent states when it is a Snapshotter and the
	// member writes desync reports (desyncstates.go); hashInterval is the
	// core's.
	states       *replay.StateRing
	hashInterval int
	ctx          context.Context // the member's, ended by run
	fetches      sync.WaitGroup  // desync reports waiting for the other side's states

	arch      atomic.Pointer[archive] // what it serves members that come back; nil until playing
	gone      atomic.Uint64           // slots dropped or left (bit i: slot i), from the events
	inputFrom atomic.Int64            // the first frame the Input hook is called for
	admission *Admission              // a member that came back, once caught up
	// watchers are the spectators this member began serving, to record in
	// its replay at the next frame it steps (under mu; only when it records).
	watchers []peer.ID
}

// Run runs a member to the end of its session: the lobby, the session, the
// leave and the teardown, in that order. It returns the final status, with
// an error when the member failed or ctx ended first.
func Run(ctx context.Context, cfg MemberConfig) (Status, error) {
	m, err := Start(ctx, cfg)
	if err != nil {
		return Status{Phase: PhaseFailed, Slot: -1, Frame: -1, Err: err}, err
	}
	return m.Wait()
}

// Start checks cfg and starts a member in the background: it meets the
// others in the lobby, then plays. It returns at once; follow the member
// with Status, and end it with Close (or ctx, which fails it).
func Start(ctx context.Context, cfg MemberConfig) (*Member, error) {
	switch {
	case cfg.Host == nil:
		return nil, fmt.Errorf("%w: no host", ErrInvalidMember)
	case cfg.Rejoin && len(cfg.Join) == 0:
		return nil, fmt.Errorf("%w: a member that comes back needs a live member's address to join", ErrInvalidMember)
	case !cfg.Rejoin && !cfg.MDNS && cfg.Meet == nil && len(cfg.Join) != cfg.Params.Members-1:
		return nil, fmt.Errorf("%w: %d members need %d addresses to join (or MDNS), got %d", ErrInvalidMember, cfg.Params.Members, cfg.Params.Members-1, len(cfg.Join))
	}
	if err := cfg.Params.withDefaults().validate(); err != nil {
		return nil, err
	}
	if cfg.LobbyTimeout <= 0 {
		cfg.LobbyTimeout = DefaultLobbyTimeout
	}
	log := orDiscard(cfg.Logger)
	ctx, cancel := context.WithCancel(ctx)
	m := &Member{
		cfg: cfg, log: log, cancel: cancel,
		done: make(chan struct{}), ended: make(chan struct{}), stop: make(chan struct{}),
		status: Status{Phase: PhaseLobby, Slot: -1, Frame: -1},
		ctx:    ctx,
	}
	go m.run(ctx)
	return m, nil
}

// run is the member's goroutine: it owns the transport and the session.
func (m *Member) run(ctx context.Context) {
	defer close(m.done)
	defer m.cancel()
	err := m.play(ctx)
	m.fetches.Wait() // bounded by desyncStatesTimeout
	select {
	case <-m.stop:
		if errors.Is(err, context.Canceled) {
			err = nil // closed in the lobby: nothing was played
		}
	default:
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ls != nil {
		m.status.Stats = m.ls.Stats()
	}
	if m.rec != nil {
		if rerr := m.rec.close(m.status); err == nil && rerr != nil {
			err = rerr
		}
	}
	m.status.Done = true
	if err != nil {
		m.status.Phase, m.status.Err = PhaseFailed, err
		m.phase.Store(int32(PhaseFailed))
		return
	}
	m.status.Phase = PhaseEnded
	m.phase.Store(int32(PhaseEnded))
}

// play meets the others, plays the session and leaves it.
func (m *Member) play(ctx context.Context) error {
	if m.cfg.Rejoin {
		return m.rejoin(ctx)
	}
	sess, err := m.lobby(ctx)
	if err != nil {
		return err
	}
	cc, clock := sess.CoreConfig()
	// The members sign their command streams with their identities
	// (sign.go); Configure may turn it off.
	cc.Signer = m.cfg.Host.StatementSigner()
	if cc.Verifier, err = sess.StatementVerifier(); err != nil {
		m.log.Warn("peer: members' statements cannot be checked", "err", err)
		cc.Signer, cc.Verifier = nil, nil
	}
	if m.cfg.Configure != nil {
		m.cfg.Configure(&cc)
	}
	cc.Logger = m.log
	tcfg := m.cfg.Transport
	if tcfg.Logger == nil {
		tcfg.Logger = m.log
	}
	tr, err := NewTransport(ctx, m.cfg.Host, sess, tcfg)
	if err != nil {
		return err
	}
	defer tr.Close()
	var rec *recorder
	if m.cfg.Record != nil {
		if rec, err = m.cfg.Record.start(sess, m.cfg.Params.Sim, m.cfg.Params.SimVersion); err != nil {
			return err
		}
		m.mu.Lock()
		m.rec = rec // closed by run, whatever happens next
		m.mu.Unlock()
	}
	var sim lockstep.Simulation
	if m.cfg.NewSim != nil {
		m.drawn = m.cfg.NewSim(sess)
		sim = &endedSim{inner: m.drawn, end: m.end()}
		if _, ok := m.drawn.(lockstep.Snapshotter); ok && (m.cfg.DesyncReports != "" || m.cfg.Record != nil) {
			m.mu.Lock()
			m.states, m.hashInterval = replay.NewStateRing(0), cc.HashInterval
			m.mu.Unlock()
			proto := desyncStatesProtocol(sess.ID)
			m.cfg.Host.h.SetStreamHandler(proto, m.serveStates)
			defer m.cfg.Host.h.RemoveStreamHandler(proto)
		}
	}
	ls, err := lockstep.NewSession(lockstep.SessionConfig{
		Core: cc, Sim: sim, Transport: tr, Clock: clock, Logger: m.log,
		OnStep:      m.onStep,
		OnEvent:     m.onEvent,
		OnStatement: m.onStatement(cc.Session),
		OnDatagram:  m.cfg.OnDatagram,
	})
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.sess, m.tr, m.ls = sess, tr, ls
	m.status.Slot = int(sess.Self)
	m.mu.Unlock()
	m.phase.Store(int32(PhasePlaying))
	m.gone.Store(sess.Open()) // open slots count as gone until admitted
	defer m.serveCatchup(ctx, sess, tr, nil)()

	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var runErr error
	runDone := make(chan struct{})
	go func() {
		runErr = ls.Run(runCtx)
		close(runDone)
	}()
	return m.playOut(ctx, sess, ls, stopRun, runDone, &runErr)
}

// playOut feeds the session (drive) until its last frame, Close or its
// end, leaves at an announced frame (so that the others need not wait out
// a timeout) waiting a little for their acknowledgements, and stops the
// run: runDone is closed once ls.Run has returned *runErr. It returns the
// member's error, if any.
func (m *Member) playOut(ctx context.Context, sess *Agreement, ls *lockstep.Session, stopRun func(), runDone <-chan struct{}, runErr *error) error {
	err := m.drive(ctx, sess, runDone)
	if err == nil {
		leaveCtx, cancel := context.WithTimeout(ctx, leaveTimeout)
		if ls.Close(leaveCtx) != nil {
			stopRun()
		}
		cancel()
	}
	stopRun()
	<-runDone
	switch {
	case errors.Is(err, errRunEnded):
		err = *runErr
		if err == nil {
			err = errors.New("peer: the session ended before its last frame")
		}
	case err == nil && *runErr != nil && !errors.Is(*runErr, context.Canceled):
		err = *runErr
	}
	return err
}

// errRunEnded tells play that the session's Run returned on its own.
var errRunEnded = errors.New("peer: the session's run ended")

// lobby finds the other members and agrees on the session with them.
func (m *Member) lobby(ctx context.Context) (*Agreement, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, m.cfg.LobbyTimeout, ErrLobbyTimeout)
	defer cancel()
	others := m.cfg.Join
	var err error
	switch {
	case m.cfg.Meet != nil:
		var paths map[peer.ID]Path
		others, paths, err = Meet(ctx, m.cfg.Host, *m.cfg.Meet, m.cfg.Params.Members)
		m.mu.Lock()
		m.paths = paths
		m.mu.Unlock()
	case m.cfg.MDNS:
		others, err = DiscoverMDNS(ctx, m.cfg.Host, "phalanx-"+m.cfg.Params.SessionID, m.cfg.Params.Members-1)
	}
	var sess *Agreement
	if err == nil {
		sess, err = Join(ctx, m.cfg.Host, m.cfg.Params, others)
	}
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrLobbyTimeout) && !errors.Is(err, ErrLobbyTimeout) {
			return nil, fmt.Errorf("lobby: %w: %v", cause, err)
		}
		return nil, fmt.Errorf("lobby: %w", err)
	}
	return sess, nil
}

// end returns the first frame past the session, or the largest frame.
func (m *Member) end() bucket.Frame {
	if m.cfg.Params.Frames > 0 {
		return bucket.Frame(m.cfg.Params.Frames)
	}
	return bucket.Frame(1<<62 - 1)
}

// maxWatchersPending bounds the spectators waiting to be recorded: past
// it (a crowd arriving within one frame) the rest go unrecorded.
const maxWatchersPending = 256

// onSpectator notes a spectator this member began serving, for its
// replay. Safe for concurrent use (catch-up streams call it).
func (m *Member) onSpectator(id peer.ID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rec != nil && len(m.watchers) < maxWatchersPending {
		m.watchers = append(m.watchers, id)
	}
}

// onStep takes a stepped frame, in push mode from Run's goroutine and in
// pull mode from Stepped's caller.
func (m *Member) onStep(f bucket.Frame, cmds []bucket.Command, sim lockstep.Simulation, hash uint64) {
	if f >= m.end() {
		return
	}
	if arch := m.arch.Load(); arch != nil {
		var snap lockstep.Snapshotter
		if s, ok := m.drawn.(lockstep.Snapshotter); ok && sim != nil {
			snap = s
		}
		arch.keep(f, cmds, hash, snap)
	}
	m.mu.Lock()
	m.status.Frame, m.status.Hash = f, hash
	if m.states != nil {
		m.states.Keep(f, m.drawn.(lockstep.Snapshotter), hash)
	}
	if m.rec != nil {
		for _, id := range m.watchers {
			m.rec.spectator(f, id)
		}
		m.watchers = m.watchers[:0]
		m.rec.step(f, cmds, hash, func() []lockstep.Section { return sectionsOf(sim) })
	}
	last := f == m.end()-1
	if last {
		m.status.Completed = true
	}
	m.mu.Unlock()
	if m.cfg.OnStep != nil {
		m.cfg.OnStep(f, cmds, hash)
	}
	if last {
		m.once.Do(func() { close(m.ended) })
	}
}

// onStatement returns the function that records the statements the core
// newly holds, signed under session tag tag, from Run's goroutine.
func (m *Member) onStatement(tag uint16) func(lockstep.StatementOf) {
	return func(s lockstep.StatementOf) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.rec != nil {
			m.rec.statement(tag, s)
		}
	}
}

// onEvent takes an event of the session, from Run's goroutine.
func (m *Member) onEvent(e lockstep.Event) {
	if e.Frame >= m.end() || (e.Type == lockstep.EventLeave && e.LastFrame >= m.end()-1) {
		return // past the end: the members leaving once the session is over
	}
	switch e.Type {
	case lockstep.EventDrop, lockstep.EventLeave:
		m.gone.Or(1 << e.Member)
	case lockstep.EventRejoin, lockstep.EventJoin:
		m.gone.And(^(uint64(1) << e.Member))
	}
	m.mu.Lock()
	if len(m.events) < maxEvents {
		m.events = append(m.events, e)
	}
	if m.rec != nil {
		if e.Type == lockstep.EventJoin && m.sess != nil {
			// The replay names who took the open slot: a verifier checks
			// its statements with that identity's key.
			e.Detail = m.sess.Member(e.Member).String()
		}
		m.rec.event(e)
	}
	if e.Type == lockstep.EventDesync {
		m.desyncReport(e)
	}
	m.mu.Unlock()
	if m.cfg.OnEvent != nil {
		m.cfg.OnEvent(e)
	}
}

// maxEvents bounds the events a member keeps for Events.
const maxEvents = 1024

// playing returns the running session, or nil.
func (m *Member) playing() *lockstep.Session {
	if m.Phase() != PhasePlaying {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ls
}

// Submit queues one of this member's commands. It never blocks; it returns
// ErrNotPlaying outside the session and the errors of
// lockstep.Session.Submit (a full queue, a command too large).
func (m *Member) Submit(payload []byte) error {
	ls := m.playing()
	if ls == nil {
		return ErrNotPlaying
	}
	return ls.Submit(payload)
}

// Broadcast sends a datagram of the game's own to every member (see
// lockstep.Session.Broadcast). It never blocks.
func (m *Member) Broadcast(data []byte) error {
	ls := m.playing()
	if ls == nil {
		return ErrNotPlaying
	}
	return ls.Broadcast(data)
}

// Alpha returns where the frame clock stands between the newest stepped
// frame and the next, for interpolation (see lockstep.Session.Alpha); 0
// outside the session.
func (m *Member) Alpha() float64 {
	ls := m.playing()
	if ls == nil {
		return 0
	}
	return ls.Alpha()
}

// Close ends the member: it leaves the session at an announced frame, tears
// everything down and waits until it is done (or ctx ends). Calling it again
// only waits. A member that ended on its own needs no Close.
func (m *Member) Close(ctx context.Context) error {
	m.stopMu.Do(func() {
		if m.Phase() == PhaseLobby {
			m.cancel() // nothing to leave yet
		}
		close(m.stop)
	})
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed once the member has finished and torn everything down.
func (m *Member) Done() <-chan struct{} { return m.done }

// Wait waits until the member is done and returns its final status, with
// Err as error when it failed.
func (m *Member) Wait() (Status, error) {
	<-m.done
	st := m.Status()
	return st, st.Err
}
