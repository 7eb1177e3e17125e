package lockstep_test

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/stretchr/testify/require"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// TestScenarios runs the scripts in testdata/*.txt against cores driven by
// hand, as etcd's raft runs its interaction scripts: the script owns the
// clock and every datagram in flight, and each command prints what the
// cores did. The cores run on the network the core's Go tests use
// (testNet), which checks every Ready against the core's contract. Rewrite the expected output with -rewrite after a deliberate
// change, and read the diff.
//
// Commands:
//
//	init members=N [fixed=D] [initial-delay=D] [drop-timeout=DUR]
//	     [seal-repeat=DUR] [latency=DUR]
//	submit m=I payload=TEXT        Submit on member I now; prints the stamped frame
//	tick [by=DUR]                  advance the clock (default one frame); no Ready
//	ready [m=(I,...)]              Ready on the members (default all): datagrams
//	                               (decoded, then held in flight), buckets, events
//	deliver [from=I] [to=J]        hand the held datagrams over now, in send order
//	                               (those across a cut or from a muted member are lost)
//	drop [from=I] [to=J]           lose the held datagrams
//	partition cut=(I,...)          cut the members listed off from the others
//	mute m=I                       lose every datagram member I sends
//	heal                           undo every cut and mute
//	run for=DUR                    let time pass: Ready at every deadline and on
//	                               input, datagrams arriving after the latency
//	                               (across a cut they are lost); prints events;
//	                               a member that has Left stops
//	perturb m=I                    change member I's simulation state, as a
//	                               nondeterministic game would
//	leave m=I                      Leave on member I now
//	stats [m=(I,...)]              frame clock, executed frame, seal, delay, stalls
func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			return
		}
		e := &scenario{t: t}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			e.t = t
			e.out.Reset()
			e.do(d)
			return e.out.String()
		})
	})
}

// scenario is a script's view of the core tests' network (testNet): the
// cores, their clock and the datagrams in flight are the network's; the
// script adds cuts and mutes, and prints.
type scenario struct {
	t       *testing.T
	n       *testNet
	cut     []bool // per member: cut off from the members not cut
	muted   []bool // per member: its datagrams are lost
	verbose bool   // the Ready being run prints all it did, not only its events
	running bool   // the Ready is run's: a member that has Left exits
	out     strings.Builder
	pkt     wire.Packet
}

// chainSim hashes every command it steps into its state.
type chainSim struct{ h uint64 }

func (s *chainSim) Step(f bucket.Frame, cmds []bucket.Command) {
	h := fnv.New64a()
	fmt.Fprint(h, s.h, f)
	for _, c := range cmds {
		fmt.Fprint(h, c.Slot, c.Seq)
		h.Write(c.Payload)
	}
	s.h = h.Sum64()
}

func (s *chainSim) Hash() uint64 { return s.h }

func (e *scenario) printf(format string, args ...any) { fmt.Fprintf(&e.out, format, args...) }

