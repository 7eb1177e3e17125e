package peer

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/rng"
)

// lobbyMachine is the lobby without I/O: messages, link failures and the
// time go in; messages to send and, at the end, the agreement or an error
// come out. It starts no goroutine, reads no clock and touches no host;
// lobby.run drives it over libp2p streams, the tests over an in-memory
// network in virtual time.
//
// Each other member is reached over one lobby stream, which the lower peer
// ID opens (a "dial"). On that stream each side sends, in order: hello,
// reveal, then ready (to the coordinator) or start (from it). The machine
// expects exactly that order per member (lobbyPeer.want); a new message
// kind gets a case in receive and, if it opens a path of its own, a phase.
//
// Not safe for concurrent use.
type lobbyMachine struct {
	cfg   lobbyConfig
	hello lobbyMsg // ours, immutable

	peers []*lobbyPeer // the other members, in slot order
	phase lobbyPhase

	transcript []byte
	seed       rng.Seed
	nextReport time.Time // the next wait report and probes (hello phase)

	out    []lobbySend
	result *Agreement
	err    error
}

// lobbyConfig is what a lobby machine starts from.
type lobbyConfig struct {
	params   SessionParams  // defaults applied, valid
	self     peer.ID        // this member
	members  []peer.ID      // every member, self among them, sorted, no duplicates
	contrib  []byte         // this member's contribution, ContributionSize bytes
	datagram netip.AddrPort // this member's datagram address
	log      *slog.Logger   // never nil

	// reveal, when set, replaces the contribution this member reveals (the
	// tests' cheater).
	reveal func(contribution []byte) []byte
}

// lobbyPhase is how far the lobby got.
type lobbyPhase int

const (
	phaseHello  lobbyPhase = iota // exchanging hellos
	phaseReveal                   // our reveal sent; checking theirs
	phaseReady                    // coordinator: waiting for every ready
	phaseStart                    // the others: waiting for the start
	phaseDone                     // result or err is set
)

// lobbyPeer is the machine's view of one other member.
type lobbyPeer struct {
	id    peer.ID
	dials bool // its ID is higher: we open the stream

	dialing bool      // a dial is out, its answer not in
	retryAt time.Time // when to dial again; zero when no retry is due
	last    error     // why the latest try to reach it failed

	hello    *lobbyMsg      // its hello, once admitted
	endpoint netip.AddrPort // its datagram address as we reach it
	want     string         // the message type expected next; "" when it has nothing more to say

	reveal, ready, start *lobbyMsg // received, kept until the phase that reads them
	contrib              []byte    // its checked contribution

	// err is why it gave up or why its stream broke. It is held until
	// every member has answered the phase, so that what we find wrong
	// ourselves beats what a peer reports (see errorRank).
	err error
}

// lobbySend is a message the driver sends to one member.
type lobbySend struct {
	to  peer.ID
	msg lobbyMsg

	// dial: open a new lobby stream to `to` (dropping an old one) and send
	// msg, our hello, on it. The answer comes back through receive, or the
	// failure through failed.
	dial bool

	// probe: on a stream of its own, send msg (our hello) to a lower member
	// that should have dialled us, and hand its one answer to probed.
	probe bool
}

func newLobbyMachine(cfg lobbyConfig, now time.Time) *lobbyMachine {
	commit := rng.Commit(cfg.contrib)
	p := cfg.params
	m := &lobbyMachine{
		cfg: cfg,
		hello: lobbyMsg{
			Type:     msgHello,
			Lobby:    helloVersion(p),
			Params:   &p,
			Members:  idStrings(cfg.members),
			Commit:   commit[:],
			Datagram: cfg.datagram.String(),
		},
		nextReport: now.Add(LobbyWaitReport),
	}
	for _, id := range cfg.members {
		if id == cfg.self {
			continue
		}
		lp := &lobbyPeer{id: id, dials: id > cfg.self, want: msgHello}
		m.peers = append(m.peers, lp)
		if lp.dials {
			m.dial(lp)
		}
	}
	m.advance(now) // a session of one member is agreed at once
	return m
}

func (m *lobbyMachine) dial(p *lobbyPeer) {
	p.dialing, p.retryAt = true, time.Time{}
	m.out = append(m.out, lobbySend{to: p.id, msg: m.hello, dial: true})
}

