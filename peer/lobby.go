package peer

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
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
	ma "github.com/multiformats/go-multiaddr"

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
// trailing bytes.
const ProtocolVersion = 3

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

// SessionParams describe a session. Every member must join with the same
// parameters; [Join] refuses a peer whose parameters differ.
type SessionParams struct {
	SessionID       string `json:"session_id"`       // names the session; 1..128 bytes
	ProtocolVersion int    `json:"protocol_version"` // 0 means ProtocolVersion
	FrameMillis     int    `json:"frame_ms"`         // frame length in milliseconds; 0 means DefaultFrameMillis
	Members         int    `json:"members"`          // expected member count, 1..bucket.MaxMembers
	Sim             string `json:"sim"`              // simulation name, at most 64 bytes
	SimVersion      string `json:"sim_version"`      // simulation version, at most 64 bytes
	InitialDelay    int    `json:"initial_delay"`    // lockstep.Config.InitialDelay every member uses; 0 means its default
	// Frames is the session's agreed length: every member steps frames 0
	// to Frames-1 and then ends it (see MemberConfig); 0 means no agreed
	// end.
	Frames int `json:"frames,omitempty"`
}

func (p SessionParams) withDefaults() SessionParams {
	if p.ProtocolVersion == 0 {
		p.ProtocolVersion = ProtocolVersion
	}
	if p.FrameMillis == 0 {
		p.FrameMillis = DefaultFrameMillis
	}
	return p
}

func (p SessionParams) validate() error {
	switch {
	case p.SessionID == "" || len(p.SessionID) > 128:
		return fmt.Errorf("%w: session ID %q must be 1..128 bytes", ErrInvalidParams, p.SessionID)
	case p.ProtocolVersion < 0:
		return fmt.Errorf("%w: protocol version %d", ErrInvalidParams, p.ProtocolVersion)
	case p.FrameMillis < 0 || p.FrameMillis > 10_000:
		return fmt.Errorf("%w: frame length %d ms outside 1..10000", ErrInvalidParams, p.FrameMillis)
	case p.Members < 1 || p.Members > bucket.MaxMembers:
		return fmt.Errorf("%w: %d members, want 1..%d", ErrInvalidParams, p.Members, bucket.MaxMembers)
	case len(p.Sim) > 64 || len(p.SimVersion) > 64:
		return fmt.Errorf("%w: simulation name or version longer than 64 bytes", ErrInvalidParams)
	case p.InitialDelay < 0:
		return fmt.Errorf("%w: initial delay %d", ErrInvalidParams, p.InitialDelay)
	case p.Frames < 0:
		return fmt.Errorf("%w: %d frames", ErrInvalidParams, p.Frames)
	}
	return nil
}

// Session is what the members of a session agreed in the lobby. Every
// member holds the same ID, Params, Seed, Members and Endpoints; Self and
// Start are each member's own.
type Session struct {
	ID     string
	Params SessionParams // with defaults applied

	// Seed is the shared seed: rng.SharedSeed of every member's
	// contribution, each checked against its commitment.
	Seed rng.Seed

	// Members are the members' peer IDs sorted by their bytes (the binary
	// multihash; for Ed25519 identities this is also the order of their
	// text form). A member's slot is its index here.
	Members []peer.ID

	// Self is this member's slot.
	Self bucket.Slot

	// Start is when frame 0 begins, on this member's clock (it carries a
	// monotonic reading). The coordinator, Members[0], announced it as a
	// wall-clock instant; members' wall clocks are assumed synchronized.
	Start time.Time

	// Endpoints are the members' datagram channel addresses, by slot.
	Endpoints []netip.AddrPort
}

// Slot returns the slot of member id, and false if id is not a member.
func (s *Session) Slot(id peer.ID) (bucket.Slot, bool) {
	i, ok := slices.BinarySearch(s.Members, id)
	return bucket.Slot(i), ok
}

// Coordinator returns the member that announced the start time: the lowest
// peer ID.
func (s *Session) Coordinator() peer.ID { return s.Members[0] }

// Frame returns the frame length.
func (s *Session) Frame() time.Duration {
	return time.Duration(s.Params.FrameMillis) * time.Millisecond
}

