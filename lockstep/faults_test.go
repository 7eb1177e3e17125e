package lockstep_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// TestDropWhoseLastDatagramReachedOneSurvivor: member 2's last datagrams
// reach member 0 only, so member 0 holds its commands and seal further than
// member 1 does. The drop must settle on a frame both survivors can
// complete, and both must play on past it.
func TestDropWhoseLastDatagramReachedOneSurvivor(t *testing.T) {
	const (
		onlyTo0 = 3 * time.Second
		dead    = 3*time.Second + 400*time.Millisecond
	)
	n := newTestNet(t, 3, 5, nil)
	n.block = func(now time.Duration, from, to bucket.Slot) bool {
		if from == 2 || to == 2 {
			return now >= dead || (from == 2 && to == 1 && now >= onlyTo0)
		}
		return false
	}
	n.planRandom([]bucket.Slot{0, 1, 2}, 0, dead, 60*time.Millisecond)
	limit := dead + lockstep.DefaultDropTimeout + 2*time.Second
	n.runUntil(limit)
	for i := range 2 {
		if st := n.cores[i].Stats(); st.Frame-st.Executed > 2 {
			t.Errorf("member %d stuck: clock frame %d, executed %d, events %v", i, st.Frame, st.Executed, n.events[i])
		}
	}
	if !errors.Is(n.cores[2].Err(), lockstep.ErrStopped) {
		t.Errorf("member 2, cut off from the others, did not stop: %v", n.cores[2].Err())
	}
	var drops [2]lockstep.Event
	for i := range 2 {
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventDrop && e.Member == 2 {
				drops[i] = e
			}
		}
		if drops[i].Type != lockstep.EventDrop {
			t.Fatalf("member %d did not drop member 2: %v", i, n.events[i])
		}
	}
	if drops[0].LastFrame != drops[1].LastFrame {
		t.Fatalf("drops differ: %v, %v", drops[0], drops[1])
	}
	for i := range 2 {
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventViolation {
				t.Errorf("member %d blamed an honest member: %v", i, e)
			}
		}
	}
}

// TestDropWhoseOnlyHolderFails: member 4's last datagrams reach member 0
// only, and member 0 fails right after it reported what it held. No live
// member can complete the frames member 0 reported, so the drop must
// settle on what the live members hold, and they play on.
func TestDropWhoseOnlyHolderFails(t *testing.T) {
	const (
		onlyTo0 = 3 * time.Second
		dead4   = 3*time.Second + 400*time.Millisecond
	)
	dead0 := dead4 + lockstep.DefaultDropTimeout + time.Second
	n := newTestNet(t, 5, 7, nil)
	n.block = func(now time.Duration, from, to bucket.Slot) bool {
		switch {
		case from == 4 || to == 4:
			return now >= dead4 || (from == 4 && to != 0 && now >= onlyTo0)
		case from == 0 || to == 0:
			return now >= dead0
		}
		return false
	}
	// Member 0's relays of member 4 never arrive: it reports, then fails.
	var pkt wire.Packet
	n.rewrite = func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
		if from != 0 || wire.Parse(data, &pkt) != nil || !pkt.HasRelay {
			return data
		}
		pkt.HasRelay = false
		out, err := pkt.Append(nil)
		if err != nil {
			panic(err)
		}
		return out
	}
	n.planRandom([]bucket.Slot{0, 1, 2, 3, 4}, 0, dead4, 60*time.Millisecond)
	limit := dead0 + lockstep.DefaultDropTimeout + 2*time.Second
	n.runUntil(limit)
	if !errors.Is(n.cores[4].Err(), lockstep.ErrStopped) {
		t.Errorf("member 4, cut off from the others, did not stop: %v", n.cores[4].Err())
	}
	for i := 1; i < 4; i++ {
		if st := n.cores[i].Stats(); st.Frame-st.Executed > 2 {
			t.Errorf("member %d stuck: clock frame %d, executed %d, events %v", i, st.Frame, st.Executed, n.events[i])
		}
	}
}

