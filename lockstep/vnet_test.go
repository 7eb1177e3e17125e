package lockstep_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// testNet drives cores by hand over the virtual network (netsim.Network,
// the harness's), for the scenario scripts (TestScenarios) and the Go
// tests of the core: every datagram takes the same latency, and
// impairments are applied explicitly to each batch of datagrams arriving
// at the same moment. Every Ready it runs is checked against the core's
// contract (ready).

// flight is a datagram in flight.
type flight struct {
	from, to bucket.Slot
	data     []byte
}

// cmdRec is one command as submitted or as stepped.
type cmdRec struct {
	slot    bucket.Slot
	seq     uint32
	frame   bucket.Frame
	payload string
}

func (c cmdRec) String() string {
	return fmt.Sprintf("{slot %d seq %d frame %d payload %q}", c.slot, c.seq, c.frame, c.payload)
}

type plannedSubmit struct {
	at      time.Duration
	slot    bucket.Slot
	payload []byte
}

type testNet struct {
	t        testing.TB
	cfgs     []lockstep.Config
	cores    []*lockstep.Core
	now      time.Duration
	latency  time.Duration // every datagram's: set it with setLatency
	deadline []time.Duration
	kick     []bool
	net      *netsim.Network[flight]
	rng      *rand.Rand

	// Impairments, applied to each batch of datagrams due at one moment.
	loss    float64                                            // share of datagrams dropped
	dup     bool                                               // deliver every datagram twice
	reverse bool                                               // deliver each batch in reverse order
	block   func(now time.Duration, from, to bucket.Slot) bool // drop when true
	// rewrite, when set, replaces each datagram by what it returns (nil
	// drops it).
	rewrite func(now time.Duration, from, to bucket.Slot, data []byte) []byte
	// heldUntil holds every datagram sent before it until then, as a
	// connection that takes that long to set up would: it is sent then.
	heldUntil time.Duration

	// syncSubmit calls Ready just before each Submit, so the stamped frame
	// can be checked against Stats.
	syncSubmit bool
	// checkDeadline checks that every Deadline lies in (now, now+frame].
	checkDeadline bool
	// afterReady, when set, sees every Ready after the built-in checks.
	afterReady func(i int, rd lockstep.Ready)
	// sims, when set, step every member's buckets (lockstep.StepBucket),
	// which reports each frame's hash to the core.
	sims []*chainSim
	secs []lockstep.Section
	// exited marks the members the network drives no more (they Left):
	// no Ready, and what arrives for them is lost.
	exited []bool

	plan      []plannedSubmit
	submitted []cmdRec
	seqs      []uint32
	lastStamp []bucket.Frame
	executed  [][]cmdRec        // per member: every command stepped, in order
	last      []bucket.Frame    // per member: newest bucket frame
	emittedAt [][]time.Duration // per member, per frame: when its bucket came out
	sealSent  []bucket.Frame    // per member: highest seal it sent
	sealTo    [][]bucket.Frame  // [i][j]: seal of i's last complete datagram to j
	peerSeal  [][]bucket.Frame  // [i][j]: member j's seal as held by i
	events    [][]lockstep.Event
	readys    int // Ready calls, for sampling
	pkt       wire.Packet
	peerStats []lockstep.PeerStats
}

func newTestNet(t testing.TB, members int, seed uint64, tweak func(*lockstep.Config)) *testNet {
	t.Helper()
	n := &testNet{
		t:             t,
		rng:           rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)),
		syncSubmit:    true,
		checkDeadline: true,
	}
	for i := range members {
		cfg := memberConfig(members, bucket.Slot(i))
		if tweak != nil {
			tweak(&cfg)
		}
		n.cores = append(n.cores, newCore(t, cfg, 0))
		n.cfgs = append(n.cfgs, n.cores[i].Config())
		n.peerSeal = append(n.peerSeal, slices.Repeat([]bucket.Frame{-1}, members))
		n.sealTo = append(n.sealTo, slices.Repeat([]bucket.Frame{-1}, members))
	}
	n.setLatency(10 * time.Millisecond)
	n.deadline = make([]time.Duration, members)
	n.kick = make([]bool, members)
	n.seqs = make([]uint32, members)
	n.lastStamp = slices.Repeat([]bucket.Frame{-1}, members)
	n.executed = make([][]cmdRec, members)
	n.last = slices.Repeat([]bucket.Frame{-1}, members)
	n.emittedAt = make([][]time.Duration, members)
	n.sealSent = slices.Repeat([]bucket.Frame{-1}, members)
	n.events = make([][]lockstep.Event, members)
	n.exited = make([]bool, members)
	return n
}

