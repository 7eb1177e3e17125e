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
	q.items = append(q.items, timedItem[M]{at: at, seq: q.seq, m: m})
	q.seq++
	q.up(len(q.items) - 1)
}

// pop removes and returns the first message. It panics if q is empty.
func (q *timed[M]) pop() (time.Duration, M) {
	first := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items[last] = timedItem[M]{} // let go of what M refers to
	q.items = q.items[:last]
	if last > 0 {
		q.down(0)
	}
	return first.at, first.m
}

func (q *timed[M]) less(i, j int) bool {
	a, b := &q.items[i], &q.items[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (q *timed[M]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.items[i], q.items[p] = q.items[p], q.items[i]
		i = p
	}
}

func (q *timed[M]) down(i int) {
	n := len(q.items)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && q.less(r, c) {
			c = r
		}
		if !q.less(c, i) {
			return
		}
		q.items[i], q.items[c] = q.items[c], q.items[i]
		i = c
	}
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
		q.down(i)
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