// Tag returns the 16-bit session tag for lockstep.Config.Session, derived
// from the seed: SHA-256("phalanx-session-tag" || seed), first two bytes,
// big-endian. Every member computes the same tag.
func (s *Session) Tag() uint16 {
	h := sha256.New()
	h.Write([]byte("phalanx-session-tag"))
	h.Write(s.Seed[:])
	return binary.BigEndian.Uint16(h.Sum(nil))
}

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
func Join(ctx context.Context, h *Host, params SessionParams, peers []peer.AddrInfo) (*Session, error) {
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

func join(ctx context.Context, h *Host, params SessionParams, peers []peer.AddrInfo, hooks joinHooks) (*Session, error) {
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

func (h *Host) register(l *lobby) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrHostClosed
	}
	if h.lobbies[l.params.SessionID] != nil {
		return fmt.Errorf("%w: %q", ErrJoinBusy, l.params.SessionID)
	}
	h.lobbies[l.params.SessionID] = l
	if _, ok := h.running[l.params.SessionID]; ok { // joined again
		delete(h.running, l.params.SessionID)
		h.runningOrder = slices.DeleteFunc(h.runningOrder, func(id string) bool { return id == l.params.SessionID })
	}
	return nil
}

// maxRunning bounds the sessions a host remembers having joined, for
// telling a restarted member that its session runs without it.
const maxRunning = 16

// remember records that the host joined sess, forgetting the oldest
// session past maxRunning.
func (h *Host) remember(sess *Session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.running[sess.ID]; !ok {
		h.runningOrder = append(h.runningOrder, sess.ID)
	}
	h.running[sess.ID] = sess.Members
	for len(h.runningOrder) > maxRunning {
		delete(h.running, h.runningOrder[0])
		h.runningOrder = h.runningOrder[1:]
	}
}

// closeStrangers closes the connections of peers that are members of no
// session the host knows: they connected before it knew its sessions.
func (h *Host) closeStrangers() {
	for _, p := range h.h.Network().Peers() {
		if !h.mayConnect(p) {
			_ = h.h.Network().ClosePeer(p)
		}
	}
}

// unregister removes l and resets the streams it was handed but did not use.
func (h *Host) unregister(l *lobby) {
	h.mu.Lock()
	delete(h.lobbies, l.params.SessionID)
	h.mu.Unlock()
	for {
		select {
		case a := <-l.accepted:
			a.c.s.Reset()
		default:
			return
		}
	}
}

