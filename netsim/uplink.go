package netsim

import (
	"math/bits"
	"time"
)

// Uplink models a member's outgoing connection, shared by all of its links:
// datagrams are serialized one after another at Conditions.Bandwidth bytes
// per second, waiting in a drop-tail queue limited by Conditions.Queue. The
// conditions are those of the phase in force when a datagram is offered.
//
// The virtual-time harness passes each datagram through the sender's uplink
// first, then through the link to its receiver:
//
//	depart, ok := uplink.Admit(now, size)
//	if ok {
//		d := link.Send(depart, size)
//		// deliver d.Arrival[:d.Copies]
//	}
//
// An Uplink draws no random numbers. It is not safe for concurrent use.
type Uplink struct {
	sched schedule
	free  time.Duration // when the uplink finishes what it has accepted
	stats Stats
}

// NewUplink returns an idle uplink following profile p. It panics if p is
// not valid (see [Profile.Validate]).
func NewUplink(p Profile) *Uplink {
	return &Uplink{sched: newSchedule("NewUplink", p)}
}

// Admit offers a datagram of size bytes to the uplink at time now. If the
// datagram would wait longer than Conditions.Queue for the uplink to finish
// what it already holds, it is dropped: ok is false and it counts in
// Stats.QueueDrops. Otherwise ok is true and depart is when its last byte
// has gone out: after those ahead of it and its own serialization time,
// ceil(size·1e9/Bandwidth) ns. With unlimited bandwidth depart is now, or
// later only while a backlog from a capped phase drains. Admit does not
// allocate.
//
// Calls should come in order of now; an earlier now than before is treated
// as arriving behind everything already accepted. It panics if now is
// negative or size is outside [0, MaxDatagram].
func (u *Uplink) Admit(now time.Duration, size int) (depart time.Duration, ok bool) {
	checkSize("Uplink.Admit", size)
	c := u.sched.at(now)
	u.stats.Sent++
	u.stats.Bytes += uint64(size)
	start := max(now, u.free)
	if c.Bandwidth == 0 {
		return start, true
	}
	if start-now > c.Queue {
		u.stats.QueueDrops++
		return 0, false
	}
	u.free = start + serialization(size, c.Bandwidth)
	return u.free, true
}

// Backlog returns how long a datagram offered at now would wait before its
// first byte goes out.
func (u *Uplink) Backlog(now time.Duration) time.Duration {
	return max(u.free-now, 0)
}

// Stats returns the uplink's counters.
func (u *Uplink) Stats() Stats { return u.stats }

// serialization returns ceil(size·1e9/bw) as a duration; size ≤ MaxDatagram
// keeps the product within 64 bits.
func serialization(size int, bw int64) time.Duration {
	hi, lo := bits.Mul64(uint64(size), uint64(time.Second))
	q, r := bits.Div64(hi, lo, uint64(bw))
	if r != 0 {
		q++
	}
	return time.Duration(q)
}
