package locksteptest

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

type eventKind uint8

const (
	evWake eventKind = iota
	evDeliver
	evSubmit
	evFault
	evSegment  // stream transport: a segment reaches member to
	evAck      // stream transport: member to learns that from has segment gen
	evRTO      // stream transport: member to's timer for segment gen to from fires
	evCatchup  // a joiner's catch-up transfer may be complete (catchup.go)
	evSpectate // spectator gen may step (spectate.go)
)

type event struct {
	at    time.Duration
	seq   uint64
	kind  eventKind
	to    bucket.Slot
	from  bucket.Slot
	gen   uint64 // evWake: the member's wake generation it was set for; stream events: the segment's sequence number
	data  []byte
	sent  time.Duration
	fault int
}

// queue holds the events in flight in time order, ties in the order they
// were pushed (seq): a binary heap whose entries carry their keys, so
// ordering them reads no event.
type queue []queued

type queued struct {
	at  time.Duration
	seq uint64
	e   *event
}

func (a queued) before(b queued) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (q *queue) push(x queued) {
	*q = append(*q, x)
	s := *q
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !x.before(s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = x
}

// pop removes and returns the first event; the queue must not be empty.
func (q *queue) pop() *event {
	s := *q
	top := s[0].e
	n := len(s) - 1
	x := s[n]
	s[n] = queued{}
	s = s[:n]
	*q = s
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && s[r].before(s[c]) {
			c = r
		}
		if !s[c].before(x) {
			break
		}
		s[i] = s[c]
		i = c
	}
	s[i] = x
	return top
}

func (h *harness) push(e *event) {
	e.seq = h.seq
	h.seq++
	h.q.push(queued{at: e.at, seq: e.seq, e: e})
}

func (h *harness) recycle(e *event) {
	if e.kind == evDeliver || e.kind == evSegment {
		h.bufs = append(h.bufs, e.data[:0])
	}
	*e = event{}
	h.free = append(h.free, e)
}

func (h *harness) newEvent() *event {
	if n := len(h.free); n > 0 {
		e := h.free[n-1]
		h.free = h.free[:n-1]
		return e
	}
	return &event{}
}
