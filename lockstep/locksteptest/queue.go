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

// event is one entry of the run's queue (the network's, netsim.Network):
// queued at its time with schedule, or at its arrival by carry.
type event struct {
	kind  eventKind
	to    bucket.Slot
	from  bucket.Slot
	gen   uint64 // evWake: the member's wake generation it was set for; stream events: the segment's sequence number
	data  []byte
	sent  time.Duration
	fault int
}

// queued is an entry of the run's queue: an event and the member it is
// for (e.to), kept beside it so that handing a window's events to their
// members reads only the queue.
type queued struct {
	e  *event
	to bucket.Slot
}

// schedule queues e at time at.
func (h *harness) schedule(at time.Duration, e *event) { h.net.Schedule(at, queued{e: e, to: e.to}) }

// pool recycles events and datagram buffers: the harness's, and each
// window worker's own.
type pool struct {
	free []*event
	bufs [][]byte
}

func (p *pool) recycle(e *event) {
	if e.kind == evDeliver || e.kind == evSegment {
		p.bufs = append(p.bufs, e.data[:0])
	}
	*e = event{}
	p.free = append(p.free, e)
}

func (p *pool) newEvent() *event {
	if n := len(p.free); n > 0 {
		e := p.free[n-1]
		p.free = p.free[:n-1]
		return e
	}
	return &event{}
}

// buf returns a recycled datagram buffer, or nil.
func (p *pool) buf() []byte {
	n := len(p.bufs)
	if n == 0 {
		return nil
	}
	b := p.bufs[n-1]
	p.bufs = p.bufs[:n-1]
	return b
}
