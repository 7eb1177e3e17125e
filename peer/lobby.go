package peer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"
)

// LobbyProtocol is the libp2p stream protocol of the lobby.
const LobbyProtocol protocol.ID = "/phalanx/lobby/1.0.0"

// ProtocolVersion is the Phalanx protocol version this package speaks. A
// SessionParams.ProtocolVersion of 0 stands for it. Members of different
// versions fail in the lobby (ErrVersionMismatch) rather than in play.
// Version 2: membership views carry the reason of a drop (docs/protocol.md,
// flag bit 7), which version 1 refuses as malformed. Version 3: datagrams
// end with extension blocks, the members' signed statements
// (docs/protocol.md, "Extension blocks"), which version 2 refuses as
// trailing bytes. Version 4: the admissions extension block (tag 0x03,
// rejoins and late joins), which version 3 refuses as an unknown tag.
// Version 5: a shorter header (Next and Ack as varints, Sent as 16 bits,
// AckSeal relative to Seal), which version 4 misreads. Version 7: a
// relay's statement carries the forwarder's chain, which version 6
// misreads. It is the datagram format's version, wire.Version.
const ProtocolVersion = 7

// ContributionSize is the size in bytes of each member's contribution to the
// shared seed.
const ContributionSize = 32

// StartDelay is how far in the future the coordinator puts the start time
// when it announces it: time for the announcement to reach every member.
const StartDelay = 500 * time.Millisecond

// DefaultFrameMillis is the frame length of SessionParams whose FrameMillis
// is 0.
const DefaultFrameMillis = 50

// Errors of the lobby. Each is wrapped with context (which peer, which
// values) and checked with errors.Is. A mismatch is reported on both sides:
// each member compares the other's hello with its own.
var (
	ErrInvalidParams      = errors.New("peer: lobby: invalid session parameters")
	ErrVersionMismatch    = errors.New("peer: lobby: protocol version mismatch")
	ErrParamsMismatch     = errors.New("peer: lobby: session parameters mismatch")
	ErrMembersMismatch    = errors.New("peer: lobby: member lists differ")
	ErrNotMember          = errors.New("peer: lobby: not a member")
	ErrNoSession          = errors.New("peer: lobby: peer has no such session")
	ErrBadReveal          = errors.New("peer: lobby: bad reveal")
	ErrTranscriptMismatch = errors.New("peer: lobby: members saw different commitments")
	ErrAborted            = errors.New("peer: lobby: aborted by a peer")
	ErrLobbyProtocol      = errors.New("peer: lobby: protocol violation")
	ErrJoinBusy           = errors.New("peer: lobby: already joining this session")
	ErrSessionRunning     = errors.New("peer: lobby: the session is running without this member")
)

// LobbyWaitReport is how often a Join that still waits for members logs
// which ones, and why.
const LobbyWaitReport = 5 * time.Second

