package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/rng"
)

// lobbyNet runs lobby machines against each other in virtual time, with
// no host: each message takes netLatency, a stream keeps its order, and a
// member that has not joined is answered as a host without the session
// answers. It plays the part of lobby.run and of the host's stream handler.
type lobbyNet struct {
	t     *testing.T
	now   time.Time
	ids   []peer.ID // sorted: index = slot
	nodes []*lobbyNode
	queue []netEvent // in delivery order
	trace []string   // what happened, for failure reports
}

const netLatency = 3 * time.Millisecond

type lobbyNode struct {
	id      peer.ID
	joinAt  time.Duration // -1: never joins
	timeout time.Duration // the Join's deadline after joinAt
	edit    func(*lobbyConfig)
	running []peer.ID // members of a session it agreed on before the test (a restarted member's peers)

	m        *lobbyMachine
	deadline time.Time
	sess     *Agreement
	err      error
	dials    map[peer.ID]int // dials it made, by member dialled
	probes   int             // probes it sent
	refused  int             // strangers it turned away
}

type netEvent struct {
	at       time.Time
	from, to peer.ID
	msg      *lobbyMsg // nil: the stream from `from` broke
	probe    bool      // an answer to to's probe
}

func newLobbyNet(t *testing.T, n int) *lobbyNet {
	ln := &lobbyNet{t: t, now: time.Unix(1_700_000_000, 0), ids: fuzzIDs(t, n)}
	for _, id := range ln.ids {
		ln.nodes = append(ln.nodes, &lobbyNode{id: id, timeout: 10 * time.Second, dials: make(map[peer.ID]int)})
	}
	return ln
}

// config is the lobby configuration of member i in a session of all the
// net's members.
func (ln *lobbyNet) config(i int) lobbyConfig {
	contrib := make([]byte, ContributionSize)
	contrib[0], contrib[1] = byte(i), 0xc0
	return lobbyConfig{
		params:   testParams(len(ln.ids)).withDefaults(),
		self:     ln.ids[i],
		members:  slices.Clone(ln.ids),
		contrib:  contrib,
		datagram: netip.AddrPortFrom(netip.AddrFrom4([4]byte{198, 18, 0, byte(i + 1)}), 4000),
		log:      slog.New(slog.DiscardHandler),
	}
}

func (ln *lobbyNet) node(id peer.ID) *lobbyNode {
	for _, n := range ln.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

func (ln *lobbyNet) logf(format string, args ...any) {
	ln.trace = append(ln.trace, fmt.Sprintf("%6v ", ln.now.Sub(time.Unix(1_700_000_000, 0)))+fmt.Sprintf(format, args...))
}

func (ln *lobbyNet) short(id peer.ID) string {
	if i := slices.Index(ln.ids, id); i >= 0 {
		return fmt.Sprintf("m%d", i)
	}
	return id.String()
}

func (ln *lobbyNet) post(ev netEvent) { ln.queue = append(ln.queue, ev) }

// route performs the sends of node n's machine.
func (ln *lobbyNet) route(n *lobbyNode) {
	for _, s := range n.m.sends() {
		to := ln.node(s.to)
		ln.logf("%s -> %s %s dial=%v probe=%v", ln.short(n.id), ln.short(s.to), s.msg.Type, s.dial, s.probe)
		switch {
		case s.dial || s.probe:
			if s.dial {
				n.dials[s.to]++
			} else {
				n.probes++
			}
			ans := ln.answer(to, n.id, s.msg.Params.SessionID)
			if ans == nil { // accepted: the handler answers with its hello, the Join gets ours
				hello := s.msg
				ln.post(netEvent{at: ln.now.Add(netLatency), from: n.id, to: to.id, msg: &hello})
				ans = &to.m.hello
			}
			ln.post(netEvent{at: ln.now.Add(2 * netLatency), from: s.to, to: n.id, msg: ans, probe: s.probe})
		default:
			msg := s.msg
			ln.post(netEvent{at: ln.now.Add(netLatency), from: n.id, to: s.to, msg: &msg})
		}
	}
	if _, _, done := n.m.done(); done { // its streams close
		for _, p := range n.m.peers {
			if p.hello != nil {
				ln.post(netEvent{at: ln.now.Add(netLatency), from: n.id, to: p.id})
			}
		}
	}
}

// answer is what member `to`'s host answers the hello from `from` that
// opens a lobby stream: nil to accept it, else a refusal.
func (ln *lobbyNet) answer(to *lobbyNode, from peer.ID, session string) *lobbyMsg {
	if to == nil || (to.m != nil && to.m.cfg.params.SessionID != session) {
		return &lobbyMsg{Type: msgRefuse, Reason: refuseNoSession}
	}
	var members []peer.ID
	var self peer.ID
	running := to.running
	if to.m != nil {
		if _, _, done := to.m.done(); !done {
			members, self = to.m.cfg.members, to.id
		} else if to.sess != nil {
			running = to.sess.Members
		}
	}
	reason, detail, stranger := lobbyRefusal(members, self, running, from)
	if stranger {
		to.refused++
	}
	if reason == "" {
		return nil
	}
	return &lobbyMsg{Type: msgRefuse, Reason: reason, Detail: detail}
}

// run plays the lobby until every member that joins is done, or fails the
// test after limit of virtual time.
func (ln *lobbyNet) run(limit time.Duration) {
	ln.t.Helper()
	start := ln.now
	for {
		// The next thing to happen: a delivery, a join, a timer or a deadline.
		next, what := time.Time{}, -1
		consider := func(at time.Time, w int) {
			if !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next, what = at, w
			}
		}
		for _, ev := range ln.queue {
			consider(ev.at, -2)
		}
		busy := false
		for i, n := range ln.nodes {
			switch {
			case n.m == nil && n.joinAt >= 0:
				consider(start.Add(n.joinAt), i)
				busy = true
			case n.m != nil && n.sess == nil && n.err == nil:
				consider(n.m.next(), i)
				consider(n.deadline, i)
				busy = true
			}
		}
		if !busy {
			return
		}
		if next.IsZero() || next.Sub(start) > limit {
			ln.t.Fatalf("the lobby did not end within %v:\n%s", limit, ln.dump())
		}
		ln.now = next
		if what == -2 {
			ln.deliver()
		} else {
			ln.wake(ln.nodes[what])
		}
	}
}

