package locksteptest

import (
	"errors"
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// frozenQueue is how many datagrams a frozen member's socket holds: quic-go's
// receive queue.
const frozenQueue = 128

type commandKey struct {
	slot bucket.Slot
	seq  uint32
}

type pending struct {
	submitted time.Duration
	executed  []time.Duration // per member, -1 until executed there
}

// harness is one run in progress. What it keeps is bounded by the
// configuration, not by the run's length: the queue and the free lists by
// the events in flight (datagrams on the way, one wake-up per member,
// commands scheduled two frames ahead), cmds by the commands in flight
// (and those a killed member left unexecuted), history by its window.
type harness struct {
	cfg        Config
	net        *netsim.Network[queued] // the members' uplinks and links, and the queue of everything that happens next
	now        time.Duration
	members    []*member
	pool                               // recycled events and datagram buffers: at most the queue's largest size
	cmds       map[commandKey]*pending // commands submitted, not yet executed by every active member
	history    *history                // the members' newest frames' hashes, compared as they step
	res        *Result
	splitFrom  time.Duration // a partition is in force in [splitFrom, splitTo)
	splitTo    time.Duration
	splitGroup uint64        // the members cut off from the rest, or 0 for halves
	lastFault  time.Duration // when the newest fault was injected
	stormTo    time.Duration // a storm is in force until then, losing datagrams with probability stormLoss
	stormLoss  float64
	storms     *rng.PCG
	pkt        wire.Packet       // scratch for muting
	streams    *streamNet        // the stream transport, or nil
	coreCfg    []lockstep.Config // each member's core configuration, for a rejoin
	archive    *archive          // what members serve joiners (catchup.go), with rejoin or join faults or spectators only
	specs      *spectators       // the spectators, once they joined (spectate.go)
	doneScan   int               // the members before it finished or are inactive (done)
	win        *windows          // with Config.Windows, when they apply (window.go)
}

// Run performs one virtual run.
func Run(cfg Config) (*Result, error) {
	if cfg.Members < 1 || cfg.Members > bucket.MaxMembers {
		return nil, fmt.Errorf("locksteptest: %d members", cfg.Members)
	}
	if cfg.Frames < 1 {
		return nil, fmt.Errorf("locksteptest: %d frames", cfg.Frames)
	}
	if cfg.NewSim == nil {
		return nil, errors.New("locksteptest: NewSim is nil")
	}
	if err := cfg.Profile.Validate(); err != nil {
		return nil, fmt.Errorf("locksteptest: %w", err)
	}
	for _, f := range cfg.Faults {
		if f.Kind != FaultPartition && int(f.Slot) >= cfg.Members {
			return nil, fmt.Errorf("locksteptest: fault on member %d of %d", f.Slot, cfg.Members)
		}
		if f.Kind == FaultPerturb && cfg.Perturb == nil {
			return nil, errors.New("locksteptest: perturb fault without a Perturb function")
		}
		if f.Frame < 0 {
			return nil, fmt.Errorf("locksteptest: fault at frame %d", f.Frame)
		}
		if f.Kind == FaultJoin && cfg.Open&(1<<f.Slot) == 0 {
			return nil, fmt.Errorf("locksteptest: join into slot %d, which is not open", f.Slot)
		}
	}
	if cfg.CatchupRate <= 0 {
		cfg.CatchupRate = defaultCatchupRate
	}
	if cfg.CatchupServers <= 0 {
		cfg.CatchupServers = defaultCatchupServers
	}
	if cfg.SpectatorFanout <= 0 {
		cfg.SpectatorFanout = defaultSpectatorFanout
	}
	if cfg.Spectators < 0 || cfg.Spectators > 1000 || cfg.SpectatorDelay < 0 || cfg.SpectatorsFrom < 0 {
		return nil, fmt.Errorf("locksteptest: %d spectators, delay %v, from frame %d", cfg.Spectators, cfg.SpectatorDelay, cfg.SpectatorsFrom)
	}
	if cfg.Transport != "" && cfg.Transport != TransportDatagram && cfg.Transport != TransportStream {
		return nil, fmt.Errorf("locksteptest: unknown transport %q", cfg.Transport)
	}
	h := &harness{cfg: cfg, cmds: make(map[commandKey]*pending), history: newHistory(cfg.Members), res: &Result{Frames: cfg.Frames, Diverged: -1}}
	for _, f := range cfg.Faults {
		if f.Kind == FaultRejoin || f.Kind == FaultJoin {
			h.archive = &archive{}
		}
	}
	if cfg.Spectators > 0 {
		h.archive = &archive{}
	}
	root := rng.SeedFromUint64(cfg.Seed).PCG()
	h.net = netsim.NewNetwork[queued](cfg.Members, cfg.Profile, func(from, to int) *rng.PCG {
		return root.Derive(fmt.Sprintf("link %d->%d", from, to))
	})
	h.net.Cut = func(from, to int) bool { return h.apart(bucket.Slot(from), bucket.Slot(to)) }
	h.net.Copy = func(q queued) queued { return queued{e: h.copyEvent(q.e), to: q.to} }
	if cfg.Transport == TransportStream {
		h.streams = newStreamNet(cfg.Members, cfg.Profile, root)
	}
	sign := !cfg.Unsigned && cfg.Core.Signer == nil && cfg.Core.Verifier == nil
	seed := rng.SeedFromUint64(cfg.Seed)
	signers, keys := lockstep.Ed25519Keys(cfg.Members, seed[:])
	verifier := newMemoVerifier(keys, cfg.Members)
	for i := range cfg.Members {
		slot := bucket.Slot(i)
		cc := cfg.Core
		cc.Members, cc.Self, cc.Session, cc.Start, cc.Open = cfg.Members, slot, uint16(cfg.Seed), 0, cfg.Open
		if sign {
			cc.Signer, cc.Verifier = signers[i], verifier
		}
		if cfg.Configure != nil {
			cfg.Configure(slot, &cc)
		}
		core, err := lockstep.NewCore(cc, 0)
		if err != nil {
			return nil, err
		}
		h.coreCfg = append(h.coreCfg, cc)
		m := &member{slot: slot, core: core, sim: cfg.NewSim(slot), stepped: -1, open: cfg.Open&(1<<slot) != 0, stallsAt: -1, overhead: core.Config().Overhead}
		h.members = append(h.members, m)
	}
	if h.parallel() {
		defer h.startSteppers()()
	}
	frame := h.members[0].core.Config().Frame
	maxTime := cfg.MaxTime
	if maxTime == 0 {
		maxTime = 10*time.Duration(cfg.Frames)*frame + time.Minute
	}
	for i, f := range cfg.Faults {
		if f.Kind != FaultPerturb {
			h.schedule(time.Duration(f.Frame)*frame, &event{kind: evFault, fault: i})
		}
	}
	submits := root.Derive("submit times")
	h.storms = root.Derive("storms")
	for _, m := range h.members {
		if !m.open {
			h.wake(m, 0)
		}
	}
	// Commands are scheduled a frame at a time, just ahead of the clock, so
	// the queue stays small.
	nextCmdFrame := bucket.Frame(0)
	scheduleCommands := func(upTo bucket.Frame) {
		for ; nextCmdFrame <= upTo && cfg.Commands != nil; nextCmdFrame++ {
			for _, m := range h.members {
				for _, c := range cfg.Commands(m.slot, nextCmdFrame) {
					at := time.Duration(nextCmdFrame)*frame + time.Duration(submits.Uint64N(uint64(frame)))
					e := h.newEvent()
					e.kind, e.to, e.data = evSubmit, m.slot, c
					h.schedule(at, e)
				}
			}
		}
	}
	if h.win = h.windowsFor(frame); h.win != nil {
		defer h.win.countOneWays(h.res) // after the workers' goroutines end
		defer h.win.running.Wait()
	}
	for {
		scheduleCommands(bucket.Frame(h.now/frame) + 2)
		if h.specs == nil && cfg.Spectators > 0 && h.now >= time.Duration(cfg.SpectatorsFrom)*frame {
			h.addSpectators()
		}
		if h.done() {
			break
		}
		if h.win != nil {
			ran, done := h.window(maxTime, func(now time.Duration) { scheduleCommands(bucket.Frame(now/frame) + 2) })
			if done {
				break
			}
			if ran {
				continue
			}
		}
		at, q, ok := h.net.Pop()
		e := q.e
		if !ok {
			return h.res, errors.New("locksteptest: event queue ran dry")
		}
		h.now = at
		if h.now > maxTime {
			h.finish()
			return h.res, fmt.Errorf("%w: %v virtual, slowest member at frame %d of %d", ErrTimeout, maxTime, h.slowest(), cfg.Frames)
		}
		if e.kind == evFault {
			h.settleAll()
			h.inject(cfg.Faults[e.fault])
			h.recycle(e)
			continue
		}
		if e.kind == evSpectate {
			h.settleAll()
			h.spectate(int(e.gen))
			h.recycle(e)
			continue
		}
		m := h.members[e.to]
		h.settleDue(m)
		switch m.fate(h.now, e, m.active()) {
		case holdIt:
			h.schedule(m.frozen, e)
			continue
		case loseIt:
			h.res.Lost++
			h.recycle(e)
			continue
		case dropIt:
			h.recycle(e)
			continue
		}
		switch e.kind {
		case evDeliver:
			h.res.addOneWay(h.now-e.sent, h.cfg.KeepSamples)
			if h.cfg.OnReceive != nil {
				h.cfg.OnReceive(h.now, e.from, e.to, e.data)
			}
			m.core.Receive(h.now, e.from, e.data)
		case evCatchup:
			h.catchup(m)
		case evSegment, evAck, evRTO:
			if !h.streamEvent(m, e) {
				h.recycle(e)
				continue
			}
		case evSubmit:
			if m.catching {
				break // its player plays once its game has caught up
			}
			if _, err := m.core.Submit(h.now, e.data); err != nil {
				if !errors.Is(err, lockstep.ErrClosed) {
					m.fail(err)
				}
			} else {
				seq := uint32(m.core.Stats().Submitted - 1)
				p := &pending{submitted: h.now, executed: make([]time.Duration, cfg.Members)}
				for i := range p.executed {
					p.executed[i] = -1
				}
				h.cmds[commandKey{m.slot, seq}] = p
			}
		}
		h.ready(m)
		h.recycle(e)
	}
	h.finish()
	return h.res, nil
}

// done reports whether the run is over: every active member stepped the
// last frame. It is asked once an event, so it scans the members from the
// first it found unfinished: without a fault a member that finished or is
// no longer active stays so, and inject scans them all again.
func (h *harness) done() bool {
	if !h.spectatorsDone() {
		return false
	}
	for ; h.doneScan < len(h.members); h.doneScan++ {
		if m := h.members[h.doneScan]; m.active() && m.stepped < bucket.Frame(h.cfg.Frames-1) {
			return false
		}
	}
	return true
}

func (h *harness) slowest() bucket.Frame {
	s := bucket.NoFrame
	for _, m := range h.members {
		if m.active() {
			s = min(s, m.stepped)
		}
	}
	return s
}

func (h *harness) wake(m *member, at time.Duration) {
	m.wakeGen++
	m.wakeAt = at
	e := h.newEvent()
	e.kind, e.to, e.gen = evWake, m.slot, m.wakeGen
	h.schedule(at, e)
}

// ready runs one Ready of m and carries out its work.
func (h *harness) ready(m *member) {
	rd := m.core.Ready(h.now)
	for _, d := range rd.Datagrams {
		h.transmit(m, d)
	}
	for _, b := range rd.Buckets {
		if m.catching {
			m.holdLive(b)
		} else {
			h.step(m, b)
		}
	}
	if h.cfg.OnStatement != nil {
		for _, s := range rd.Statements {
			h.cfg.OnStatement(m.slot, s.Member, s.Statement)
		}
	}
	m.events = append(m.events, rd.Events...)
	if h.cfg.OnEvent != nil {
		for _, e := range rd.Events {
			h.cfg.OnEvent(m.slot, e)
		}
	}
	if m.catching && !m.transfer && m.core.AdmittedAt() >= 0 {
		h.startCatchup(m)
	}
	if m.core.Left() {
		m.left = true
		return
	}
	if m.core.Stopped() {
		m.stopped = true
		h.waited(m)
		return
	}
	if rd.Deadline != m.wakeAt || m.wakeGen == 0 {
		h.wake(m, rd.Deadline)
	}
}

func (h *harness) step(m *member, b lockstep.Bucket) {
	if b.Frame != m.stepped+1 {
		panic(fmt.Sprintf("locksteptest: member %d got frame %d after %d", m.slot, b.Frame, m.stepped))
	}
	h.waited(m)
	if m.stepper != nil {
		h.dispatch(m, b)
		return
	}
	m.sim.Step(b.Frame, b.Commands)
	m.stepped = b.Frame
	m.sampleHeld(b.Frame)
	for _, f := range h.cfg.Faults {
		if f.Kind == FaultPerturb && f.Slot == m.slot && f.Frame == b.Frame {
			h.cfg.Perturb(m.slot, m.sim)
		}
	}
	input := lockstep.InputHash(b.Frame, b.Commands)
	state := m.sim.Hash()
	h.history.step(m.slot, b.Frame, frameHashes{input: input, state: state})
	h.keep(m, b, state)
	h.serve(m, b)
	if h.cfg.StallTo > 0 {
		h.stallWindow(m, b.Frame)
	}
	m.handOver(b.Frame, state, h.cfg.Frames)
	if h.cfg.OnStep != nil {
		h.cfg.OnStep(m.slot, b, m.sim)
	}
	h.executedBy(m, b)
}

// waited records how long m went without stepping a frame, counting from
// frame 0, from the end of its last freeze and from the newest fault.
func (h *harness) waited(m *member) {
	m.waited(h.now, h.lastFault)
}
