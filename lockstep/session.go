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
// not yet taken the datagrams broadcast before.
var ErrBusy = errors.New("lockstep: session busy")

// peerStatsEvery is how often Session refreshes its per-member figures.
const peerStatsEvery = 250 * time.Millisecond

// SessionConfig configures a Session.
type SessionConfig struct {
	// Core configures the engine. Core.Start is the session clock's time at
	// which frame 0 begins (see Clock).
	Core Config
	// Sim is stepped with every bucket, from Run's goroutine only.
	Sim Simulation
	// Transport carries datagrams to and from the other members.
	Transport Transport
	// Clock returns the session clock: a monotonic time.Duration. Nil uses
	// the time since NewSession, from the process's monotonic clock.
	Clock func() time.Duration
	// OnStep, when set, is called from Run's goroutine after each frame is
	// stepped, with the simulation: the place to render or record.
	OnStep func(frame bucket.Frame, commands []bucket.Command, sim Simulation)
	// OnEvent, when set, is called from Run's goroutine for every event.
	OnEvent func(Event)
	// OnDatagram, when set, is called from Run's goroutine with every
	// received datagram that is not a lockstep datagram (its first byte,
	// the kind, is not wire.KindLockstep): the game's own traffic outside
	// the lockstep agreement, such as dead-reckoned entity updates (kind
	// wire.KindEntity). data is only valid during the call. Without it such
	// datagrams are counted as malformed.
	OnDatagram func(from bucket.Slot, data []byte)
	// Logger receives the session's diagnostics; nil discards them.
	Logger *slog.Logger
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

type submitReq struct {
	payload []byte
	reply   chan submitReply
}

type submitReply struct {
	frame bucket.Frame
	err   error
}

// Session runs a Core against a real clock and a Transport: Run drives it
// from one goroutine, stepping the simulation with every bucket. Submit,
// Stats and Close are safe for concurrent use.
type Session struct {
	cfg     SessionConfig
	core    *Core
	clock   func() time.Duration
	submits chan submitReq    // unbuffered
	casts   chan broadcastReq // 64 waiting broadcasts; Broadcast returns ErrBusy past them
	leave   chan struct{}
	done    chan struct{}
	once    sync.Once
	started sync.Once

	mu    sync.Mutex
	stats SessionStats
}

// NewSession returns a session ready to Run. It returns an error wrapping
// ErrInvalidConfig for an invalid configuration.
func NewSession(cfg SessionConfig) (*Session, error) {
	if cfg.Sim == nil || cfg.Transport == nil {
		return nil, fmt.Errorf("%w: a session needs a simulation and a transport", ErrInvalidConfig)
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
	s := &Session{
		cfg:     cfg,
		core:    core,
		clock:   clock,
		submits: make(chan submitReq),
		casts:   make(chan broadcastReq, 64),
		leave:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	s.stats.Stepped = -1
	return s, nil
}

// Run drives the session until ctx is done (returning ctx's error), the
// member has left after Close (returning nil), or the transport closes
// (returning ErrTransportClosed). It must be called once.
func (s *Session) Run(ctx context.Context) error {
	ran := false
	s.started.Do(func() { ran = true })
	if !ran {
		return errors.New("lockstep: Session.Run called twice")
	}
	defer close(s.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	var sections []Section
	incoming := s.cfg.Transport.Incoming()
	leave := s.leave
	var peersAt time.Duration
	for {
		now := s.clock()
		rd := s.core.Ready(now)
		var sendErrs int64
		for _, d := range rd.Datagrams {
			if err := s.cfg.Transport.Send(d.To, d.Data); err != nil {
				sendErrs++
			}
		}
		var hash uint64
		for _, b := range rd.Buckets {
			s.cfg.Sim.Step(b.Frame, b.Commands)
			hash = s.cfg.Sim.Hash()
			sections = sections[:0]
			if sh, ok := s.cfg.Sim.(SectionHasher); ok {
				sections = sh.SectionHashes(sections)
			}
			s.core.Stepped(b.Frame, hash, sections)
			if s.cfg.OnStep != nil {
				s.cfg.OnStep(b.Frame, b.Commands, s.cfg.Sim)
			}
		}
		for _, e := range rd.Events {
			if s.cfg.OnEvent != nil {
				s.cfg.OnEvent(e)
			}
		}
		s.mu.Lock()
		s.stats.Core = s.core.Stats()
		if now-peersAt >= peerStatsEvery || s.stats.Peers == nil {
			// Per-member figures sort their sample windows: not every Ready.
			s.stats.Peers = s.core.AppendPeerStats(s.stats.Peers[:0])
			peersAt = now
		}
		s.stats.SendErrs += sendErrs
		if n := len(rd.Buckets); n > 0 {
			s.stats.Stepped, s.stats.Hash = rd.Buckets[n-1].Frame, hash
		}
		s.mu.Unlock()
		if s.core.Left() {
			return nil
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
		case req := <-s.submits:
			f, err := s.core.Submit(s.clock(), req.payload)
			req.reply <- submitReply{f, err}
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

// Submit stamps a command and queues it for every member, returning the frame
// it executes on. It blocks until Run takes it, and returns ErrClosed once the
// session is over or leaving.
func (s *Session) Submit(ctx context.Context, payload []byte) (bucket.Frame, error) {
	req := submitReq{payload: payload, reply: make(chan submitReply, 1)}
	select {
	case s.submits <- req:
		r := <-req.reply
		return r.frame, r.err
	case <-s.done:
		return 0, ErrClosed
	case <-ctx.Done():
		return 0, ctx.Err()
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