// Join meets the other members of the session described by params and
// returns what they agreed. peers are the other members' addresses
// (params.Members-1 of them, this host not among them); the member list is
// this host plus peers.
//
// For every pair of members the lower peer ID opens a lobby stream to the
// higher, retrying while the higher has not started its Join yet. Both send
// a hello (parameters, member list, seed commitment, datagram address) and
// each checks the other's: a different protocol version fails with an error
// wrapping [ErrVersionMismatch], other parameters with [ErrParamsMismatch],
// a different member list with [ErrMembersMismatch], on both sides. With
// every hello in, members reveal their contributions and check each against
// its commitment ([ErrBadReveal]) and that all saw the same commitments
// ([ErrTranscriptMismatch]); then the coordinator (the lowest peer ID)
// collects everyone's ready and announces the start time. A member that
// gives up tells the others why; they fail with an error wrapping
// [ErrAborted].
//
// Join waits as long as ctx allows for the others; give it a deadline. It
// returns only when all its goroutines are done. One Join per session ID may
// run on a host at a time ([ErrJoinBusy]).
func Join(ctx context.Context, h *Host, params SessionParams, peers []peer.AddrInfo) (*Agreement, error) {
	params = params.withDefaults()

	if err := params.validate(); err != nil {
		return nil, err
	}
	self := h.ID()
	members := []peer.ID{self}
	for _, ai := range peers {
		if ai.ID == self {
			return nil, fmt.Errorf("%w: this host (%s) is among the peers", ErrInvalidParams, self)
		}
		members = append(members, ai.ID)
	}
	slices.Sort(members)
	if len(slices.Compact(slices.Clone(members))) != len(members) {
		return nil, fmt.Errorf("%w: a peer is listed twice", ErrInvalidParams)
	}
	if len(members) != params.Members {
		return nil, fmt.Errorf("%w: %d peers given, a session of %d members needs %d", ErrInvalidParams, len(peers), params.Members, params.Members-1)
	}

	contrib := make([]byte, ContributionSize)
	if _, err := rand.Read(contrib); err != nil {
		return nil, fmt.Errorf("peer: lobby: contribution: %w", err)
	}
	log := h.log.With("session", params.SessionID)
	m := newLobbyMachine(lobbyConfig{
		params:   params,
		self:     self,
		members:  members,
		contrib:  contrib,
		datagram: h.DatagramAddr(),
		log:      log,
	}, time.Now())
	l := &lobby{
		h:        h,
		log:      log,
		params:   params,
		self:     self,
		members:  members,
		hello:    m.hello,
		accepted: make(chan arrival, 2*len(members)),
		m:        m,
	}
	if err := h.register(l); err != nil {
		return nil, err
	}
	defer h.unregister(l)
	h.closeStrangers()

	for _, ai := range peers {
		h.h.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.AddressTTL)
	}
	sess, err := l.run(ctx)
	if err != nil {
		l.log.Warn("peer: join failed", "err", err)
		return nil, err
	}
	h.remember(sess)
	l.log.Info("peer: joined", "slot", sess.Self, "members", len(sess.Members), "seed", sess.Seed.Uint64(), "start_in", time.Until(sess.Start))
	return sess, nil
}

// lobby is one Join in progress: the adapter that drives a lobbyMachine
// over libp2p streams. The host's stream handler reads its immutable
// fields and hands over the streams lower members open (accepted).
type lobby struct {
	h        *Host
	log      *slog.Logger
	params   SessionParams
	self     peer.ID
	members  []peer.ID // sorted
	hello    lobbyMsg  // ours, immutable
	accepted chan arrival
	m        *lobbyMachine // only run touches it
}

// arrival is a lobby stream whose hello has been read and answered.
type arrival struct {
	c     *lobbyConn
	hello *lobbyMsg
}

// lobbyLink is the adapter's stream to one member.
type lobbyLink struct {
	id peer.ID
	c  *lobbyConn // nil while a dial is opening it
}

// lobbyEvent is what the adapter's goroutines report to run.
type lobbyEvent struct {
	link  *lobbyLink
	conn  *lobbyConn // a dial opened link's stream and sent the hello
	msg   *lobbyMsg  // a message read from link (or a probe's answer)
	err   error      // the dial or the stream failed
	probe bool
}

// run drives the machine: it performs its sends, feeds it what the
// streams bring, its timer and ctx's end, until it is done. Every
// goroutine it starts has ended when it returns.
func (l *lobby) run(ctx context.Context) (*Agreement, error) {
	// Streams are reset when run ends, not when ctx does: the aborts
	// written on ctx's end should still leave.
	linkCtx, stopLinks := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopLinks()
	dialCtx, stopDials := context.WithCancel(ctx)
	defer stopDials()

	r := &lobbyRun{l: l, ctx: linkCtx, dialCtx: dialCtx, wg: &wg, events: make(chan lobbyEvent), links: make(map[peer.ID]*lobbyLink)}
	m := l.m
	expired := ctx.Done()
	for {
		for _, s := range m.sends() {
			r.send(s)
		}
		if sess, err, ok := m.done(); ok {
			for _, lk := range r.links {
				if lk.c != nil {
					lk.c.close()
				}
			}
			return sess, err
		}
		var timer <-chan time.Time
		if next := m.next(); !next.IsZero() {
			timer = time.After(time.Until(next))
		}
		select {
		case ev := <-r.events:
			r.handle(ev)
		case a := <-l.accepted:
			if !m.meeting() {
				a.c.s.Reset()
				continue
			}
			lk := r.link(a.c.remote)
			lk.c = a.c
			a.c.stop = context.AfterFunc(linkCtx, func() { a.c.s.Reset() })
			m.receive(time.Now(), lk.id, a.hello, lk.remoteIP())
			r.read(lk, a.c)
		case now := <-timer:
			m.tick(now)
		case <-expired:
			expired = nil
			m.expire(context.Cause(ctx))
		}
	}
}