// Submit refuses a command past the limits per frame with ErrFrameFull.
func TestSubmitRefusesAFullFrame(t *testing.T) {
	for _, tt := range []struct {
		name        string
		cmds, bytes int
		payload     int
		accepted    int
	}{
		{"commands", 3, 0, 10, 3},
		{"bytes", 0, 2048, 1000, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memberConfig(2, 0)
			cfg.MaxFrameCommands, cfg.MaxFrameBytes = tt.cmds, tt.bytes
			c := newCore(t, cfg, 0)
			var frames []bucket.Frame
			for range tt.accepted {
				f, err := c.Submit(time.Millisecond, make([]byte, tt.payload))
				if err != nil {
					t.Fatal(err)
				}
				frames = append(frames, f)
			}
			if _, err := c.Submit(time.Millisecond, make([]byte, tt.payload)); !errors.Is(err, lockstep.ErrFrameFull) {
				t.Fatalf("Submit past the limit on frame %d: %v, want ErrFrameFull", frames[0], err)
			}
			// A later frame has room again.
			if f, err := c.Submit(time.Second, make([]byte, tt.payload)); err != nil || f == frames[0] {
				t.Fatalf("Submit on a later frame: frame %d, %v", f, err)
			}
		})
	}
}

// Received commands past the limits are a violation of their sender.
func TestReceivedCommandsPastTheLimits(t *testing.T) {
	many := make([]wire.Command, 65)
	for i := range many {
		many[i] = wire.Command{Frame: 20, Payload: []byte{byte(i)}}
	}
	big := []wire.Command{{Frame: 20, Payload: make([]byte, 101)}}
	for _, tt := range []struct {
		name      string
		cmds      []wire.Command
		violation bool
	}{
		{"64 commands on one frame", many[:64], false},
		{"65 commands on one frame", many, true},
		{"a payload at the size limit", []wire.Command{{Frame: 20, Payload: make([]byte, 100)}}, false},
		{"a payload past the size limit", big, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memberConfig(3, 0)
			cfg.MaxCommandSize = 100
			c := newCore(t, cfg, 0)
			c.Receive(time.Millisecond, 1, craft(t, 0, 19, uint16(len(tt.cmds)), tt.cmds...))
			rd := c.Ready(2 * time.Millisecond)
			var got bool
			for _, e := range rd.Events {
				got = got || e.Type == lockstep.EventViolation && e.Member == 1 && strings.HasPrefix(e.Detail, "limit")
			}
			if got != tt.violation || c.Stats().Violations > 0 != tt.violation {
				t.Fatalf("events %v, violations %d; want a limit violation: %v", rd.Events, c.Stats().Violations, tt.violation)
			}
		})
	}
}

// A member that holds a higher seal of a suspect but fewer of its commands
// than another relays its seal from its own prefix, so the relay stays
// within its own view and the receiver has nothing to blame it for.
func TestSealOnlyRelayStaysWithinTheRelayersPrefix(t *testing.T) {
	c := newCore(t, memberConfig(3, 0), 0)
	send := func(p wire.Packet) {
		t.Helper()
		p.Session, p.AckSeal = testSession, -1
		b, err := p.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Receive(10*time.Millisecond, p.From, b)
	}
	// Member 2: commands 0 and 1, sealed at 10.
	send(wire.Packet{From: 2, Seal: 10, Next: 2, Commands: []wire.Command{{Frame: 5, Payload: []byte("a")}, {Frame: 6, Payload: []byte("b")}}})
	// Member 1 suspects member 2 and holds four of its commands, but its
	// seal only at 5.
	send(wire.Packet{From: 1, Seal: 3, HasMembership: true, Membership: wire.Membership{
		Suspected: 1 << 2, Views: []wire.MemberView{{Held: 5, Seal: 5, Next: 4, Last: wire.Unknown, Reason: 1}}}})
	rd := c.Ready(20 * time.Millisecond)
	var relayed bool
	var p wire.Packet
	for _, d := range rd.Datagrams {
		if d.To != 1 {
			continue
		}
		if err := wire.Parse(d.Data, &p); err != nil {
			t.Fatal(err)
		}
		if !p.HasRelay {
			continue
		}
		relayed = true
		view := p.Membership.Views[0]
		if p.Relay.Member != 2 || p.Relay.Seal != 10 || p.Relay.First+uint32(len(p.Relay.Commands)) > view.Next || p.Relay.Seal > view.Seal {
			t.Fatalf("relay %+v with view %+v: beyond what the relayer holds", p.Relay, view)
		}
	}
	if !relayed {
		t.Fatal("no relay of member 2's seal to member 1")
	}
}

