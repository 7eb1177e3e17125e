package netsim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-net/phalanx/rng"
)

func linksOf(root *rng.PCG) func(from, to int) *rng.PCG {
	return func(from, to int) *rng.PCG { return root.Derive(fmt.Sprintf("link %d->%d", from, to)) }
}

// The queue hands messages out by time, ties in push order, against a
// plain sort of the same pushes; take leaves the rest in that order.
func TestTimedOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var q timed[int]
	type item struct {
		at time.Duration
		i  int
	}
	var want []item
	for i := range 2000 {
		at := time.Duration(r.IntN(50))
		q.push(at, i)
		want = append(want, item{at, i})
		if r.IntN(3) == 0 { // interleave pops with pushes
			slices.SortStableFunc(want, func(a, b item) int { return int(a.at - b.at) })
			at, m := q.pop()
			require.Equal(t, want[0], item{at, m})
			want = want[1:]
		}
	}
	slices.SortStableFunc(want, func(a, b item) int { return int(a.at - b.at) })
	odd := q.take(func(m int) bool { return m%2 == 1 })
	var wantOdd, wantEven []int
	for _, w := range want {
		if w.i%2 == 1 {
			wantOdd = append(wantOdd, w.i)
		} else {
			wantEven = append(wantEven, w.i)
		}
	}
	require.Equal(t, wantOdd, odd)
	var even []int
	for q.len() > 0 {
		_, m := q.pop()
		even = append(even, m)
	}
	require.Equal(t, wantEven, even)
}

// A Network gives what an Uplink and Links called by hand give, in
// arrival order; a Cut loses a datagram without drawing from its link; a
// duplicate's second copy is Copy's.
func TestNetworkMatchesItsModels(t *testing.T) {
	p := constant(Conditions{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: Always / 10,
		Duplicate: Always / 20, Bandwidth: 20000, Queue: 50 * time.Millisecond})
	root := rng.New(7, 0)
	type msg struct{ from, to, n, copy int }
	n := NewNetwork[msg](3, p, linksOf(root))
	n.Copy = func(m msg) msg { m.copy++; return m }
	cut := false
	n.Cut = func(from, to int) bool { return cut && from == 0 && to == 2 }

	uplinks := []*Uplink{NewUplink(p), NewUplink(p), NewUplink(p)}
	links := map[[2]int]*Link{}
	for i := range 3 {
		for j := range 3 {
			if i != j {
				links[[2]int{i, j}] = NewLink(p, root.Derive(fmt.Sprintf("link %d->%d", i, j)))
			}
		}
	}
	type arrival struct {
		at time.Duration
		m  msg
	}
	var want []arrival
	for k := range 3000 {
		now := time.Duration(k) * time.Millisecond
		from, to := k%3, (k/3+1+k%3)%3
		if from == to {
			to = (to + 1) % 3
		}
		cut = k%100 < 10
		m := msg{from, to, k, 0}
		got := n.Send(now, from, to, 100+k%400, m)
		depart, ok := uplinks[from].Admit(now, 100+k%400)
		if !ok || (cut && from == 0 && to == 2) {
			require.True(t, got.Lost(), "datagram %d", k)
			continue
		}
		d := links[[2]int{from, to}].Send(depart, 100+k%400)
		require.Equal(t, d, got, "datagram %d", k)
		for c := range d.Copies {
			m.copy = c
			want = append(want, arrival{d.Arrival[c], m})
		}
	}
	slices.SortStableFunc(want, func(a, b arrival) int { return int(a.at - b.at) })
	require.Equal(t, len(want), n.Len())
	for _, w := range want {
		at, m, ok := n.Pop()
		require.True(t, ok)
		require.Equal(t, w, arrival{at, m})
	}
	_, _, ok := n.Pop()
	require.False(t, ok)
}