// setLatency rebuilds the network with every datagram taking d. It
// panics if a datagram is in flight.
func (n *testNet) setLatency(d time.Duration) {
	if n.net != nil && n.net.Len() > 0 {
		panic("setLatency with datagrams in flight")
	}
	n.latency = d
	p := netsim.Profile{Name: "core-tests", Phases: []netsim.Phase{{Duration: time.Hour, Conditions: netsim.Conditions{Latency: d}}}}
	root := rng.New(0, 0)
	n.net = netsim.NewNetwork[flight](len(n.cores), p, func(from, to int) *rng.PCG {
		return root.Derive(fmt.Sprintf("link %d->%d", from, to))
	})
}

// planRandom schedules commands from every member in slots at seeded random
// moments in [from, to), one every meanGap on average, with payloads of 0 to
// 64 bytes.
func (n *testNet) planRandom(slots []bucket.Slot, from, to, meanGap time.Duration) {
	for _, s := range slots {
		for at := from + time.Duration(n.rng.Int64N(int64(meanGap))); at < to; at += time.Duration(n.rng.Int64N(2*int64(meanGap))) + 1 {
			p := make([]byte, n.rng.IntN(65))
			for i := range p {
				p[i] = byte(n.rng.Uint32())
			}
			n.plan = append(n.plan, plannedSubmit{at: at, slot: s, payload: p})
		}
	}
	slices.SortStableFunc(n.plan, func(a, b plannedSubmit) int { return int(a.at - b.at) })
}

// step advances to the next moment something happens, if that is no later
// than end, and handles it: deliveries, then submits, then Ready of every
// member whose deadline has come or that got input. It reports false when
// nothing happens until end.
func (n *testNet) step(end time.Duration) bool {
	next := end + 1
	for i, d := range n.deadline {
		if !n.exited[i] {
			next = min(next, d)
		}
	}
	if at, ok := n.net.Next(); ok {
		next = min(next, at)
	}
	if len(n.plan) > 0 {
		next = min(next, n.plan[0].at)
	}
	if next > end {
		n.now = max(n.now, end)
		return false
	}
	n.now = next
	var batch []flight
	for at, ok := n.net.Next(); ok && at == next; at, ok = n.net.Next() {
		_, fl, _ := n.net.Pop()
		batch = append(batch, fl)
	}
	if n.reverse {
		slices.Reverse(batch)
	}
	for _, fl := range batch {
		if n.exited[fl.to] || (n.block != nil && n.block(next, fl.from, fl.to)) {
			continue
		}
		if n.rewrite != nil {
			if fl.data = n.rewrite(next, fl.from, fl.to, fl.data); fl.data == nil {
				continue
			}
		}
		if n.loss > 0 && n.rng.Float64() < n.loss {
			continue
		}
		copies := 1
		if n.dup {
			copies = 2
		}
		for range copies {
			n.cores[fl.to].Receive(next, fl.from, fl.data)
		}
		n.kick[fl.to] = true
	}
	for len(n.plan) > 0 && n.plan[0].at == next {
		s := n.plan[0]
		n.plan = n.plan[1:]
		n.submit(s.slot, s.payload)
	}
	for i := range n.cores {
		if !n.exited[i] && (n.kick[i] || n.deadline[i] <= next) {
			n.ready(i)
		}
	}
	return true
}

func (n *testNet) runUntil(end time.Duration) {
	for n.step(end) {
		if n.t.Failed() {
			n.t.FailNow()
		}
	}
}

// runUntilExecuted runs until every member has stepped frame f, failing the
// test if that takes past limit.
func (n *testNet) runUntilExecuted(f bucket.Frame, limit time.Duration) {
	n.t.Helper()
	for slices.Min(n.last) < f {
		if !n.step(limit) {
			n.t.Fatalf("at %v: members stepped up to frames %v, want %d", n.now, n.last, f)
		}
		if n.t.Failed() {
			n.t.FailNow()
		}
	}
}