// deliver hands over the earliest queued event.
func (ln *lobbyNet) deliver() {
	i := 0
	for j, ev := range ln.queue {
		if ev.at.Before(ln.queue[i].at) {
			i = j
		}
	}
	ev := ln.queue[i]
	ln.queue = slices.Delete(ln.queue, i, i+1)
	n := ln.node(ev.to)
	if n == nil || n.m == nil {
		return
	}
	switch {
	case ev.msg == nil:
		ln.logf("%s: stream from %s broke", ln.short(n.id), ln.short(ev.from))
		n.m.failed(ln.now, ev.from, io.EOF)
	case ev.probe:
		ln.logf("%s: probe answer from %s: %s %s", ln.short(n.id), ln.short(ev.from), ev.msg.Type, ev.msg.Reason)
		n.m.probed(ev.from, ev.msg)
	default:
		ln.logf("%s: %s from %s", ln.short(n.id), ev.msg.Type, ln.short(ev.from))
		n.m.receive(ln.now, ev.from, ev.msg, netip.Addr{})
	}
	ln.settle(n)
}

// wake starts node n's Join, fires its timer or ends its deadline.
func (ln *lobbyNet) wake(n *lobbyNode) {
	switch {
	case n.m == nil:
		cfg := ln.config(slices.Index(ln.ids, n.id))
		if n.edit != nil {
			n.edit(&cfg)
		}
		ln.logf("%s joins", ln.short(n.id))
		n.m = newLobbyMachine(cfg, ln.now)
		n.deadline = ln.now.Add(n.timeout)
	case !ln.now.Before(n.deadline):
		n.m.expire(context.DeadlineExceeded)
	default:
		n.m.tick(ln.now)
	}
	ln.settle(n)
}

func (ln *lobbyNet) settle(n *lobbyNode) {
	ln.route(n)
	if sess, err, done := n.m.done(); done && n.sess == nil && n.err == nil {
		n.sess, n.err = sess, err
		ln.logf("%s done: err=%v", ln.short(n.id), err)
	}
}

func (ln *lobbyNet) dump() string {
	out := ""
	for _, l := range ln.trace {
		out += l + "\n"
	}
	return out
}

// agreed fails the test unless members idx all agreed on one session.
func (ln *lobbyNet) agreed(idx ...int) {
	ln.t.Helper()
	want := ln.nodes[idx[0]].sess
	for _, i := range idx {
		n := ln.nodes[i]
		if n.err != nil || n.sess == nil {
			ln.t.Fatalf("member %d: %v\n%s", i, n.err, ln.dump())
		}
		s := n.sess
		if s.ID != want.ID || s.Seed != want.Seed || !slices.Equal(s.Members, want.Members) ||
			!slices.Equal(s.Endpoints, want.Endpoints) || !sameParams(s.Params, want.Params) || !s.Start.Equal(want.Start) {
			ln.t.Fatalf("member %d disagrees:\n%+v\nvs member %d:\n%+v", i, s, idx[0], want)
		}
		if s.Members[s.Self] != n.id || s.Endpoints[s.Self] != ln.config(i).datagram {
			ln.t.Errorf("member %d: slot %d, endpoint %v: not itself", i, s.Self, s.Endpoints[s.Self])
		}
	}
}

