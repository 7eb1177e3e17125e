package locksteptest

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// The second half of a window (window.go): carrying out, on one goroutine,
// what the members' handlings logged, in the order of the run in turn.

// merge carries out what the window's handlings did to the rest of the run,
// in the order the run in turn would have handled them, and reports whether
// the run ended within the window.
func (h *harness) merge(scheduleCommands func(time.Duration)) bool {
	w := h.win
	w.heads = w.heads[:0]
	for _, m := range w.todo {
		if wk := m.winWorker; m.winFirst < m.winLast {
			r := &wk.recs[m.winFirst]
			w.heads = append(w.heads, head{at: r.at, seq: r.seq, wk: wk, i: m.winFirst, m: m})
		}
	}
	for _, wk := range w.workers {
		h.res.Lost += wk.lost
		wk.lost = 0
	}
	w.heads.init()
	done := false
	for len(w.heads) > 0 {
		hd := &w.heads[0]
		r := &hd.wk.recs[hd.i]
		if !done {
			scheduleCommands(h.now)
			h.now = r.at
			done = h.apply(r, hd.m, hd.wk)
			h.res.endedInWindow = done
		}
		hd.i++
		if hd.i == hd.m.winLast {
			w.heads.pop()
		} else {
			nr := &hd.wk.recs[hd.i]
			if nr.local >= 0 {
				nr.seq = hd.m.win[nr.local].seq
			}
			hd.at, hd.seq = nr.at, nr.seq
			w.heads.down(0)
		}
	}
	for _, m := range w.todo {
		m.win = m.win[:0]
	}
	w.todo = w.todo[:0]
	return done
}

// apply carries out record r's effects, of member m's handling on worker
// wk, and reports whether the run ended with it.
func (h *harness) apply(r *record, m *member, wk *worker) bool {
	w := h.win
	for _, ef := range wk.effects[r.from:r.to] {
		switch ef.kind {
		case efPush:
			h.net.Schedule(ef.at, queued{e: ef.e, to: bucket.Slot(ef.n)})
		case efLocal:
			// Queued after everything queued before the window, in
			// the order the run in turn would have queued it.
			m.win[ef.n].seq = 1<<63 | w.counter
			w.counter++
		case efOneWay:
			h.res.addOneWay(ef.at, h.cfg.KeepSamples)
		case efSubmitted:
			p := &pending{submitted: h.now, executed: make([]time.Duration, h.cfg.Members)}
			for i := range p.executed {
				p.executed[i] = -1
			}
			h.cmds[wk.keys[ef.n]] = p
		case efStepped:
			s := &wk.steps[ef.n]
			h.history.step(m.slot, s.frame, s.fh)
		case efExecuted:
			for _, k := range wk.keys[ef.n:ef.n2] {
				if p := h.cmds[k]; p != nil {
					p.executed[m.slot] = h.now
					if h.completed(p) {
						delete(h.cmds, k)
					}
				}
			}
		}
	}
	if !r.gone {
		return false
	}
	m.winGone = false
	if r.left {
		m.left = true
	} else {
		m.stopped = true
	}
	return h.done()
}

// head is a member's next record in the merge, and its time and place.
type head struct {
	at  time.Duration
	seq uint64
	wk  *worker
	i   int
	m   *member
}

// mergeHeap is a min-heap of heads by time, ties by place. No two heads
// have the same place, so it pops them in one order whatever its shape.
type mergeHeap []head

func (a *head) before(b *head) bool { return a.at < b.at || a.at == b.at && a.seq < b.seq }

// init orders q as a heap.
func (q mergeHeap) init() {
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// pop removes the first head.
func (q *mergeHeap) pop() {
	h := *q
	n := len(h) - 1
	h[0] = h[n]
	*q = h[:n]
	if n > 0 {
		q.down(0)
	}
}

// down moves the head at i down to its place.
func (q mergeHeap) down(i int) {
	n := len(q)
	x := q[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && q[r].before(&q[c]) {
			c = r
		}
		if !q[c].before(&x) {
			break
		}
		q[i] = q[c]
		i = c
	}
	q[i] = x
}
