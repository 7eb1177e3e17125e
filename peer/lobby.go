package peer

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/rng"
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
// AckSeal relative to Seal), which version 4 misreads. It is the datagram
// format's version, wire.Version.
const ProtocolVersion = 5

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
	return join(ctx, h, params, peers, joinHooks{})
}

// joinHooks let in-package tests play a misbehaving member.
type joinHooks struct {
	// reveal replaces the contribution this member reveals.
	reveal func(contribution []byte) []byte
}

// lobby is one Join in progress.
type lobby struct {
	h        *Host
	log      *slog.Logger
	params   SessionParams
	self     peer.ID
	members  []peer.ID // sorted
	hello    lobbyMsg  // ours, immutable once registered
	contrib  []byte
	accepted chan arrival // streams the host handler accepted from lower members

	mu    sync.Mutex
	tries map[peer.ID]error // why the latest try to reach a higher member failed
}

// arrival is a lobby stream whose hello has been read and answered.
type arrival struct {
	c     *lobbyConn
	hello *lobbyMsg
}

// pair is the lobby's link to one other member.
type pair struct {
	c        *lobbyConn
	hello    *lobbyMsg
	endpoint netip.AddrPort // datagram address as we reach it
	aborted  bool
}

func (p *pair) abort(why error) {
	if !p.aborted {
		p.aborted = true
		p.c.abort(why)
	}
}

func join(ctx context.Context, h *Host, params SessionParams, peers []peer.AddrInfo, hooks joinHooks) (*Agreement, error) {
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
	commit := rng.Commit(contrib)
	p := params
	l := &lobby{
		h:       h,
		log:     h.log.With("session", params.SessionID),
		params:  params,
		self:    self,
		members: members,
		contrib: contrib,
		hello: lobbyMsg{
			Type:     msgHello,
			Params:   &p,
			Members:  idStrings(members),
			Commit:   commit[:],
			Datagram: h.DatagramAddr().String(),
		},
		accepted: make(chan arrival, 2*len(members)),
		tries:    make(map[peer.ID]error),
	}
	if err := h.register(l); err != nil {
		return nil, err
	}
	defer h.unregister(l)
	h.closeStrangers()

	for _, ai := range peers {
		h.h.Peerstore().AddAddrs(ai.ID, ai.Addrs, peerstore.AddressTTL)
	}
	sess, err := l.run(ctx, hooks)
	if err != nil {
		l.log.Warn("peer: join failed", "err", err)
		return nil, err
	}
	h.remember(sess)
	l.log.Info("peer: joined", "slot", sess.Self, "members", len(sess.Members), "seed", sess.Seed.Uint64(), "start_in", time.Until(sess.Start))
	return sess, nil
}

