package netsim

import (
	"cmp"
	"slices"
	"time"
)

// timed is a min-heap of messages ordered by time, ties in the order they
// were pushed: the order in which a virtual network delivers, and in which
// a Conn writes what it held. Pushing and popping do not allocate once the
// heap has grown to its largest size. Its zero value is empty.
type timed[M any] struct {
	items []timedItem[M]
	seq   uint64 // pushes so far: orders ties
}

type timedItem[M any] struct {
	at  time.Duration
	seq uint64
	m   M
}

func (q *timed[M]) len() int { return len(q.items) }

// peek returns the time of the first message; ok is false when q is empty.
func (q *timed[M]) peek() (at time.Duration, ok bool) {
	if len(q.items) == 0 {
		return 0, false
	}
	return q.items[0].at, true
}

func (q *timed[M]) push(at time.Duration, m M) {
	q.items = append(q.items, timedItem[M]{})
	q.up(len(q.items)-1, timedItem[M]{at: at, seq: q.seq, m: m})
	q.seq++
}

// pop removes and returns the first message. It panics if q is empty.
func (q *timed[M]) pop() (time.Duration, M) {
	first := q.items[0]
	last := len(q.items) - 1
	x := q.items[last]
	q.items[last] = timedItem[M]{} // let go of what M refers to
	q.items = q.items[:last]
	if last > 0 {
		q.down(0, x)
	}
	return first.at, first.m
}

// takeBefore removes every message due before end and calls f with each,
// its time and its seq, in no particular order; the rest stay a heap. It
// passes over every message once and orders what is left anew: cheaper
// than popping when a large share of the heap is due.
func (q *timed[M]) takeBefore(end time.Duration, f func(at time.Duration, seq uint64, m M)) {
	kept := q.items[:0]
	for _, it := range q.items {
		if it.at < end {
			f(it.at, it.seq, it.m)
		} else {
			kept = append(kept, it)
		}
	}
	clear(q.items[len(kept):]) // let go of what M refers to
	q.items = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		q.down(i, kept[i])
	}
}

// lastBy returns the latest time at or before limit among the messages
// (limit itself is not returned unless a message is due then). It visits
// only the messages due by limit, and their children: a parent is never
// due after its children. It returns -1 when none is due by limit.
func (q *timed[M]) lastBy(limit time.Duration) time.Duration {
	last := time.Duration(-1)
	var stack [64]int
	todo := append(stack[:0], 0)
	for len(todo) > 0 {
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if i >= len(q.items) || q.items[i].at > limit {
			continue
		}
		last = max(last, q.items[i].at)
		todo = append(todo, 2*i+1, 2*i+2)
	}
	return last
}

func (a *timedItem[M]) before(b *timedItem[M]) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// up puts x at the hole i or above it, moving the parents it goes before
// down into the hole instead of swapping.
func (q *timed[M]) up(i int, x timedItem[M]) {
	s := q.items
	for i > 0 {
		p := (i - 1) / 2
		if !x.before(&s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = x
}

// down puts x at the hole i or below it, moving the children that go
// before it up into the hole.
func (q *timed[M]) down(i int, x timedItem[M]) {
	s := q.items
	n := len(s)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && s[r].before(&s[c]) {
			c = r
		}
		if !s[c].before(&x) {
			break
		}
		s[i] = s[c]
		i = c
	}
	s[i] = x
}

// take removes the messages match selects and returns them in the order
// they would have been popped.
func (q *timed[M]) take(match func(M) bool) []M {
	var out []timedItem[M]
	kept := q.items[:0]
	for _, it := range q.items {
		if match(it.m) {
			out = append(out, it)
		} else {
			kept = append(kept, it)
		}
	}
	clear(q.items[len(kept):])
	q.items = kept
	for i := len(q.items)/2 - 1; i >= 0; i-- {
		q.down(i, q.items[i])
	}
	ms := make([]M, 0, len(out))
	slices.SortFunc(out, func(a, b timedItem[M]) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	for _, it := range out {
		ms = append(ms, it.m)
	}
	return ms
}