// submit submits payload on member slot now, checks the frame it was
// stamped with and returns it.
func (n *testNet) submit(slot bucket.Slot, payload []byte) bucket.Frame {
	t := n.t
	c := n.cores[slot]
	if n.syncSubmit {
		n.ready(int(slot))
	}
	st := c.Stats()
	f, err := c.Submit(n.now, payload)
	if err != nil {
		t.Fatalf("member %d: Submit at %v: %v", slot, n.now, err)
	}
	if n.syncSubmit {
		if want := max(st.Frame+bucket.Frame(st.Delay), st.Seal+1); f != want {
			t.Errorf("member %d at %v: Submit stamped frame %d, want max(clock %d + delay %d, seal %d + 1) = %d",
				slot, n.now, f, st.Frame, st.Delay, st.Seal, want)
		}
	}
	if f < n.lastStamp[slot] {
		t.Errorf("member %d at %v: stamped frame %d after %d", slot, n.now, f, n.lastStamp[slot])
	}
	if f <= n.sealSent[slot] {
		t.Errorf("member %d at %v: stamped frame %d at or under seal %d it already sent", slot, n.now, f, n.sealSent[slot])
	}
	n.lastStamp[slot] = f
	n.submitted = append(n.submitted, cmdRec{slot: slot, seq: n.seqs[slot], frame: f, payload: string(payload)})
	n.seqs[slot]++
	n.kick[slot] = true
	return f
}

// ready runs one Ready of member i, checks it and carries it out.
func (n *testNet) ready(i int) {
	t := n.t
	c := n.cores[i]
	cfg := n.cfgs[i]
	now := n.now
	n.kick[i] = false
	rd := c.Ready(now)
	st := c.Stats()
	if rd.Deadline <= now {
		t.Fatalf("member %d: Ready(%v) returned deadline %v, not after now", i, now, rd.Deadline)
	}
	if n.checkDeadline && now >= cfg.Start && rd.Deadline > now+cfg.Frame && !c.Stopped() {
		t.Errorf("member %d: Ready(%v) returned deadline %v, more than a frame (%v) ahead", i, now, rd.Deadline, cfg.Frame)
	}
	n.deadline[i] = rd.Deadline

	// Datagrams: well formed, from us, within size, never promising more
	// than our seal; the seal of the last datagram to each member (the
	// others of a split flush carry a partial seal) never decreases.
	lastTo := map[bucket.Slot]bucket.Frame{}
	for _, d := range rd.Datagrams {
		if len(d.Data) > cfg.MaxDatagramSize {
			t.Errorf("member %d: %d-byte datagram to %d exceeds %d", i, len(d.Data), d.To, cfg.MaxDatagramSize)
		}
		if err := wire.Parse(d.Data, &n.pkt); err != nil {
			t.Fatalf("member %d: datagram to %d does not parse: %v", i, d.To, err)
		}
		p := &n.pkt
		if p.From != bucket.Slot(i) || p.Session != testSession || int(d.To) >= len(n.cores) || int(d.To) == i {
			t.Fatalf("member %d: datagram from %d session %#x to %d", i, p.From, p.Session, d.To)
		}
		if p.Seal > st.Seal {
			t.Errorf("member %d: datagram seal %d above own seal %d", i, p.Seal, st.Seal)
		}
		lastTo[d.To] = p.Seal
		n.net.Send(max(now, n.heldUntil), i, int(d.To), len(d.Data), flight{from: bucket.Slot(i), to: d.To, data: bytes.Clone(d.Data)})
	}
	for to, seal := range lastTo {
		if seal < n.sealTo[i][to] {
			t.Errorf("member %d at %v: sent seal %d to member %d after seal %d", i, now, seal, to, n.sealTo[i][to])
		}
		n.sealTo[i][to] = seal
		n.sealSent[i] = max(n.sealSent[i], seal)
	}

	// Buckets: in order, no gaps, never before their frame's time.
	for _, b := range rd.Buckets {
		if b.Frame != n.last[i]+1 {
			t.Fatalf("member %d: bucket of frame %d after frame %d", i, b.Frame, n.last[i])
		}
		if at := cfg.Start + time.Duration(b.Frame)*cfg.Frame; now < at || b.Frame > st.Frame {
			t.Errorf("member %d: bucket of frame %d at %v (clock frame %d), before its time %v", i, b.Frame, now, st.Frame, at)
		}
		for k, cmd := range b.Commands {
			if cmd.Frame != b.Frame {
				t.Errorf("member %d: bucket %d holds a command of frame %d", i, b.Frame, cmd.Frame)
			}
			if k > 0 {
				prev := b.Commands[k-1]
				if prev.Slot > cmd.Slot || (prev.Slot == cmd.Slot && prev.Seq >= cmd.Seq) {
					t.Errorf("member %d: bucket %d not in canonical order: slot %d seq %d then slot %d seq %d", i, b.Frame, prev.Slot, prev.Seq, cmd.Slot, cmd.Seq)
				}
			}
			n.executed[i] = append(n.executed[i], cmdRec{slot: cmd.Slot, seq: cmd.Seq, frame: cmd.Frame, payload: string(cmd.Payload)})
		}
		if n.sims != nil {
			_, n.secs = lockstep.StepBucket(c, n.sims[i], b, n.secs)
		}
		n.last[i] = b.Frame
		n.emittedAt[i] = append(n.emittedAt[i], now)
	}
	if st.Executed != n.last[i] {
		t.Errorf("member %d: Stats().Executed %d, last bucket %d", i, st.Executed, n.last[i])
	}
	n.events[i] = append(n.events[i], rd.Events...)

	// Others' seals as we hold them never go back. Sampled: AppendPeerStats
	// computes percentiles, and seals only grow, so a sample catches any
	// decrease since the last one.
	if n.readys++; n.readys%32 == 0 {
		n.peerStats = c.AppendPeerStats(n.peerStats[:0])
		for _, ps := range n.peerStats {
			if ps.Seal < n.peerSeal[i][ps.Slot] {
				t.Errorf("member %d: seal of member %d went back from %d to %d", i, ps.Slot, n.peerSeal[i][ps.Slot], ps.Seal)
			}
			n.peerSeal[i][ps.Slot] = ps.Seal
		}
	}
	if n.afterReady != nil {
		n.afterReady(i, rd)
	}
}