// run is the lobby proper: hellos, reveals, ready and start.
func (l *lobby) run(parent context.Context, hooks joinHooks) (*Session, error) {
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
	fail := func(err error) (*Session, error) {
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

	sess := &Session{
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
	s, err := l.h.h.NewStream(ctx, id, LobbyProtocol)
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

type dialResult struct {
	id    peer.ID
	c     *lobbyConn
	hello *lobbyMsg
	err   error
	last  error // when ctx ended: why the last try failed
}

// lobbyRetry is how long a dialer waits before trying a member again.
const lobbyRetry = 100 * time.Millisecond

// dial opens the lobby stream to a higher member and exchanges hellos,
// retrying until the member answers with its hello or ctx ends.
func (l *lobby) dial(ctx context.Context, id peer.ID) dialResult {
	var last error
	for {
		if last != nil {
			l.mu.Lock()
			l.tries[id] = last
			l.mu.Unlock()
			select {
			case <-ctx.Done():
				err := fmt.Errorf("peer: lobby: reaching %s: %w (last try: %w)", id, context.Cause(ctx), last)
				return dialResult{id: id, err: err, last: last}
			case <-time.After(lobbyRetry):
			}
		}
		s, err := l.h.h.NewStream(ctx, id, LobbyProtocol)
		if err != nil {
			last = err
			continue
		}
		c := newLobbyConn(s)
		c.stop = context.AfterFunc(ctx, func() { s.Reset() })
		if err := c.write(&l.hello); err != nil {
			c.stop()
			s.Reset()
			last = err
			continue
		}
		var m lobbyMsg
		if err := c.read(&m); err != nil {
			c.stop()
			s.Reset()
			last = err
			continue
		}
		switch {
		case m.Type == msgHello:
			return dialResult{c: c, hello: &m}
		case m.Type == msgRefuse && m.Reason == refuseNoSession:
			c.close()
			last = fmt.Errorf("%w: %s has no session %q (yet?)", ErrNoSession, id, l.params.SessionID)
			continue
		case m.Type == msgRefuse && m.Reason == refuseRunning:
			c.close()
			return dialResult{err: fmt.Errorf("%w: %s says session %q started without us (a member restarted cannot rejoin it): %s", ErrSessionRunning, id, l.params.SessionID, m.Detail)}
		case m.Type == msgRefuse && m.Reason == refuseNotMember: // from older members
			c.close()
			return dialResult{err: fmt.Errorf("%w: %s refused us: %s", ErrNotMember, id, m.Detail)}
		case m.Type == msgAbort:
			c.close()
			return dialResult{err: fmt.Errorf("%w: peer %s gave up: %s", ErrAborted, id, m.Detail)}
		default:
			c.close()
			return dialResult{err: fmt.Errorf("%w: %s answered our hello with %q %s", ErrLobbyProtocol, id, m.Type, m.Reason)}
		}
	}
}

// handleLobbyStream serves a lobby stream a lower member opened: it reads the
// hello, finds the Join it belongs to, answers with that Join's hello and
// hands the stream over. Streams for no Join in progress are refused.
func (h *Host) handleLobbyStream(s network.Stream) {
	c := newLobbyConn(s)
	_ = s.SetDeadline(time.Now().Add(10 * time.Second))
	var m lobbyMsg
	if err := c.read(&m); err != nil || m.Type != msgHello || m.Params == nil {
		h.log.Debug("peer: lobby: bad first message", "from", c.remote, "err", err, "type", m.Type)
		s.Reset()
		return
	}
	h.mu.Lock()
	l := h.lobbies[m.Params.SessionID]
	running := h.running[m.Params.SessionID]
	h.mu.Unlock()
	refuse := func(reason, detail string) {
		_ = c.write(&lobbyMsg{Type: msgRefuse, Reason: reason, Detail: detail})
		_ = s.Close()
	}
	// A stranger learns nothing of the session: whether it exists, who or
	// how many its members are. It gets what a host without the session
	// says, then its connections are closed and refused for a while.
	switch {
	case l == nil && running == nil:
		refuse(refuseNoSession, "") // perhaps a member early: its Join has not begun
		return
	case l == nil && slices.Contains(running, c.remote):
		refuse(refuseRunning, "the session started without you")
		return
	case l == nil || !slices.Contains(l.members, c.remote):
		h.refusals.refused("peer: lobby: refused a stranger", "session", m.Params.SessionID, "from", c.remote)
		refuse(refuseNoSession, "")
		if !h.mayConnect(c.remote) { // not a member of another session either
			h.refuseStranger(c.remote)
		}
		return
	case c.remote > l.self:
		refuse(refuseDirection, "the lower peer ID opens the lobby stream")
		return
	}
	if err := c.write(&l.hello); err != nil {
		s.Reset()
		return
	}
	_ = s.SetDeadline(time.Time{})
	// Hand over only while the Join is still registered: unregister drains
	// the channel after removing it, so no stream is left behind.
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lobbies[l.params.SessionID] == l {
		select {
		case l.accepted <- arrival{c: c, hello: &m}:
			return
		default:
		}
	}
	s.Reset()
}

// admit checks a member's hello against ours and records the pair.
func (l *lobby) admit(pairs map[peer.ID]*pair, c *lobbyConn, m *lobbyMsg) error {
	ep, err := l.checkHello(m, c.remote)
	if err != nil {
		return err
	}
	if ep.Addr().IsUnspecified() { // bound to all interfaces: use the address we reach it at
		if ip, ok := remoteIP(c.s.Conn().RemoteMultiaddr()); ok {
			ep = netip.AddrPortFrom(ip, ep.Port())
		}
	}
	pairs[c.remote] = &pair{c: c, hello: m, endpoint: ep}
	return nil
}

// checkHello checks the hello m of remote against ours: the same
// parameters and members, a 32-byte commitment, a datagram address. It
// returns that address.
func (l *lobby) checkHello(m *lobbyMsg, remote peer.ID) (netip.AddrPort, error) {
	if m.Params == nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %s sent a hello without parameters", ErrLobbyProtocol, remote)
	}
	if err := compareParams(l.params, *m.Params, remote); err != nil {
		return netip.AddrPort{}, err
	}
	if err := l.compareMembers(m.Members, remote); err != nil {
		return netip.AddrPort{}, err
	}
	if len(m.Commit) != 32 {
		return netip.AddrPort{}, fmt.Errorf("%w: %s sent a commitment of %d bytes", ErrLobbyProtocol, remote, len(m.Commit))
	}
	ep, err := netip.ParseAddrPort(m.Datagram)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %s announced datagram address %q: %v", ErrLobbyProtocol, remote, m.Datagram, err)
	}
	return ep, nil
}

func compareParams(ours, theirs SessionParams, remote peer.ID) error {
	if ours.ProtocolVersion != theirs.ProtocolVersion {
		return fmt.Errorf("%w: we speak %d, peer %s speaks %d", ErrVersionMismatch, ours.ProtocolVersion, remote, theirs.ProtocolVersion)
	}
	diff := func(what string, a, b any) error {
		return fmt.Errorf("%w: %s: we have %v, peer %s has %v", ErrParamsMismatch, what, a, remote, b)
	}
	switch {
	case ours.SessionID != theirs.SessionID:
		return diff("session ID", fmt.Sprintf("%q", ours.SessionID), fmt.Sprintf("%q", theirs.SessionID))
	case ours.FrameMillis != theirs.FrameMillis:
		return diff("frame length", fmt.Sprintf("%d ms", ours.FrameMillis), fmt.Sprintf("%d ms", theirs.FrameMillis))
	case ours.Members != theirs.Members:
		return diff("member count", ours.Members, theirs.Members)
	case ours.Sim != theirs.Sim:
		return diff("simulation", fmt.Sprintf("%q", ours.Sim), fmt.Sprintf("%q", theirs.Sim))
	case ours.SimVersion != theirs.SimVersion:
		return diff("simulation version", fmt.Sprintf("%q", ours.SimVersion), fmt.Sprintf("%q", theirs.SimVersion))
	case ours.InitialDelay != theirs.InitialDelay:
		return diff("initial delay", ours.InitialDelay, theirs.InitialDelay)
	case ours.Frames != theirs.Frames:
		return diff("session length", fmt.Sprintf("%d frames", ours.Frames), fmt.Sprintf("%d frames", theirs.Frames))
	}
	return nil
}

func (l *lobby) compareMembers(theirs []string, remote peer.ID) error {
	ids := make([]peer.ID, 0, len(theirs))
	for _, s := range theirs {
		id, err := peer.Decode(s)
		if err != nil {
			return fmt.Errorf("%w: %s listed member %q: %v", ErrLobbyProtocol, remote, s, err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if slices.Equal(ids, l.members) {
		return nil
	}
	var onlyOurs, onlyTheirs []string
	for _, id := range l.members {
		if !slices.Contains(ids, id) {
			onlyOurs = append(onlyOurs, id.String())
		}
	}
	for _, id := range ids {
		if !slices.Contains(l.members, id) {
			onlyTheirs = append(onlyTheirs, id.String())
		}
	}
	return fmt.Errorf("%w: peer %s lacks [%s] and adds [%s]", ErrMembersMismatch, remote, strings.Join(onlyOurs, " "), strings.Join(onlyTheirs, " "))
}

// transcript hashes what every member's hello said, in slot order, so that
// members can check they all saw the same: SHA-256 of
// "phalanx-lobby-transcript", the session ID, then per member its ID bytes,
// commitment and announced datagram address, each uvarint-length-prefixed.
func (l *lobby) transcript(pairs map[peer.ID]*pair) []byte {
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		h.Write(b)
	}
	h.Write([]byte("phalanx-lobby-transcript"))
	put([]byte(l.params.SessionID))
	for _, id := range l.members {
		m := &l.hello
		if id != l.self {
			m = pairs[id].hello
		}
		put([]byte(id))
		put(m.Commit)
		put([]byte(m.Datagram))
	}
	return h.Sum(nil)
}

// seedCheck is what a member's ready carries: SHA-256("phalanx-seed-check"
// || seed), so the coordinator can confirm every member derived its seed.
func seedCheck(s rng.Seed) []byte {
	h := sha256.New()
	h.Write([]byte("phalanx-seed-check"))
	h.Write(s[:])
	return h.Sum(nil)
}

func idStrings(ids []peer.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
}

func remoteIP(m ma.Multiaddr) (netip.Addr, bool) {
	for _, code := range []int{ma.P_IP4, ma.P_IP6} {
		if v, err := m.ValueForProtocol(code); err == nil {
			if ip, err := netip.ParseAddr(v); err == nil {
				return ip, true
			}
		}
	}
	return netip.Addr{}, false
}
