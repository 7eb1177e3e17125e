package lockstep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// ErrTransportClosed is returned by Session.Run when the transport closes
// its Incoming channel while the session runs.
var ErrTransportClosed = errors.New("lockstep: transport closed")

// ErrBusy is returned by Session.Broadcast when the session's goroutine has
// not yet taken the datagrams broadcast before, and by Session.Submit when
// SubmitQueue commands are already waiting for it.
var ErrBusy = errors.New("lockstep: session busy")

// DefaultSubmitQueue is how many submitted commands may wait for Run's
// goroutine before Submit refuses more (SessionConfig.SubmitQueue).
const DefaultSubmitQueue = 256

// peerStatsEvery is how often Session refreshes its per-member figures.
const peerStatsEvery = 250 * time.Millisecond

// SessionConfig configures a Session.
type SessionConfig struct {
	// Core configures the engine. Core.Start is the session clock's time at
	// which frame 0 begins (see Clock).
	Core Config
	// Sim is stepped with every bucket, from Run's goroutine only. Nil
	// selects pull mode: Run steps nothing, and the caller takes the ready
	// buckets with Session.Ready, steps them on its own goroutine and
	// reports each frame's hash with Session.Stepped.
	Sim Simulation
	// Transport carries datagrams to and from the other members.
	Transport Transport
	// Clock returns the session clock: a monotonic time.Duration. Nil uses
	// the time since NewSession, from the process's monotonic clock.
	Clock func() time.Duration
	// OnStep, when set, is called from Run's goroutine after each frame is
	// stepped, with the simulation and the state hash just computed: the
	// place to record. Not called in pull mode.
	OnStep func(frame bucket.Frame, commands []bucket.Command, sim Simulation, hash uint64)
	// OnEvent, when set, is called from Run's goroutine for every event.
	OnEvent func(Event)
	// OnStatement, when set, is called from Run's goroutine with every
	// statement the core newly holds (Ready.Statements), after the frames
	// of the same Ready were stepped: the place to record them.
	OnStatement func(StatementOf)
	// OnDatagram, when set, is called from Run's goroutine with every
	// received datagram that is not a lockstep datagram (its first byte,
	// the kind, is not wire.KindLockstep): the game's own traffic outside
	// the lockstep agreement, such as dead-reckoned entity updates (kind
	// wire.KindEntity). data is only valid during the call. Without it such
	// datagrams are counted as malformed.
	OnDatagram func(from bucket.Slot, data []byte)
	// Logger receives the session's diagnostics; nil discards them.
	Logger *slog.Logger
	// SubmitQueue bounds the commands Submit queues for Run's goroutine
	// (default DefaultSubmitQueue).
	SubmitQueue int
}

// SessionStats is a snapshot of a running session.
type SessionStats struct {
	Core     Stats
	Peers    []PeerStats
	Hash     uint64       // state hash after the newest frame stepped
	Stepped  bucket.Frame // newest frame stepped, or -1
	SendErrs int64        // datagrams the transport refused
}

type broadcastReq struct {
	data []byte
}

// steppedReport is a frame's hash reported by the caller in pull mode.
type steppedReport struct {
	frame    bucket.Frame
	hash     uint64
	sections []Section
}

// Session runs a Core against a real clock and a Transport: Run drives it
// from one goroutine, stepping the simulation with every bucket (or, in
// pull mode, handing the buckets to the caller). Submit, Broadcast, Ready,
// Stepped, Alpha, Stats and Close are safe for concurrent use and never
// wait for Run, but for Close.
type Session struct {
	cfg     SessionConfig
	core    *Core
	clock   func() time.Duration
	submits chan []byte       // SubmitQueue waiting commands; Submit returns ErrBusy past them
	full    [][]byte          // at most SubmitQueue commands refused for a full frame, submitted again on the next Ready (in order, before newer ones)
	casts   chan broadcastReq // 64 waiting broadcasts; Broadcast returns ErrBusy past them
	leave   chan struct{}
	done    chan struct{}
	wake    chan struct{} // pull mode: a Stepped report is waiting
	once    sync.Once
	started sync.Once

	mu      sync.Mutex
	stats   SessionStats
	err     error           // why Run returned, once it has
	ready   []Bucket        // pull mode: buckets not yet taken by Ready
	reports []steppedReport // pull mode: hashes not yet handed to the core
	clockAt time.Duration   // session clock at the newest Ready of the core
	frameAt time.Duration   // the core's frame clock then
}