func TestLobbyMachineAgrees(t *testing.T) {
	for n := 1; n <= 4; n++ {
		t.Run(fmt.Sprintf("%d members", n), func(t *testing.T) {
			ln := newLobbyNet(t, n)
			ln.run(time.Second)
			all := make([]int, n)
			for i := range all {
				all[i] = i
			}
			ln.agreed(all...)
			s := ln.nodes[0].sess
			var contribs [][]byte
			for i := range n {
				contribs = append(contribs, ln.config(i).contrib)
			}
			if len(s.Members) != n || s.Seed != rng.SharedSeed(contribs) {
				t.Errorf("members %d, seed %x: not everyone's contribution", len(s.Members), s.Seed)
			}
			// The coordinator announces a start StartDelay after it heard
			// the last ready; the others hear it a latency later.
			if d := s.Start.Sub(ln.now); d <= 0 || d > StartDelay {
				t.Errorf("start %v after the lobby ended, want in (0, %v]", d, StartDelay)
			}
			for i, node := range ln.nodes {
				for j, id := range ln.ids {
					if d := node.dials[id]; (j > i) != (d > 0) {
						t.Errorf("member %d dialled member %d %d times: the lower dials the higher", i, j, d)
					}
				}
			}
		})
	}
}

// A member that joins late is waited for: the lower members dial it again
// every lobbyRetry.
func TestLobbyMachineLateMember(t *testing.T) {
	ln := newLobbyNet(t, 3)
	ln.nodes[2].joinAt = 350 * time.Millisecond
	ln.run(time.Second)
	ln.agreed(0, 1, 2)
	for i := range 2 {
		if d := ln.nodes[i].dials[ln.ids[2]]; d < 3 || d > 5 {
			t.Errorf("member %d dialled the late member %d times in 350 ms, want about one per %v", i, d, lobbyRetry)
		}
	}
}

// A member that never comes: the others give up at their deadline, naming
// it and why the last dial failed; the higher members probe it every
// LobbyWaitReport.
func TestLobbyMachineSilentMember(t *testing.T) {
	for _, silent := range []int{0, 2} {
		t.Run(fmt.Sprintf("member %d", silent), func(t *testing.T) {
			ln := newLobbyNet(t, 3)
			ln.nodes[silent].joinAt = -1
			for _, n := range ln.nodes {
				n.timeout = 12 * time.Second
			}
			ln.run(time.Minute)
			for i, n := range ln.nodes {
				if i == silent {
					continue
				}
				if !errors.Is(n.err, context.DeadlineExceeded) {
					t.Fatalf("member %d: %v, want DeadlineExceeded\n%s", i, n.err, ln.dump())
				}
				errorContains(t, slotName(i), n.err, "did not answer", ln.ids[silent].String())
				if silent > i && !errors.Is(n.err, ErrNoSession) {
					t.Errorf("member %d: %v, want the last try's ErrNoSession", i, n.err)
				}
			}
			for i, n := range ln.nodes {
				want := 0
				if i > silent {
					want = int(12 * time.Second / LobbyWaitReport)
				}
				if n.probes != want {
					t.Errorf("member %d probed %d times in 12 s, want %d (the silent member is lower: once per %v)", i, n.probes, want, LobbyWaitReport)
				}
			}
		})
	}
}

// A member that reveals something other than what it committed to is
// caught by every honest member, which names it.
func TestLobbyMachineBadReveal(t *testing.T) {
	for _, cheater := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("member %d", cheater), func(t *testing.T) {
			ln := newLobbyNet(t, 4)
			ln.nodes[cheater].edit = func(c *lobbyConfig) {
				c.reveal = func(b []byte) []byte { b[0] ^= 1; return b }
			}
			ln.run(time.Second)
			for i, n := range ln.nodes {
				if i == cheater {
					if n.err == nil {
						t.Error("the cheater joined")
					}
					continue
				}
				if !errors.Is(n.err, ErrBadReveal) {
					t.Fatalf("member %d: %v, want ErrBadReveal\n%s", i, n.err, ln.dump())
				}
				errorContains(t, slotName(i), n.err, ln.ids[cheater].String())
			}
		})
	}
}