// run is the lobby proper: hellos, reveals, ready and start.
func (l *lobby) run(parent context.Context, hooks joinHooks) (*Agreement, error) {
	ctx, cancel := context.WithCancel(parent)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs first: stops the dialers, then wg.Wait

	others := len(l.members) - 1
	pairs := make(map[peer.ID]*pair, others)
	all := func() []*pair {
		ps := make([]*pair, 0, len(pairs))
		for _, id := range l.members {
			if p := pairs[id]; p != nil {
				ps = append(ps, p)
			}
		}
		return ps
	}
	fail := func(err error) (*Agreement, error) {
		for _, p := range all() {
			p.abort(err)
		}
		return nil, err
	}

	// Phase 1: hellos. Dial the higher members, accept the lower ones.
	dialed := make(chan dialResult, others)
	for _, id := range l.members {
		if id > l.self {
			wg.Go(func() { dialed <- l.dial(ctx, id) })
		}
	}
	waiting := time.NewTicker(LobbyWaitReport)
	defer waiting.Stop()
	probed := make(chan error, others)
	probeCtx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	for len(pairs) < others {
		select {
		case <-waiting.C:
			l.log.Warn("peer: lobby: waiting for members", "missing", l.missing(pairs))
			// A lower member dials us; if it is silent, ask it why: its
			// session may have started without us.
			for _, id := range l.members {
				if id < l.self && pairs[id] == nil {
					wg.Go(func() {
						if err := l.probe(probeCtx, id); err != nil {
							select {
							case probed <- err:
							case <-probeCtx.Done():
							}
						}
					})
				}
			}
		case err := <-probed:
			if err != nil {
				return fail(err)
			}
		case r := <-dialed:
			if r.err != nil {
				return fail(r.err)
			}
			if err := l.admit(pairs, r.c, r.hello); err != nil {
				r.c.abort(err)
				return fail(err)
			}
		case a := <-l.accepted:
			a.c.stop = context.AfterFunc(ctx, func() { a.c.s.Reset() })
			if old := pairs[a.c.remote]; old != nil { // the dialer tried again: the newer stream wins
				old.c.s.Reset()
				old.c.stop()
				delete(pairs, a.c.remote)
			}
			if err := l.admit(pairs, a.c, a.hello); err != nil {
				a.c.abort(err)
				return fail(err)
			}
		case <-ctx.Done():
			var missing []string
			for _, id := range l.members {
				if id != l.self && pairs[id] == nil {
					missing = append(missing, id.String())
				}
			}
			err := fmt.Errorf("peer: lobby: members %s did not answer: %w", strings.Join(missing, ", "), context.Cause(ctx))
			cancel()
			wg.Wait()
			for len(dialed) > 0 {
				if r := <-dialed; r.last != nil {
					err = fmt.Errorf("%w; last try to reach %s: %w", err, r.id, r.last)
					break
				}
			}
			return fail(err)
		}
	}
	stopProbes()
	wg.Wait() // every dialer has delivered
	ps := all()

	// Phase 2: reveals, checked against the commitments and the transcript.
	transcript := l.transcript(pairs)
	revealed := l.contrib
	if hooks.reveal != nil {
		revealed = hooks.reveal(slices.Clone(l.contrib))
	}
	contribs := make(map[peer.ID][]byte, others)
	var mu sync.Mutex
	err := exchange(ps, func(p *pair) error {
		werr := p.c.write(&lobbyMsg{Type: msgReveal, Contribution: revealed, Transcript: transcript})
		// Read even if the write failed: the peer may have said why.
		m, err := p.c.expect(msgReveal)
		if err != nil {
			return err
		}
		if !bytes.Equal(m.Transcript, transcript) {
			return fmt.Errorf("%w: %s saw other hellos than we did (a member sent different commitments to different members?)", ErrTranscriptMismatch, p.c.remote)
		}
		var commit [32]byte
		copy(commit[:], p.hello.Commit)
		if len(m.Contribution) != ContributionSize || !rng.VerifyCommit(commit, m.Contribution) {
			return fmt.Errorf("%w: %s revealed a contribution that does not match its commitment", ErrBadReveal, p.c.remote)
		}
		mu.Lock()
		contribs[p.c.remote] = m.Contribution
		mu.Unlock()
		return werr
	})
	if err != nil {
		return fail(err)
	}
	all32 := [][]byte{l.contrib}
	for _, c := range contribs {
		all32 = append(all32, c)
	}
	seed := rng.SharedSeed(all32)
	check := seedCheck(seed)

	// Phase 3: everyone tells the coordinator it is ready, with a check of
	// its seed; the coordinator announces the start.
	var start time.Time
	coord := l.members[0]
	if l.self == coord {
		err := exchange(ps, func(p *pair) error {
			m, err := p.c.expect(msgReady)
			if err != nil {
				return err
			}
			if !bytes.Equal(m.SeedCheck, check) {
				return fmt.Errorf("%w: %s derived another seed", ErrTranscriptMismatch, p.c.remote)
			}
			return nil
		})
		if err != nil {
			return fail(err)
		}
		start = time.Now().Add(StartDelay)
		err = exchange(ps, func(p *pair) error {
			return p.c.write(&lobbyMsg{Type: msgStart, StartUnixNano: start.UnixNano()})
		})
		if err != nil {
			return fail(err)
		}
	} else {
		p := pairs[coord]
		if err := p.c.write(&lobbyMsg{Type: msgReady, SeedCheck: check}); err != nil {
			return fail(err)
		}
		m, err := p.c.expect(msgStart)
		if err != nil {
			return fail(err)
		}
		now := time.Now()
		wall := time.Unix(0, m.StartUnixNano)
		if d := wall.Sub(now); d < -time.Minute || d > time.Minute {
			return fail(fmt.Errorf("%w: coordinator %s announced a start %v away from our clock; are the clocks synchronized?", ErrLobbyProtocol, coord, d.Round(time.Millisecond)))
		}
		start = now.Add(wall.Sub(now)) // keeps now's monotonic reading
		if start.Before(now) {
			l.log.Warn("peer: announced start is already past: clocks differ?", "by", now.Sub(start))
		}
	}
	for _, p := range ps {
		p.c.close()
	}

	sess := &Agreement{
		ID:        l.params.SessionID,
		Params:    l.params,
		Seed:      seed,
		Members:   slices.Clone(l.members),
		Start:     start,
		Endpoints: make([]netip.AddrPort, len(l.members)),
	}
	for i, id := range l.members {
		if id == l.self {
			sess.Self = bucket.Slot(i)
			sess.Endpoints[i] = l.h.DatagramAddr()
		} else {
			sess.Endpoints[i] = pairs[id].endpoint
		}
	}
	return sess, nil
}