func (m *lobbyMachine) peer(id peer.ID) *lobbyPeer {
	for _, p := range m.peers {
		if p.id == id {
			return p
		}
	}
	return nil
}

// coordinator is the member that announces the start: the lowest ID.
func (m *lobbyMachine) coordinator() peer.ID { return m.cfg.members[0] }

// meeting reports whether the machine still takes hellos: a stream a lower
// member opens after that is not wanted.
func (m *lobbyMachine) meeting() bool { return m.phase == phaseHello }

// sends returns the messages to send since the last call, in order.
func (m *lobbyMachine) sends() []lobbySend {
	out := m.out
	m.out = nil
	return out
}

// done returns the agreement or the error once the lobby has ended.
func (m *lobbyMachine) done() (*Agreement, error, bool) {
	return m.result, m.err, m.phase == phaseDone
}

// next returns when tick is due next; zero when nothing waits on time.
func (m *lobbyMachine) next() time.Time {
	if m.phase != phaseHello {
		return time.Time{}
	}
	t := m.nextReport
	for _, p := range m.peers {
		if !p.retryAt.IsZero() && p.retryAt.Before(t) {
			t = p.retryAt
		}
	}
	return t
}

// receive takes msg, which member from sent on its lobby stream; remote is
// the IP address that stream arrived from (zero if unknown), which stands
// in for an unspecified address in a hello.
func (m *lobbyMachine) receive(now time.Time, from peer.ID, msg *lobbyMsg, remote netip.Addr) {
	p := m.peer(from)
	if p == nil || m.phase == phaseDone {
		return
	}
	switch {
	case p.dialing:
		m.answered(now, p, msg, remote)
	case msg.Type == msgHello && m.phase == phaseHello:
		// A lower member's hello, or its new stream after its read of
		// ours failed: the newer stream wins.
		m.admit(p, msg, remote)
	case p.want == "":
		// It has nothing more to say to us; it may be closing.
	case msg.Type == msgAbort:
		m.hold(p, fmt.Errorf("%w: peer %s gave up: %s", ErrAborted, from, msg.Detail))
	case msg.Type != p.want:
		m.fail(fmt.Errorf("%w: %s sent %q, want %q", ErrLobbyProtocol, from, msg.Type, p.want))
	case msg.Type == msgReveal:
		p.reveal, p.want = msg, ""
		if m.coordinator() == m.cfg.self {
			p.want = msgReady
		} else if p.id == m.coordinator() {
			p.want = msgStart
		}
	case msg.Type == msgReady:
		p.ready, p.want = msg, ""
	case msg.Type == msgStart:
		p.start, p.want = msg, ""
	}
	m.advance(now)
}

// answered takes the answer to our dial of a higher member.
func (m *lobbyMachine) answered(now time.Time, p *lobbyPeer, msg *lobbyMsg, remote netip.Addr) {
	sid := m.cfg.params.SessionID
	switch {
	case msg.Type == msgHello:
		m.admit(p, msg, remote)
	case msg.Type == msgRefuse && msg.Reason == refuseNoSession:
		p.dialing, p.retryAt = false, now.Add(lobbyRetry)
		p.last = fmt.Errorf("%w: %s has no session %q (yet?)", ErrNoSession, p.id, sid)
	case msg.Type == msgRefuse && msg.Reason == refuseRunning:
		m.fail(fmt.Errorf("%w: %s says session %q started without us (a member restarted cannot rejoin it): %s", ErrSessionRunning, p.id, sid, msg.Detail))
	case msg.Type == msgRefuse && msg.Reason == refuseNotMember: // from older members
		m.fail(fmt.Errorf("%w: %s refused us: %s", ErrNotMember, p.id, msg.Detail))
	case msg.Type == msgAbort:
		m.fail(fmt.Errorf("%w: peer %s gave up: %s", ErrAborted, p.id, msg.Detail))
	default:
		m.fail(fmt.Errorf("%w: %s answered our hello with %q %s", ErrLobbyProtocol, p.id, msg.Type, msg.Reason))
	}
}