// Scheduled messages and datagrams share one order: ties go in the order
// they were queued.
func TestNetworkSchedule(t *testing.T) {
	n := NewNetwork[string](2, constant(Conditions{Latency: 10 * time.Millisecond}), linksOf(rng.New(1, 0)))
	n.Schedule(10*time.Millisecond, "timer before")
	n.Send(0, 0, 1, 50, "datagram")
	n.Schedule(10*time.Millisecond, "timer after")
	n.Schedule(5*time.Millisecond, "early")
	at, ok := n.Next()
	require.True(t, ok)
	require.Equal(t, 5*time.Millisecond, at)
	var got []string
	for n.Len() > 0 {
		_, m, _ := n.Pop()
		got = append(got, m)
	}
	require.Equal(t, []string{"early", "timer before", "datagram", "timer after"}, got)
	require.Panics(t, func() { n.Send(0, 1, 1, 50, "to itself") })
}

// Transit is Send without the queueing: two networks built alike, one
// sending and one passing the same datagrams through Transit, give the same
// deliveries; PopSeq hands out the order of queueing with each message.
func TestNetworkTransitAndPopSeq(t *testing.T) {
	p := constant(Conditions{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: Always / 10,
		Duplicate: Always / 20, Bandwidth: 20000, Queue: 50 * time.Millisecond})
	sent := NewNetwork[int](3, p, linksOf(rng.New(9, 0)))
	passed := NewNetwork[int](3, p, linksOf(rng.New(9, 0)))
	for k := range 2000 {
		now := time.Duration(k) * time.Millisecond
		from, to := k%3, (k%3+1+k/3%2)%3
		require.Equal(t, sent.Send(now, from, to, 100+k%400, k), passed.Transit(now, from, to, 100+k%400), "datagram %d", k)
	}
	require.Zero(t, passed.Len())
	n := NewNetwork[string](2, p, linksOf(rng.New(1, 0)))
	n.Schedule(time.Second, "b")
	n.Schedule(time.Millisecond, "a")
	n.Schedule(time.Second, "c")
	for _, want := range []struct {
		at  time.Duration
		seq uint64
		m   string
	}{{time.Millisecond, 1, "a"}, {time.Second, 0, "b"}, {time.Second, 2, "c"}} {
		at, seq, m, ok := n.PopSeq()
		require.True(t, ok)
		require.Equal(t, want.at, at)
		require.Equal(t, want.seq, seq)
		require.Equal(t, want.m, m)
	}
	_, _, _, ok := n.PopSeq()
	require.False(t, ok)
}

// TakeBefore takes, in some order, exactly what PopSeq would have popped
// before its end, with the same times and places, and leaves the rest
// popping in the same order as a copy that was never taken from.
func TestNetworkTakeBeforeIsPopSeqSorted(t *testing.T) {
	p := constant(Conditions{Latency: 20 * time.Millisecond, Jitter: 15 * time.Millisecond, Duplicate: Always / 20})
	took := NewNetwork[int](4, p, linksOf(rng.New(3, 0)))
	popped := NewNetwork[int](4, p, linksOf(rng.New(3, 0)))
	type item struct {
		at  time.Duration
		seq uint64
		m   int
	}
	k := 0
	for round := range 200 {
		now := time.Duration(round) * 5 * time.Millisecond
		for range 1 + round%7 {
			from, to := k%4, (k%4+1+k/4%3)%4
			took.Send(now, from, to, 100, k)
			popped.Send(now, from, to, 100, k)
			if k%5 == 0 { // ties of time
				took.Schedule(now+30*time.Millisecond, -k)
				popped.Schedule(now+30*time.Millisecond, -k)
			}
			k++
		}
		end := now + time.Duration(round%4)*7*time.Millisecond
		var got, want []item
		took.TakeBefore(end, func(at time.Duration, seq uint64, m int) { got = append(got, item{at, seq, m}) })
		for at, ok := popped.Next(); ok && at < end; at, ok = popped.Next() {
			at, seq, m, _ := popped.PopSeq()
			want = append(want, item{at, seq, m})
		}
		slices.SortFunc(got, func(a, b item) int {
			if c := cmp.Compare(a.at, b.at); c != 0 {
				return c
			}
			return cmp.Compare(a.seq, b.seq)
		})
		require.Equal(t, want, got, "round %d", round)
		require.Equal(t, popped.Len(), took.Len())
	}
	require.NotZero(t, took.Len())
	for took.Len() > 0 {
		a1, s1, m1, _ := took.PopSeq()
		a2, s2, m2, _ := popped.PopSeq()
		require.Equal(t, []any{a2, s2, m2}, []any{a1, s1, m1})
	}
}
