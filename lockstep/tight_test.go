package lockstep_test

import (
	"slices"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// tightBudget is a byte budget under which five members are tight: it
// cannot carry a small datagram a frame to every other member, so
// datagrams carry held seals.
const tightBudget = 3600

// heldSealCounter counts, per member, the datagrams it sent with held
// seals, split at the first drop that member agreed on.
type heldSealCounter struct {
	dropped       []bool
	before, after []int
	pkt           wire.Packet
}

func countHeldSeals(n *testNet) *heldSealCounter {
	h := &heldSealCounter{dropped: make([]bool, len(n.cores)), before: make([]int, len(n.cores)), after: make([]int, len(n.cores))}
	n.afterReady = func(i int, rd lockstep.Ready) {
		for _, d := range rd.Datagrams {
			if wire.Parse(d.Data, &h.pkt) != nil || len(h.pkt.Seals) == 0 {
				continue
			}
			if h.dropped[i] {
				h.after[i]++
			} else {
				h.before[i]++
			}
		}
		for _, e := range rd.Events {
			if e.Type == lockstep.EventDrop {
				h.dropped[i] = true
			}
		}
	}
	return h
}

// TestHeldSealsResumeAfterADrop: under a tight budget, member 4 falls
// silent. Once the survivors agreed on its drop, their datagrams carry held
// seals again (they stop only while an agreement is pending), and they play
// on with the same buckets.
func TestHeldSealsResumeAfterADrop(t *testing.T) {
	t.Parallel()
	const dead = 2 * time.Second
	n := newTestNet(t, 5, 29, func(c *lockstep.Config) { c.Budget, c.DropTimeout = tightBudget, time.Second })
	n.checkDeadline = false // see TestDeadlineOutOfBudget
	n.block = func(now time.Duration, from, to bucket.Slot) bool { return (from == 4 || to == 4) && now >= dead }
	h := countHeldSeals(n)
	n.planRandom([]bucket.Slot{0, 1, 2, 3}, 0, 9*time.Second, 200*time.Millisecond)
	n.runUntil(10 * time.Second)
	sameBucketsSoFar(t, n, 4, 150)
	var last bucket.Frame = -2
	for i := range 4 {
		drop := -1
		for k, e := range n.events[i] {
			if e.Type == lockstep.EventDrop && e.Member == 4 {
				drop = k
			}
		}
		if drop < 0 {
			t.Fatalf("member %d did not drop member 4: %v", i, n.events[i])
		}
		if f := n.events[i][drop].LastFrame; last != -2 && f != last {
			t.Errorf("member %d dropped member 4 after frame %d, another after %d", i, f, last)
		}
		last = n.events[i][drop].LastFrame
		if h.before[i] == 0 || h.after[i] < 20 {
			t.Errorf("member %d sent held seals in %d datagrams before the drop and %d after: want them on both sides", i, h.before[i], h.after[i])
		}
	}
}

// TestHeldSealsWithAnOpenSlot: under a tight budget, a slot open since the
// start and never taken does not keep held seals off.
func TestHeldSealsWithAnOpenSlot(t *testing.T) {
	t.Parallel()
	n := newTestNet(t, 5, 31, func(c *lockstep.Config) { c.Budget, c.Open = tightBudget, 1<<4 })
	n.checkDeadline = false // see TestDeadlineOutOfBudget
	n.exited[4] = true      // nobody takes slot 4
	h := countHeldSeals(n)
	n.planRandom([]bucket.Slot{0, 1, 2, 3}, 0, 5*time.Second, 200*time.Millisecond)
	n.runUntil(6 * time.Second)
	for i := range 4 {
		if h.before[i] < 20 {
			t.Errorf("member %d sent held seals in %d datagrams in 6 s beside an open slot", i, h.before[i])
		}
	}
	sameBucketsSoFar(t, n, 4, 80)
	for i, evs := range n.events[:4] {
		for _, e := range evs {
			t.Errorf("member %d: unexpected event %v", i, e)
		}
	}
}

// sameBucketsSoFar checks that members 0 to k-1 stepped at least frames
// 0 to least and the same commands up to the last frame all of them
// stepped.
func sameBucketsSoFar(t *testing.T, n *testNet, k int, least bucket.Frame) {
	t.Helper()
	cut := slices.Min(n.last[:k])
	if cut < least {
		t.Fatalf("the members stepped up to frames %v, want at least %d", n.last[:k], least)
	}
	upTo := func(i int) []cmdRec {
		return slices.DeleteFunc(slices.Clone(n.executed[i]), func(c cmdRec) bool { return c.frame > cut })
	}
	want := upTo(0)
	if len(want) == 0 {
		t.Fatalf("member 0 stepped no command up to frame %d", cut)
	}
	for i := 1; i < k; i++ {
		if got := upTo(i); !slices.Equal(got, want) {
			t.Errorf("member %d stepped %d commands up to frame %d, member 0 %d, or others", i, len(got), cut, len(want))
		}
	}
}

// TestHeldSealsImpliedByTheirMembers: under a tight budget, every held
// seal a datagram carries is a promise its member's own implies: each
// command of that member at a frame up to the seal is numbered below the
// seal's Next (cappedSeal cuts held seals before new commands).
func TestHeldSealsImpliedByTheirMembers(t *testing.T) {
	t.Parallel()
	n := newTestNet(t, 5, 37, func(c *lockstep.Config) { c.Budget = tightBudget })
	n.checkDeadline = false // see TestDeadlineOutOfBudget
	var held []wire.HeldSeal
	var pkt wire.Packet
	n.afterReady = func(i int, rd lockstep.Ready) {
		for _, d := range rd.Datagrams {
			if wire.Parse(d.Data, &pkt) == nil {
				held = append(held, pkt.Seals...)
			}
		}
	}
	n.planRandom([]bucket.Slot{0, 1, 2, 3, 4}, 0, 5*time.Second, 150*time.Millisecond)
	n.runUntil(6 * time.Second)
	sameBucketsSoFar(t, n, 5, 80)
	frames := make(map[bucket.Slot][]bucket.Frame) // each member's commands' frames by number
	for _, c := range n.executed[0] {
		if int(c.seq) != len(frames[c.slot]) {
			t.Fatalf("member 0 stepped command %d of member %d after %d others", c.seq, c.slot, len(frames[c.slot]))
		}
		frames[c.slot] = append(frames[c.slot], c.frame)
	}
	if len(held) < 100 {
		t.Fatalf("%d held seals in 6 s, want many", len(held))
	}
	for _, h := range held {
		fs := frames[h.Member]
		for seq := int(h.Next); seq < len(fs); seq++ {
			if fs[seq] <= h.Seal {
				t.Fatalf("held seal %+v: member %d's command %d is at frame %d, under the seal", h, h.Member, seq, fs[seq])
			}
		}
	}
}

// TestTightBudgetPaces: under a tight budget the byte budget's bucket holds
// no more than it takes to send one small datagram, so that after a quiet
// spell datagrams do not leave back to back: the sender's uplink runs at
// about the budget's rate, and a burst queued there would never drain.
// Over any stretch between two Readys a member sends at most the budget
// times the stretch, plus the largest datagram it sent (with the overhead).
func TestTightBudgetPaces(t *testing.T) {
	t.Parallel()
	n := newTestNet(t, 5, 41, func(c *lockstep.Config) { c.Budget = tightBudget })
	n.checkDeadline = false // see TestDeadlineOutOfBudget
	overhead := int64(n.cfgs[0].Overhead)
	floor := make([]int64, len(n.cores)) // per member: min over earlier Readys of sent - budget x time
	largest := make([]int64, len(n.cores))
	worst := make([]int64, len(n.cores)) // per member: the largest excess over largest[i]
	n.afterReady = func(i int, rd lockstep.Ready) {
		for _, d := range rd.Datagrams {
			largest[i] = max(largest[i], int64(len(d.Data))+overhead)
		}
		sent := n.cores[i].Stats().BytesSent - tightBudget*int64(n.now)/int64(time.Second)
		worst[i] = max(worst[i], sent-floor[i]-largest[i])
		floor[i] = min(floor[i], sent)
	}
	// Commands now and then: between them only seals and keep-alives go
	// out, and the budget is left over.
	n.planRandom([]bucket.Slot{0, 1, 2, 3, 4}, 0, 14*time.Second, time.Second)
	n.runUntil(15 * time.Second)
	n.checkAllExecutedSoFar()
	for i, w := range worst {
		if w > 0 {
			t.Errorf("member %d sent %d bytes more than Budget %d B/s allows over a stretch, beyond its largest datagram (%d bytes with overhead)", i, w, tightBudget, largest[i])
		}
	}
}