// Members that disagree on the parameters or the member list fail on both
// sides of each pair, naming the other and what differs.
func TestLobbyMachineMismatch(t *testing.T) {
	tests := []struct {
		name   string
		change func(*lobbyConfig)
		want   error
		says   string
	}{
		{"version", func(c *lobbyConfig) { c.params.ProtocolVersion = 99 }, ErrVersionMismatch, "speaks"},
		{"frame", func(c *lobbyConfig) { c.params.FrameMillis = 33 }, ErrParamsMismatch, "frame length"},
		{"sim", func(c *lobbyConfig) { c.params.Sim = "other" }, ErrParamsMismatch, "simulation"},
		{"sim version", func(c *lobbyConfig) { c.params.SimVersion = "2.0" }, ErrParamsMismatch, "simulation version"},
		{"initial delay", func(c *lobbyConfig) { c.params.InitialDelay = 7 }, ErrParamsMismatch, "initial delay"},
		{"session length", func(c *lobbyConfig) { c.params.Frames = 600 }, ErrParamsMismatch, "session length"},
		{"open slots", func(c *lobbyConfig) { c.params.Slots = 5 }, ErrParamsMismatch, "slots"},
		{"members", func(c *lobbyConfig) { c.members = fuzzIDs(t, 3) }, ErrMembersMismatch, "adds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln := newLobbyNet(t, 2)
			ln.nodes[1].edit = tt.change
			ln.run(time.Second)
			for i, n := range ln.nodes {
				if !errors.Is(n.err, tt.want) {
					t.Fatalf("member %d: %v, want %v\n%s", i, n.err, tt.want, ln.dump())
				}
				errorContains(t, slotName(i), n.err, tt.says, ln.ids[1-i].String())
			}
		})
	}
}

// A peer that is not in the member list learns nothing: the member it
// dials answers as a host without the session would, counts it as a
// stranger, and the members agree without it.
func TestLobbyMachineStranger(t *testing.T) {
	ln := newLobbyNet(t, 3)
	// Member 0 of a three-member net plays the stranger to the session of
	// members 1 and 2: it knows their IDs and dials them, they list only
	// each other.
	pair := ln.ids[1:]
	for i := 1; i <= 2; i++ {
		ln.nodes[i].edit = func(c *lobbyConfig) {
			c.members = slices.Clone(pair)
			c.params.Members = 2
		}
	}
	ln.nodes[0].timeout = time.Second
	ln.run(2 * time.Second)
	ln.agreed(1, 2)
	if s := ln.nodes[1].sess; slices.Contains(s.Members, ln.ids[0]) || len(s.Members) != 2 {
		t.Fatalf("members %v", s.Members)
	}
	if err := ln.nodes[0].err; !errors.Is(err, ErrNoSession) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stranger: %v, want ErrNoSession and DeadlineExceeded", err)
	}
	if ln.nodes[1].refused == 0 || ln.nodes[2].refused == 0 {
		t.Errorf("refusals of the stranger: %d, %d; want some at each member", ln.nodes[1].refused, ln.nodes[2].refused)
	}
}

// A member restarted after its session began is told that the session runs
// without it: by its answer to its dial when it is the lower member, by the
// answer to its probe after LobbyWaitReport when it is the higher.
func TestLobbyMachineRestartedMember(t *testing.T) {
	for _, restarted := range []int{0, 1} {
		t.Run(fmt.Sprintf("member %d", restarted), func(t *testing.T) {
			ln := newLobbyNet(t, 2)
			other := ln.nodes[1-restarted]
			other.joinAt, other.running = -1, slices.Clone(ln.ids)
			ln.run(time.Minute)
			err := ln.nodes[restarted].err
			if !errors.Is(err, ErrSessionRunning) {
				t.Fatalf("restarted member: %v, want ErrSessionRunning\n%s", err, ln.dump())
			}
		})
	}
}

// A message out of order is a protocol violation, and the member says why
// to those it met.
func TestLobbyMachineOutOfOrder(t *testing.T) {
	ln := newLobbyNet(t, 2)
	cfg := ln.config(1)
	m := newLobbyMachine(cfg, ln.now)
	other := newLobbyMachine(ln.config(0), ln.now)
	m.receive(ln.now, ln.ids[0], &other.hello, netip.Addr{})
	m.sends()
	m.receive(ln.now, ln.ids[0], &lobbyMsg{Type: msgStart}, netip.Addr{})
	_, err, done := m.done()
	if !done || !errors.Is(err, ErrLobbyProtocol) {
		t.Fatalf("done %v, err %v; want ErrLobbyProtocol", done, err)
	}
	if s := m.sends(); len(s) != 1 || s[0].msg.Type != msgAbort || s[0].to != ln.ids[0] {
		t.Errorf("sends %+v, want one abort to the member", s)
	}
}