// TestSealLaggingTheClockIsAStall: member 2's seal keeps moving, but a
// frame every 4 s (under the drop timeout), so it holds everyone's
// execution back as a stuck seal does. Members 0 and 1 drop it as stalled
// once it lags their frame clocks by a drop timeout, or by three while its
// commands keep coming, and play on (before, they waited a window, 60 s,
// then found each other's seals outside it and stopped each other).
func TestSealLaggingTheClockIsAStall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		commands bool
		lag      bucket.Frame // the lag at the drop, in frames: more than
	}{
		{"silent", false, 100},
		{"commands", true, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const creep = 4 * time.Second
			n := newTestNet(t, 3, 5, nil)
			n.rewrite = func(now time.Duration, from, _ bucket.Slot, data []byte) []byte {
				if from != 2 || now < creep {
					return data
				}
				var p wire.Packet
				if err := wire.Parse(data, &p); err != nil {
					t.Fatal(err)
				}
				p.Seal = min(p.Seal, 100+bucket.Frame((now-creep)/creep))
				out, err := p.Append(nil)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			if tc.commands {
				// Until shortly before it lags by 300 frames (about 20 s).
				n.planRandom([]bucket.Slot{2}, 0, 19*time.Second, 200*time.Millisecond)
			}
			n.runUntil(120 * time.Second)
			for i := range 2 {
				drop := stalledDrop(t, n, i, 2)
				var seal, clock, lag bucket.Frame
				if _, err := fmt.Sscanf(drop.Detail, "seal %d lags the frame clock (%d) by %d frames", &seal, &clock, &lag); err != nil || lag <= tc.lag || lag > tc.lag+10 {
					t.Errorf("member %d: %v; want a lag of %d frames and a little more", i, drop, tc.lag)
				}
				if st := n.cores[i].Stats(); st.Frame-st.Executed > 2 || st.Executed < 2000 {
					t.Errorf("member %d: clock frame %d, executed %d after 120 s", i, st.Frame, st.Executed)
				}
			}
		})
	}
}

// TestWithheldAcksAreAStall: member 2 tells member 0 it holds none of its
// commands (Ack 0 in every datagram), so member 0 repeats its commands to
// it, a burst of datagrams every repeat interval, and would keep them all
// for good. Member 0 drops it as stalled once an acknowledgement is owed
// for two drop timeouts; member 1 follows; both play on, and the repeats
// end. (With more commands than a burst carries, member 0's seal to
// member 2 would stay below the oldest one repeated, and member 2's core
// would find member 0 stalled first; a member may name anyone in its
// views anyway.)
func TestWithheldAcksAreAStall(t *testing.T) {
	const lie = 3 * time.Second
	n := newTestNet(t, 3, 7, nil)
	var to1, to2, late1, late2 int // bytes from member 0, and in the last 30 s
	n.rewrite = func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
		switch {
		case from == 0 && to == 1:
			to1 += len(data)
			if now >= 30*time.Second {
				late1 += len(data)
			}
		case from == 0 && to == 2:
			to2 += len(data)
			if now >= 30*time.Second {
				late2 += len(data)
			}
		}
		if from != 2 || to != 0 || now < lie {
			return data
		}
		var p wire.Packet
		if err := wire.Parse(data, &p); err != nil {
			t.Fatal(err)
		}
		p.Ack = 0
		out, err := p.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	payload := make([]byte, 20)
	for at := time.Second; at < 60*time.Second; at += 100 * time.Millisecond {
		n.plan = append(n.plan, plannedSubmit{at: at, slot: 0, payload: payload})
	}
	n.runUntil(60 * time.Second)
	for i := range 2 {
		drop := stalledDrop(t, n, i, 2)
		if st := n.cores[i].Stats(); st.Frame-st.Executed > 2 {
			t.Errorf("member %d: clock frame %d, executed %d", i, st.Frame, st.Executed)
		}
		t.Logf("member %d: %v", i, drop)
	}
	t.Logf("member 0 sent member 1 %d bytes (%d in the last 30 s), member 2 %d (%d)", to1, late1, to2, late2)
	// The repeats to member 2 last two drop timeouts, then end.
	if late2 > late1/10 {
		t.Errorf("in the last 30 s member 0 sent member 2 %d bytes, member 1 %d", late2, late1)
	}
}

// stalledDrop returns member i's drop event of member m, failing t unless
// member i plays on and dropped m as stalled.
func stalledDrop(t *testing.T, n *testNet, i int, m bucket.Slot) *lockstep.Event {
	t.Helper()
	if err := n.cores[i].Err(); err != nil {
		t.Fatalf("member %d stopped: %v; events %v", i, err, n.events[i])
	}
	var drop *lockstep.Event
	for k, e := range n.events[i] {
		if e.Type == lockstep.EventDrop && e.Member == m {
			drop = &n.events[i][k]
		}
	}
	switch {
	case drop == nil:
		t.Fatalf("member %d never dropped member %d; events %v", i, m, n.events[i])
	case drop.Reason != lockstep.ReasonStalled:
		t.Errorf("member %d dropped member %d as %s, not stalled: %v", i, m, drop.Reason, drop)
	}
	return drop
}