// missing describes the members not yet met and why, for the wait report.
func (l *lobby) missing(pairs map[peer.ID]*pair) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, id := range l.members {
		switch {
		case id == l.self || pairs[id] != nil:
		case id < l.self:
			out = append(out, fmt.Sprintf("%s (it dials us)", id))
		case l.tries[id] != nil:
			out = append(out, fmt.Sprintf("%s (we dial it; last try: %v)", id, l.tries[id]))
		default:
			out = append(out, fmt.Sprintf("%s (we dial it)", id))
		}
	}
	return strings.Join(out, ", ")
}

// probe asks a lower member, which should dial us, whether its session
// started without us: it sends our hello and reads the refusal, returning
// an error wrapping ErrSessionRunning if so and nil for any other answer
// or none (a member in the lobby refuses the direction and dials us).
func (l *lobby) probe(ctx context.Context, id peer.ID) error {
	ctx, cancel := context.WithTimeout(ctx, LobbyWaitReport)
	defer cancel()
	s, err := l.h.h.NewStream(network.WithAllowLimitedConn(ctx, "phalanx lobby"), id, LobbyProtocol)
	if err != nil {
		return nil
	}
	c := newLobbyConn(s)
	defer context.AfterFunc(ctx, func() { s.Reset() })()
	defer s.Reset()
	var m lobbyMsg
	if c.write(&l.hello) != nil || c.read(&m) != nil {
		return nil
	}
	if m.Type == msgRefuse && m.Reason == refuseRunning {
		return fmt.Errorf("%w: %s says session %q started without us (a member restarted cannot rejoin it): %s", ErrSessionRunning, id, l.params.SessionID, m.Detail)
	}
	return nil
}

// exchange runs f for every pair at once, waits for all, and returns the
// most telling error: what we found wrong ourselves before what a peer
// reported (ErrAborted) before an I/O error. It need not abort anything to
// make progress: in every phase each member writes before it reads, and a
// member that gives up closes its streams, so every f returns.
func exchange(ps []*pair, f func(*pair) error) error {
	errs := make(chan error, len(ps))
	for _, p := range ps {
		go func() { errs <- f(p) }()
	}
	var best error
	for range ps {
		if err := <-errs; err != nil && (best == nil || errorRank(err) > errorRank(best)) {
			best = err
		}
	}
	return best
}

// errorRank orders lobby errors by how much they tell.
func errorRank(err error) int {
	for _, s := range []error{ErrVersionMismatch, ErrParamsMismatch, ErrMembersMismatch, ErrNotMember,
		ErrBadReveal, ErrTranscriptMismatch, ErrLobbyProtocol} {
		if errors.Is(err, s) {
			return 2
		}
	}
	if errors.Is(err, ErrAborted) {
		return 1
	}
	return 0
}
