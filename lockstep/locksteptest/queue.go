package locksteptest

import (
	"container/heap"
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

type queue []*event

func (q queue) Len() int { return len(q) }

func (q queue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }

func (q *queue) Push(x any) { *q = append(*q, x.(*event)) }

func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

func (h *harness) push(e *event) {
	e.seq = h.seq
	h.seq++
	heap.Push(&h.q, e)
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