func (e *scenario) do(d *datadriven.TestData) {
	switch d.Cmd {
	case "init":
		e.init(d)
	case "submit":
		m := e.member(d, "m")
		var payload string
		d.ScanArgs(e.t, "payload", &payload)
		f := e.n.submit(bucket.Slot(m), []byte(payload))
		e.printf("m%d submits %q for frame %d\n", m, payload, f)
	case "tick":
		by := e.duration(d, "by", e.n.cores[0].Config().Frame)
		e.n.now += by
		e.printf("now %v\n", e.n.now)
	case "ready":
		e.verbose = true
		for _, m := range e.members(d) {
			e.n.ready(m)
		}
		e.verbose = false
	case "deliver", "drop":
		from, to := e.optMember(d, "from"), e.optMember(d, "to")
		n := 0
		for _, h := range e.n.net.Take(func(h flight) bool {
			return (from < 0 || h.from == bucket.Slot(from)) && (to < 0 || h.to == bucket.Slot(to))
		}) {
			n++
			if d.Cmd == "deliver" {
				if !e.carries(h.from, h.to) {
					e.printf("m%d→m%d lost to a cut or mute\n", h.from, h.to)
				} else {
					e.n.cores[h.to].Receive(e.n.now, h.from, h.data)
				}
			}
		}
		e.printf("%s %d datagram(s)\n", map[string]string{"deliver": "delivered", "drop": "dropped"}[d.Cmd], n)
	case "partition":
		var cut []string
		d.ScanArgs(e.t, "cut", &cut)
		for _, s := range cut {
			m, err := strconv.Atoi(s)
			require.NoError(e.t, err)
			e.cut[m] = true
		}
		e.printf("cut off: %v\n", cut)
	case "mute":
		m := e.member(d, "m")
		e.muted[m] = true
		e.printf("m%d muted\n", m)
	case "perturb":
		m := e.member(d, "m")
		e.n.sims[m].h ^= 1
		e.printf("m%d's state perturbed\n", m)
	case "heal":
		clear(e.cut)
		clear(e.muted)
		e.printf("healed\n")
	case "run":
		e.run(e.duration(d, "for", 0))
	case "leave":
		m := e.member(d, "m")
		f, err := e.n.cores[m].Leave(e.n.now)
		require.NoError(e.t, err)
		e.printf("m%d leaves after frame %d\n", m, f)
	case "stats":
		for _, m := range e.members(d) {
			st := e.n.cores[m].Stats()
			e.printf("m%d: clock frame %d, executed %d, seal %d, delay %d, stalls %d, commands %d\n",
				m, st.Frame, st.Executed, st.Seal, st.Delay, st.Stalls, st.Commands)
		}
	default:
		e.t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
}

func (e *scenario) init(d *datadriven.TestData) {
	var members int
	d.ScanArgs(e.t, "members", &members)
	cfg := lockstep.Config{Members: members, Session: testSession}
	if d.HasArg("fixed") {
		var fixed int
		d.ScanArgs(e.t, "fixed", &fixed)
		cfg.Policy = lockstep.Fixed{Frames: fixed}
	}
	if d.HasArg("initial-delay") {
		d.ScanArgs(e.t, "initial-delay", &cfg.InitialDelay)
	}
	cfg.DropTimeout = e.duration(d, "drop-timeout", 0)
	cfg.SealRepeat = e.duration(d, "seal-repeat", 0)
	// The scripts start from the initial delay's lead, as written.
	cfg.StartLead = -1
	latency := e.duration(d, "latency", 10*time.Millisecond)
	*e = scenario{t: e.t, cut: make([]bool, members), muted: make([]bool, members)}
	e.n = newTestNet(e.t, members, 1, func(c *lockstep.Config) {
		self := c.Self
		*c = cfg
		c.Self = self
	})
	e.n.setLatency(latency)
	e.n.syncSubmit = false
	e.n.block = func(_ time.Duration, from, to bucket.Slot) bool { return !e.carries(from, to) }
	e.n.afterReady = e.print
	for range members {
		e.n.sims = append(e.n.sims, &chainSim{})
	}
	c := e.n.cores[0].Config()
	e.printf("%d members, frame %v, initial delay %d, latency %v\n", members, c.Frame, c.InitialDelay, latency)
}

// print prints what member m's Ready rd did: when verbose all of it, else
// its events; in a run, a member that has Left exits.
func (e *scenario) print(m int, rd lockstep.Ready) {
	now := e.n.now
	if e.verbose {
		e.printf("m%d ready at %v, deadline %v\n", m, now, rd.Deadline)
		for _, dg := range rd.Datagrams {
			e.printf("  send m%d→m%d %s\n", m, dg.To, e.decode(dg.Data))
		}
		for _, b := range rd.Buckets {
			if len(b.Commands) > 0 {
				e.printf("  step frame %d:", b.Frame)
				for _, cmd := range b.Commands {
					e.printf(" m%d#%d %q", cmd.Slot, cmd.Seq, cmd.Payload)
				}
				e.printf("\n")
			}
		}
		if len(rd.Buckets) > 0 {
			e.printf("  stepped frames %d..%d\n", rd.Buckets[0].Frame, rd.Buckets[len(rd.Buckets)-1].Frame)
		}
	}
	for _, ev := range rd.Events {
		e.printf("  at %v m%d event: %v\n", now, m, ev)
	}
	if e.running && e.n.cores[m].Left() {
		e.n.exited[m] = true
		e.printf("  at %v m%d left: it stops\n", now, m)
	}
}

// decode renders a datagram's fields, block by block.
func (e *scenario) decode(data []byte) string {
	p := &e.pkt
	require.NoError(e.t, wire.Parse(data, p))
	var s strings.Builder
	fmt.Fprintf(&s, "#%d seal %d next %d ack %d ackseal %d", p.Number, p.Seal, p.Next, p.Ack, p.AckSeal)
	for _, c := range p.Commands {
		fmt.Fprintf(&s, " cmd{frame %d %q}", c.Frame, c.Payload)
	}
	if p.HasEcho {
		fmt.Fprintf(&s, " echo #%d", p.Echo.Number)
	}
	if p.HasHash {
		fmt.Fprintf(&s, " hash{frame %d}", p.Hash.Frame)
	}
	if p.HasMembership {
		fmt.Fprintf(&s, " membership{suspected %b}", p.Membership.Suspected)
	}
	if p.HasLeave {
		fmt.Fprintf(&s, " leave{frame %d}", p.LeaveFrame)
	}
	if p.HasRelay {
		fmt.Fprintf(&s, " relay{m%d from #%d, %d cmds, seal %d}", p.Relay.Member, p.Relay.First, len(p.Relay.Commands), p.Relay.Seal)
	}
	if p.HasDetail {
		fmt.Fprintf(&s, " detail{from frame %d}", p.Detail.Start)
	}
	return s.String()
}

// carries reports whether the network delivers from's datagrams to to.
func (e *scenario) carries(from, to bucket.Slot) bool {
	return e.cut[from] == e.cut[to] && !e.muted[from]
}

// run lets d pass: every datagram arrives after the latency (lost across a
// cut), and every member runs Ready at its deadline and after input. It
// prints the events as they come and where each member stands at the end.
func (e *scenario) run(d time.Duration) {
	e.running = true
	e.n.runUntil(e.n.now + d)
	e.running = false
	e.printf("now %v\n", e.n.now)
	for m, c := range e.n.cores {
		st := c.Stats()
		e.printf("m%d: clock frame %d, executed %d, stalls %d, commands %d\n", m, st.Frame, st.Executed, st.Stalls, st.Commands)
	}
}

// member reads the member named by key.
func (e *scenario) member(d *datadriven.TestData, key string) int {
	var m int
	d.ScanArgs(e.t, key, &m)
	require.Less(e.t, m, len(e.n.cores), "%s: no member %d", d.Pos, m)
	return m
}

// optMember reads the member named by key, or -1 without it.
func (e *scenario) optMember(d *datadriven.TestData, key string) int {
	if !d.HasArg(key) {
		return -1
	}
	return e.member(d, key)
}

// members reads the list m=(...), or every member without it.
func (e *scenario) members(d *datadriven.TestData) []int {
	var all []int
	if !d.HasArg("m") {
		for m := range e.n.cores {
			all = append(all, m)
		}
		return all
	}
	var list []string
	d.ScanArgs(e.t, "m", &list)
	for _, s := range list {
		m, err := strconv.Atoi(s)
		require.NoError(e.t, err)
		all = append(all, m)
	}
	return all
}

// duration reads key as a duration, or def without it.
func (e *scenario) duration(d *datadriven.TestData, key string, def time.Duration) time.Duration {
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(e.t, key, &s)
	v, err := time.ParseDuration(s)
	require.NoError(e.t, err)
	return v
}
