package netsim

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/phalanx-net/phalanx/rng"
)

// Stats counts what a [Link] or an [Uplink] did with the datagrams given to
// it. Counters only grow. A Link fills Sent, Bytes, Lost, Duplicated and
// Reordered; an Uplink fills Sent, Bytes and QueueDrops.
type Stats struct {
	Sent       uint64 // datagrams offered to Send or Admit
	Bytes      uint64 // their total size in bytes
	Lost       uint64 // lost to Conditions.Loss or Conditions.Burst
	Duplicated uint64 // delivered twice
	Reordered  uint64 // held back by Conditions.ReorderDelay
	QueueDrops uint64 // refused because the uplink queue was full
}

// Delivery is what becomes of one datagram sent on a [Link].
type Delivery struct {
	// Copies is how many times the datagram arrives: 0 when it is lost, 1,
	// or 2 when it is duplicated.
	Copies int

	// Arrival holds the arrival time of each copy, the original first;
	// entries from index Copies on are zero. Every arrival is at or after
	// the send time, and Arrival[1] ≥ Arrival[0].
	Arrival [2]time.Duration

	// Reordered reports that the datagram was held back by
	// Conditions.ReorderDelay, so later datagrams may overtake it.
	Reordered bool
}

// Lost reports whether the datagram never arrives.
func (d Delivery) Lost() bool { return d.Copies == 0 }

// Link models one direction of the path between two members: delay, jitter,
// random and burst loss, reordering and duplication, following the phases of
// a [Profile] (see [Conditions] for the model). Bandwidth and Queue are not
// its business: they belong to the sender's [Uplink], which the caller
// consults first.
//
// A Link is a pure function of its profile, its random stream and the
// sequence of calls made on it: two Links built alike and called alike give
// identical deliveries on every machine. It reads no clock; time is the
// argument now, the time since the session start.
//
// A Link is not safe for concurrent use.
type Link struct {
	sched schedule

	// One stream per decision, so that changing one setting (say, Duplicate)
	// does not reshuffle the others (say, which datagrams are lost). Every
	// Send takes the same number of calls from each stream whatever the
	// conditions.
	// They are held by value, beside the rest of the link, so that a Send
	// reaches fewer cache lines.
	burst, loss, jitter, reorder, dup rng.PCG

	bad   bool          // Gilbert-Elliott state
	floor time.Duration // arrival of the last in-order datagram: FIFO floor
	stats Stats
}

// NewLink returns a link following profile p, drawing from streams derived
// from r with [rng.PCG.Derive]. r itself is neither kept nor advanced, so
// each link needs its own r, for example root.Derive("link 0->1"); links made
// that way are independent, and adding one perturbs no other.
//
// It panics if p is not valid (see [Profile.Validate]) or r is nil.
func NewLink(p Profile, r *rng.PCG) *Link {
	if r == nil {
		panic("netsim: NewLink: nil generator")
	}
	return newLink(newSchedule("NewLink", p), r)
}

// newLink is NewLink with the schedule made: the links of a Network share
// one (it is only read).
func newLink(sched schedule, r *rng.PCG) *Link {
	return &Link{
		sched:   sched,
		burst:   *r.Derive("netsim/burst"),
		loss:    *r.Derive("netsim/loss"),
		jitter:  *r.Derive("netsim/jitter"),
		reorder: *r.Derive("netsim/reorder"),
		dup:     *r.Derive("netsim/dup"),
	}
}

// Send reports what becomes of a datagram of size bytes that leaves the
// sender at time now (for a shaped sender, the departure time returned by
// [Uplink.Admit]), under the conditions of the phase in force at now.
// Arrivals are at or after now. Send does not allocate.
//
// It panics if now is negative or size is outside [0, MaxDatagram].
func (l *Link) Send(now time.Duration, size int) Delivery {
	checkSize("Link.Send", size)
	c := l.sched.at(now)
	l.stats.Sent++
	l.stats.Bytes += uint64(size)

	// Every draw, in a fixed order, whatever the conditions.
	step := PPM(l.burst.Uint32N(uint32(Always)))
	burstDraw := PPM(l.burst.Uint32N(uint32(Always)))
	lossDraw := PPM(l.loss.Uint32N(uint32(Always)))
	jitter := jitterSample(&l.jitter, c.Jitter)
	reorderDraw := PPM(l.reorder.Uint32N(uint32(Always)))
	dupDraw := PPM(l.dup.Uint32N(uint32(Always)))
	dupGap := scale(l.dup.Uint64(), c.Jitter+1)

	if l.bad {
		l.bad = step >= c.Burst.Leave
	} else {
		l.bad = step < c.Burst.Enter
	}
	burstLoss := c.Burst.LossGood
	if l.bad {
		burstLoss = c.Burst.LossBad
	}
	if lossDraw < c.Loss || burstDraw < burstLoss {
		l.stats.Lost++
		return Delivery{}
	}

	at := max(now+c.Latency+jitter, l.floor)
	d := Delivery{Copies: 1}
	if reorderDraw < c.Reorder {
		at += c.ReorderDelay
		d.Reordered = true
		l.stats.Reordered++
	} else {
		l.floor = at
	}
	d.Arrival[0] = at
	if dupDraw < c.Duplicate {
		d.Copies = 2
		d.Arrival[1] = at + dupGap
		l.stats.Duplicated++
	}
	return d
}

// Stats returns the link's counters.
func (l *Link) Stats() Stats { return l.stats }

// jitterSample draws the extra delay documented at Conditions.Jitter, with
// mean j: a uniform part on [0, j) plus a piecewise-uniform exponential tail
// with bins of width j/3. It always takes five outputs from r (two Uint64
// and one Uint32) so the stream stays aligned whatever j is.
func jitterSample(r *rng.PCG, j time.Duration) time.Duration {
	body, bin, within := r.Uint64(), r.Uint32(), r.Uint64()
	if j <= 0 {
		return 0
	}
	k := min(bits.LeadingZeros32(bin), maxTailBin) // P(k) = 2^-(k+1)
	w := j / 3
	return scale(body, j) + time.Duration(k)*w + scale(within, w)
}

// maxTailBin caps the geometric bin count of the jitter tail, so the extra
// delay never exceeds j + 16·j/3.
const maxTailBin = 15

// scale maps a uniform 64-bit draw x to [0, n) by taking the high word of
// x·n (n ≥ 0). The bias is below n/2^64, far under a nanosecond.
func scale(x uint64, n time.Duration) time.Duration {
	if n <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(x, uint64(n))
	return time.Duration(hi)
}

func checkSize(who string, size int) {
	if size < 0 || size > MaxDatagram {
		panic("netsim: " + who + ": datagram size " + strconv.Itoa(size) + " outside [0, MaxDatagram]")
	}
}