// NewSession returns a session ready to Run. It returns an error wrapping
// ErrInvalidConfig for an invalid configuration (or without a transport).
func NewSession(cfg SessionConfig) (*Session, error) {
	if cfg.Transport == nil {
		return nil, fmt.Errorf("%w: a session needs a transport", ErrInvalidConfig)
	}
	clock := cfg.Clock
	if clock == nil {
		origin := time.Now()
		clock = func() time.Duration { return time.Since(origin) }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Core.Logger == nil {
		cfg.Core.Logger = cfg.Logger
	}
	core, err := NewCore(cfg.Core, clock())
	if err != nil {
		return nil, err
	}
	if cfg.SubmitQueue <= 0 {
		cfg.SubmitQueue = DefaultSubmitQueue
	}
	s := &Session{
		cfg:     cfg,
		core:    core,
		clock:   clock,
		submits: make(chan []byte, cfg.SubmitQueue),
		casts:   make(chan broadcastReq, 64),
		leave:   make(chan struct{}),
		done:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
	}
	s.stats.Stepped = -1
	return s, nil
}

// Run drives the session until ctx is done (returning ctx's error), the
// member has left after Close (returning nil), the member stopped because
// the others dropped it or it ended in a minority (returning an error
// wrapping ErrStopped, see Core.Err), or the transport closes (returning
// ErrTransportClosed). It must be called once.
func (s *Session) Run(ctx context.Context) error {
	ran := false
	s.started.Do(func() { ran = true })
	if !ran {
		return errors.New("lockstep: Session.Run called twice")
	}
	err := s.run(ctx)
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	close(s.done)
	return err
}

func (s *Session) run(ctx context.Context) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	var sections []Section
	incoming := s.cfg.Transport.Incoming()
	leave := s.leave
	var peersAt time.Duration
	for {
		s.resubmit()
		now := s.clock()
		rd := s.core.Ready(now)
		var sendErrs int64
		for _, d := range rd.Datagrams {
			if err := s.cfg.Transport.Send(d.To, d.Data); err != nil {
				sendErrs++
			}
		}
		var hash uint64
		if s.cfg.Sim == nil {
			if err := s.handOver(rd.Buckets); err != nil {
				return err
			}
		}
		for _, b := range rd.Buckets {
			if s.cfg.Sim == nil {
				break
			}
			hash, sections = StepBucket(s.core, s.cfg.Sim, b, sections)
			if s.cfg.OnStep != nil {
				s.cfg.OnStep(b.Frame, b.Commands, s.cfg.Sim, hash)
			}
		}
		for _, e := range rd.Events {
			if s.cfg.OnEvent != nil {
				s.cfg.OnEvent(e)
			}
		}
		if s.cfg.OnStatement != nil {
			for _, st := range rd.Statements {
				s.cfg.OnStatement(st)
			}
		}
		s.mu.Lock()
		s.clockAt, s.frameAt = now, s.core.position(now)
		s.stats.Core = s.core.Stats()
		if now-peersAt >= peerStatsEvery || s.stats.Peers == nil {
			// Per-member figures sort their sample windows: not every Ready.
			s.stats.Peers = s.core.AppendPeerStats(s.stats.Peers[:0])
			peersAt = now
		}
		s.stats.SendErrs += sendErrs
		if n := len(rd.Buckets); n > 0 && s.cfg.Sim != nil {
			s.stats.Stepped, s.stats.Hash = rd.Buckets[n-1].Frame, hash
		}
		s.mu.Unlock()
		if s.core.Left() {
			return nil
		}
		if err := s.core.Err(); err != nil {
			return err // the others dropped us, or we are in a minority
		}
		wait := rd.Deadline - s.clock()
		if wait < 0 {
			wait = 0
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case in, ok := <-incoming:
			if !ok {
				return ErrTransportClosed
			}
			s.receive(in)
			// Take whatever else has arrived before the next Ready.
			for drained := false; !drained; {
				select {
				case in, ok := <-incoming:
					if !ok {
						return ErrTransportClosed
					}
					s.receive(in)
				default:
					drained = true
				}
			}
		case c := <-s.casts:
			for slot := range s.cfg.Core.Members {
				to := bucket.Slot(slot)
				if to != s.core.Self() && s.core.Listening(to) {
					if err := s.cfg.Transport.Send(to, c.data); err != nil {
						s.mu.Lock()
						s.stats.SendErrs++
						s.mu.Unlock()
					}
				}
			}
		case payload := <-s.submits:
			s.submit(payload)
		case <-s.wake:
			s.takeReports()
		case <-leave:
			leave = nil // announced once
			if _, err := s.core.Leave(s.clock()); err != nil {
				return err
			}
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// receive hands one inbound datagram to the core, or to OnDatagram when it
// is not a lockstep datagram.
func (s *Session) receive(in Inbound) {
	if len(in.Data) > 0 && wire.Kind(in.Data[0]) != wire.KindLockstep && s.cfg.OnDatagram != nil {
		if s.core.Listening(in.From) {
			s.cfg.OnDatagram(in.From, in.Data)
		}
		return
	}
	s.core.Receive(s.clock(), in.From, in.Data)
}

// Broadcast sends a datagram of the game's own (not a lockstep datagram: its
// first byte must not be wire.KindLockstep) to every member the session
// still listens to, unreliably, outside the lockstep agreement. data is
// copied. It does not block; when Run is behind it drops the datagram and
// returns ErrBusy. It returns ErrClosed once the session is over.
func (s *Session) Broadcast(data []byte) error {
	if len(data) == 0 || wire.Kind(data[0]) == wire.KindLockstep {
		return fmt.Errorf("%w: Broadcast of an empty or lockstep datagram", ErrInvalidConfig)
	}
	if len(data) > wire.MaxDatagramSize {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrCommandTooLarge, len(data), wire.MaxDatagramSize)
	}
	select {
	case <-s.done:
		return ErrClosed
	default:
	}
	select {
	case s.casts <- broadcastReq{data: append([]byte(nil), data...)}:
		return nil
	default:
		return ErrBusy
	}
}

// Submit queues a command for Run's goroutine, which stamps it with the
// frame it executes on and sends it to every member. It never blocks: it
// returns ErrBusy when SubmitQueue commands are already waiting, an error
// wrapping ErrCommandTooLarge for a payload over the core's MaxCommandSize,
// and ErrClosed once the session is over. payload is copied. A command
// the core refuses later (the member is leaving) is counted in
// Stats().Core.Refused.
func (s *Session) Submit(payload []byte) error {
	if len(payload) > s.core.cfg.MaxCommandSize {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrCommandTooLarge, len(payload), s.core.cfg.MaxCommandSize)
	}
	select {
	case <-s.done:
		return ErrClosed
	default:
	}
	select {
	case s.submits <- append([]byte(nil), payload...):
		return nil
	default:
		return fmt.Errorf("%w: %d commands already queued", ErrBusy, cap(s.submits))
	}
}

// submit hands one queued command to the core. One refused because its
// frame is full (ErrFrameFull) waits for a later frame, behind any that
// wait already, up to SubmitQueue of them.
func (s *Session) submit(payload []byte) {
	if len(s.full) > 0 {
		s.hold(payload)
		return
	}
	if _, err := s.core.Submit(s.clock(), payload); errors.Is(err, ErrFrameFull) {
		s.hold(payload)
	} else if err != nil {
		s.cfg.Logger.Debug("lockstep: queued command refused", "err", err)
	}
}

// hold keeps a command for a later frame, or refuses it when SubmitQueue
// commands wait already.
func (s *Session) hold(payload []byte) {
	if len(s.full) >= cap(s.submits) {
		s.core.stats.Refused++
		s.cfg.Logger.Warn("lockstep: queued command refused: frames full and the queue too")
		return
	}
	s.full = append(s.full, payload)
}

// resubmit submits again, in order, the commands that waited for a frame
// with room.
func (s *Session) resubmit() {
	n := 0
	for n < len(s.full) {
		if _, err := s.core.Submit(s.clock(), s.full[n]); errors.Is(err, ErrFrameFull) {
			break
		} else if err != nil {
			s.cfg.Logger.Debug("lockstep: queued command refused", "err", err)
		}
		n++
	}
	if n > 0 {
		s.full = append(s.full[:0], s.full[n:]...)
	}
}

// Stats returns a snapshot of the session's counters and measurements.
func (s *Session) Stats() SessionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Peers = append([]PeerStats(nil), s.stats.Peers...)
	return st
}

// Close leaves the session at an announced frame (see Core.Leave) and waits
// until Run has returned or ctx is done. Calling it again only waits.
func (s *Session) Close(ctx context.Context) error {
	s.once.Do(func() {
		select {
		case s.leave <- struct{}{}:
		case <-s.done:
		case <-ctx.Done():
		}
	})
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
