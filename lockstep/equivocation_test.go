package lockstep_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// equivocate runs five signing members. From frame 40 on, member 4 tells
// members 1 to 3 other commands than member 0 (each payload with a byte
// "B" added), and signs what it tells each: its datagrams to 1 to 3 are
// rewritten and their statements signed anew with its key over the
// rewritten stream. Its last datagrams reach member 0 only, then it
// fails, so member 0 relays its last commands to the others, with member
// 4's statement over the stream member 0 holds. With back > 0, member 0's
// relays start back commands lower than they would (as from a stale view
// of what the receiver holds), with its chain there. It returns the
// network and how many statements were signed anew.
func equivocate(t *testing.T, back uint32) (*testNet, int) {
	const (
		m       = 4
		onlyTo0 = 3 * time.Second
		dead    = 3*time.Second + 400*time.Millisecond
		from    = bucket.Frame(40)
	)
	n := newTestNet(t, 5, 11, signed(5))
	for range 5 {
		n.sims = append(n.sims, &chainSim{}) // state hashes, for the desync search
	}
	signers, _ := lockstep.Ed25519Keys(5, []byte("test"))
	n.block = func(now time.Duration, src, dst bucket.Slot) bool {
		if src == m || dst == m {
			return now >= dead || (src == m && dst != 0 && now >= onlyTo0)
		}
		return false
	}
	// issued holds member 4's commands by sequence number, as it issued
	// them; told is what members 1 to 3 hear of each.
	var issued []wire.Command
	told := func(c wire.Command) wire.Command {
		if c.Frame < from {
			return c
		}
		return wire.Command{Frame: c.Frame, Payload: append(slices.Clone(c.Payload), 'B')}
	}
	var pkt wire.Packet
	resigned := 0
	n.rewrite = func(now time.Duration, src, dst bucket.Slot, data []byte) []byte {
		if src == 0 && back > 0 && wire.Parse(data, &pkt) == nil && pkt.HasRelay && pkt.Relay.HasStatement && pkt.Relay.Member == m && len(pkt.Relay.Commands) > 0 {
			return startBack(t, &pkt, issued, back)
		}
		if src != m || wire.Parse(data, &pkt) != nil {
			return data
		}
		first := uint32(pkt.Next) - uint32(len(pkt.Commands)) // fewer than 2^16 commands here
		for i, c := range pkt.Commands {
			seq := int(first) + i
			for len(issued) <= seq {
				issued = append(issued, wire.Command{Frame: -1})
			}
			issued[seq] = wire.Command{Frame: c.Frame, Payload: slices.Clone(c.Payload)}
		}
		if dst == 0 {
			return data
		}
		for i, c := range pkt.Commands {
			pkt.Commands[i] = told(c)
		}
		if pkt.HasStatement {
			st := &pkt.Statement
			var chain lockstep.Chain
			known := int(st.Count) <= len(issued)
			for seq := 0; known && seq < int(st.Count); seq++ {
				c := told(issued[seq])
				known = c.Frame >= 0
				chain = lockstep.ChainNext(chain, bucket.Command{Slot: m, Seq: uint32(seq), Frame: c.Frame, Payload: c.Payload})
			}
			if known {
				sig, err := signers[m].Sign(lockstep.AppendStatementMessage(nil, testSession, m, st.Seal, st.Count, chain))
				if err != nil {
					t.Fatal(err)
				}
				st.Signature = sig
				resigned++
			} else {
				pkt.HasStatement = false
			}
		}
		out, err := pkt.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	n.planRandom([]bucket.Slot{0, 1, 2, 3, 4}, 0, dead, 40*time.Millisecond)
	n.runUntil(dead + 2*lockstep.DefaultDropTimeout + 2*time.Second)
	return n, resigned
}

// startBack rewrites relay p of member 4 to start back commands lower,
// with the chain of issued there, as an honest forwarder holding issued
// would send it.
func startBack(t *testing.T, p *wire.Packet, issued []wire.Command, back uint32) []byte {
	rl := &p.Relay
	if rl.First < back || rl.Statement.Count < rl.First {
		return nil
	}
	first := rl.First - back
	var chain lockstep.Chain
	for seq := range first {
		c := issued[seq]
		chain = lockstep.ChainNext(chain, bucket.Command{Slot: rl.Member, Seq: seq, Frame: c.Frame, Payload: c.Payload})
	}
	rl.Commands = append(slices.Clone(issued[first:rl.First]), rl.Commands...)
	rl.First, rl.Chain = first, chain
	out, err := p.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEquivocationIsNotAForgery: member 4 signs two different streams,
// one to member 0 and one to members 1 to 3, then fails; member 0 relays
// its stream honestly. The relay's chain and commands carry member 4's
// signature, so members 1 to 3 find that member 4 signed a stream other
// than the one it gave them: they name member 4 (equivocation) and never
// member 0, and every member drops member 4 and plays on. (Before the
// relays carried the forwarder's chain, members 1 to 3 took the failed
// statement for a forgery of member 0 and dropped it.) The members then
// hold different inputs of member 4, and the desync search reports it.
// The same when member 0's relays start below what members 1 to 3 hold:
// the commands there differ from theirs, and are skipped without blame.
func TestEquivocationIsNotAForgery(t *testing.T) {
	for _, back := range []uint32{0, 3} {
		t.Run(fmt.Sprintf("back %d", back), func(t *testing.T) { testEquivocation(t, back) })
	}
}

func testEquivocation(t *testing.T, back uint32) {
	n, resigned := equivocate(t, back)
	if resigned == 0 {
		t.Fatal("member 4 signed nothing anew")
	}
	for i := range 4 {
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventViolation && e.Member != 4 {
				t.Errorf("member %d blamed member %d: %v", i, e.Member, e)
			}
			if e.Type == lockstep.EventDrop && e.Member != 4 {
				t.Errorf("member %d dropped member %d: %v", i, e.Member, e)
			}
		}
		if err := n.cores[i].Err(); err != nil {
			t.Errorf("member %d stopped: %v", i, err)
		}
		if st := n.cores[i].Stats(); st.Frame-st.Executed > 2 {
			t.Errorf("member %d stuck: clock frame %d, executed %d", i, st.Frame, st.Executed)
		}
	}
	last, drops := map[bucket.Frame]bool{}, 0
	for i := range 4 {
		var named, desync bool
		for _, e := range n.events[i] {
			named = named || e.Type == lockstep.EventViolation && e.Member == 4 && strings.HasPrefix(e.Detail, "equivocation") && strings.Contains(e.Detail, "member 0")
			desync = desync || e.Type == lockstep.EventDesync && strings.HasPrefix(e.Detail, "inputs diverged")
			if e.Type == lockstep.EventDrop && e.Member == 4 {
				last[e.LastFrame] = true
				drops++
			}
		}
		if named != (i > 0) || !desync {
			t.Errorf("member %d: named member 4 an equivocator %v, reported the inputs' desync %v: %v", i, named, desync, n.events[i])
		}
	}
	if len(last) != 1 || drops != 4 {
		t.Errorf("members 0 to 3 dropped member 4 %d times, last frames %v: want once each, one last frame", drops, last)
	}
}

// TestRelayedSealLieBlamesNoForwarder: member 4's commands reach member 0
// only; member 1 relays a seal-only relay of member 4 twenty frames past
// what it holds (a relayed seal is taken unproven). Member 0's honest
// relay of member 4's commands then meets a seal above them at members 2
// and 3: that proves nothing of member 0, and nobody but member 4 is
// dropped or named (before, members 2 and 3 named member 0 for a relay
// violation, "command frame at or below the stream's seal").
func TestRelayedSealLieBlamesNoForwarder(t *testing.T) {
	const (
		m       = 4
		onlyTo0 = 3 * time.Second
		dead    = 3*time.Second + 400*time.Millisecond
	)
	n := newTestNet(t, 5, 11, signed(5))
	n.block = func(now time.Duration, src, dst bucket.Slot) bool {
		if src == m || dst == m {
			return now >= dead || (src == m && dst != 0 && now >= onlyTo0)
		}
		return false
	}
	var pkt wire.Packet
	lied := 0
	n.rewrite = func(now time.Duration, src, dst bucket.Slot, data []byte) []byte {
		if src != 1 || dst == 0 || wire.Parse(data, &pkt) != nil || !pkt.HasMembership || pkt.Membership.Suspected&(1<<m) == 0 || pkt.HasRelay {
			return data
		}
		i := 0
		for s := range m {
			if pkt.Membership.Suspected&(1<<s) != 0 {
				i++
			}
		}
		v := &pkt.Membership.Views[i]
		v.Seal += 20
		pkt.HasRelay, pkt.Relay = true, wire.Relay{Member: m, First: v.Next, Seal: v.Seal}
		lied++
		out, err := pkt.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	n.planRandom([]bucket.Slot{0, 1, 2, 3, 4}, 0, dead, 40*time.Millisecond)
	n.runUntil(dead + 2*lockstep.DefaultDropTimeout + 2*time.Second)
	if lied == 0 {
		t.Fatal("member 1 lied to nobody")
	}
	for i := range 4 {
		for _, e := range n.events[i] {
			if (e.Type == lockstep.EventViolation || e.Type == lockstep.EventDrop) && e.Member != m {
				t.Errorf("member %d: %v", i, e)
			}
		}
	}
}