// admit checks a member's hello against ours and records it.
func (m *lobbyMachine) admit(p *lobbyPeer, msg *lobbyMsg, remote netip.Addr) {
	ep, err := m.checkHello(msg, p.id)
	if err != nil {
		m.fail(err)
		return
	}
	if ep.Addr().IsUnspecified() && remote.IsValid() { // bound to all interfaces: use the address we reach it at
		ep = netip.AddrPortFrom(remote, ep.Port())
	}
	*p = lobbyPeer{id: p.id, dials: p.dials, last: p.last, hello: msg, endpoint: ep, want: msgReveal}
}

// failed reports that the stream to member id broke, or that a dial of it
// failed, with err.
func (m *lobbyMachine) failed(now time.Time, id peer.ID, err error) {
	p := m.peer(id)
	if p == nil || m.phase == phaseDone {
		return
	}
	switch {
	case p.dialing: // try again a little later
		p.dialing, p.retryAt, p.last = false, now.Add(lobbyRetry), err
	case p.hello != nil && p.want != "":
		m.hold(p, err)
	}
	m.advance(now)
}

// hold keeps err as p's, unless p already has a more telling one.
func (m *lobbyMachine) hold(p *lobbyPeer, err error) {
	if p.err == nil || errorRank(err) > errorRank(p.err) {
		p.err = err
	}
}

// probed takes a lower member's answer to our probe.
func (m *lobbyMachine) probed(id peer.ID, msg *lobbyMsg) {
	if m.phase != phaseHello || m.peer(id) == nil {
		return
	}
	if msg.Type == msgRefuse && msg.Reason == refuseRunning {
		m.fail(fmt.Errorf("%w: %s says session %q started without us (a member restarted cannot rejoin it): %s", ErrSessionRunning, id, m.cfg.params.SessionID, msg.Detail))
	}
}

// tick dials again the members whose retry is due and, every
// LobbyWaitReport while hellos are missing, logs who is missing and probes
// the silent lower members: their session may have started without us.
func (m *lobbyMachine) tick(now time.Time) {
	if m.phase != phaseHello {
		return
	}
	for _, p := range m.peers {
		if !p.retryAt.IsZero() && !now.Before(p.retryAt) {
			m.dial(p)
		}
	}
	if now.Before(m.nextReport) {
		return
	}
	m.nextReport = now.Add(LobbyWaitReport)
	m.cfg.log.Warn("peer: lobby: waiting for members", "missing", m.missing())
	for _, p := range m.peers {
		if !p.dials && p.hello == nil {
			m.out = append(m.out, lobbySend{to: p.id, msg: m.hello, probe: true})
		}
	}
}

// expire ends the lobby because the caller's deadline passed: the error
// names the members that did not answer and wraps cause.
func (m *lobbyMachine) expire(cause error) {
	if m.phase == phaseDone {
		return
	}
	var missing []string
	var last *lobbyPeer
	for _, p := range m.peers {
		if !m.answeredPhase(p) {
			missing = append(missing, p.id.String())
			if last == nil && m.phase == phaseHello && p.last != nil {
				last = p
			}
		}
	}
	err := fmt.Errorf("peer: lobby: members %s did not answer: %w", strings.Join(missing, ", "), cause)
	if last != nil {
		err = fmt.Errorf("%w; last try to reach %s: %w", err, last.id, last.last)
	}
	m.fail(err)
}

// missing describes the members not yet met and why, for the wait report.
func (m *lobbyMachine) missing() string {
	var out []string
	for _, p := range m.peers {
		switch {
		case p.hello != nil:
		case !p.dials:
			out = append(out, fmt.Sprintf("%s (it dials us)", p.id))
		case p.last != nil:
			out = append(out, fmt.Sprintf("%s (we dial it; last try: %v)", p.id, p.last))
		default:
			out = append(out, fmt.Sprintf("%s (we dial it)", p.id))
		}
	}
	return strings.Join(out, ", ")
}

// fail ends the lobby with err and tells every member met why.
func (m *lobbyMachine) fail(err error) {
	if m.phase == phaseDone {
		return
	}
	m.phase, m.err = phaseDone, err
	for _, p := range m.peers {
		if p.hello != nil {
			m.out = append(m.out, lobbySend{to: p.id, msg: lobbyMsg{Type: msgAbort, Detail: err.Error()}})
		}
	}
}