// FuzzLobbyMachine feeds a lobby machine of three members arbitrary
// messages from the other two, broken streams, probe answers, time and
// its deadline, in any order: it must never panic, a result once reached
// stays, and an agreement it reaches names the members and this one's slot.
// Each step of the input is op, member, a 2-byte length, then that many
// bytes of JSON.
func FuzzLobbyMachine(f *testing.F) {
	ids := fuzzIDs(f, 3)
	params := testParams(3).withDefaults()
	start := time.Unix(1_700_000_000, 0)
	cfg := lobbyConfig{params: params, self: ids[1], members: ids, contrib: make([]byte, ContributionSize),
		datagram: netip.MustParseAddrPort("127.0.0.1:4001"), log: slog.New(slog.DiscardHandler)}
	contrib := func(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, ContributionSize) }
	hellos := make([]lobbyMsg, 3)
	for _, i := range []int{0, 2} {
		commit := rng.Commit(contrib(i))
		hellos[i] = lobbyMsg{Type: msgHello, Params: &params, Members: idStrings(ids), Commit: commit[:], Datagram: fmt.Sprintf("127.0.0.1:%d", 4000+i)}
	}
	ref := newLobbyMachine(cfg, start) // the transcript the others must reveal with
	ref.receive(start, ids[0], &hellos[0], netip.Addr{})
	ref.receive(start, ids[2], &hellos[2], netip.Addr{})
	step := func(op, from byte, m lobbyMsg) []byte {
		body, _ := json.Marshal(&m)
		return append([]byte{op, from, byte(len(body) >> 8), byte(len(body))}, body...)
	}
	reveal := func(i int) lobbyMsg {
		return lobbyMsg{Type: msgReveal, Contribution: contrib(i), Transcript: ref.transcript}
	}
	happy := slices.Concat(step(0, 0, hellos[0]), step(0, 1, hellos[2]), step(0, 1, reveal(2)), step(0, 0, reveal(0)),
		step(0, 0, lobbyMsg{Type: msgStart, StartUnixNano: start.Add(StartDelay).UnixNano()}))
	f.Add(happy)
	f.Add(step(0, 0, hellos[0]))
	f.Add(slices.Concat(step(0, 1, hellos[2]), step(0, 1, lobbyMsg{Type: msgAbort, Detail: "x"}), step(1, 0, lobbyMsg{})))
	f.Add(slices.Concat(step(3, 0, lobbyMsg{Detail: strings.Repeat("x", 150)}), step(2, 0, lobbyMsg{Type: msgRefuse, Reason: refuseRunning})))
	f.Add(step(4, 0, lobbyMsg{}))
	play := func(t testing.TB, script []byte) *Agreement {
		now := start
		m := newLobbyMachine(cfg, now)
		var done bool
		var result *Agreement
		var resErr error
		for len(script) >= 4 {
			op, from, n := script[0]%5, ids[[]int{0, 2}[script[1]%2]], int(script[2])<<8|int(script[3])
			script = script[4:]
			body := script[:min(n, len(script))]
			script = script[len(body):]
			var msg lobbyMsg
			ok := json.Unmarshal(body, &msg) == nil
			switch op {
			case 0:
				if ok {
					m.receive(now, from, &msg, netip.Addr{})
				}
			case 1:
				m.failed(now, from, io.EOF)
			case 2:
				if ok {
					m.probed(from, &msg)
				}
			case 3:
				now = now.Add(time.Duration(n%1024) * 10 * time.Millisecond)
				m.tick(now)
			case 4:
				m.expire(context.DeadlineExceeded)
			}
			m.sends()
			a, err, d := m.done()
			if done && (a != result || err != resErr || !d) {
				t.Fatalf("the result changed after the end: %v, %v", a, err)
			}
			if d && !done {
				done, result, resErr = true, a, err
				if (a == nil) == (err == nil) {
					t.Fatalf("done with agreement %v and error %v", a, err)
				}
				if a != nil && (!slices.Equal(a.Members, ids) || a.Self != 1 || len(a.Endpoints) != 3 || a.Endpoints[1] != cfg.datagram) {
					t.Fatalf("agreement %+v", a)
				}
			}
		}
		return result
	}
	if a := play(f, happy); a == nil || a.Start != start.Add(StartDelay) {
		f.Fatalf("the happy script ends with %+v, want an agreement", a)
	}
	f.Fuzz(func(t *testing.T, script []byte) { play(t, script) })
}