// checkAllExecuted checks that every member stepped every submitted command
// exactly once, in canonical order, on the frame it was stamped with: which
// also makes every member's buckets identical.
func (n *testNet) checkAllExecuted() {
	t := n.t
	t.Helper()
	want := slices.Clone(n.submitted)
	slices.SortFunc(want, func(a, b cmdRec) int {
		switch {
		case a.frame != b.frame:
			return int(a.frame - b.frame)
		case a.slot != b.slot:
			return int(a.slot) - int(b.slot)
		}
		return int(a.seq) - int(b.seq)
	})
	maxStamp := slices.Max(n.lastStamp)
	for i, got := range n.executed {
		if n.last[i] < maxStamp {
			t.Errorf("member %d stepped up to frame %d, commands were stamped up to %d", i, n.last[i], maxStamp)
		}
		if len(got) != len(want) {
			t.Errorf("member %d stepped %d commands, %d were submitted", i, len(got), len(want))
		}
		for k := range min(len(got), len(want)) {
			if got[k] != want[k] {
				t.Errorf("member %d: command %d stepped is %v, want %v", i, k, got[k], want[k])
				break
			}
		}
	}
	for i, evs := range n.events {
		for _, e := range evs {
			t.Errorf("member %d: unexpected event %v", i, e)
		}
	}
}

// checkAllExecutedSoFar is checkAllExecuted for a run cut short: commands
// stamped beyond what a member stepped are left out for it.
func (n *testNet) checkAllExecutedSoFar() {
	n.t.Helper()
	cut := slices.Min(n.last)
	n.submitted = slices.DeleteFunc(n.submitted, func(c cmdRec) bool { return c.frame > cut })
	for i := range n.executed {
		n.executed[i] = slices.DeleteFunc(n.executed[i], func(c cmdRec) bool { return c.frame > cut })
		n.last[i] = cut
	}
	for i := range n.lastStamp {
		n.lastStamp[i] = min(n.lastStamp[i], cut)
	}
	n.checkAllExecuted()
}
