package netsim

import (
	"time"

	"github.com/phalanx-net/phalanx/rng"
)

// Network is a virtual network of nodes 0 to n-1 in virtual time: each
// node's [Uplink], a [Link] for each ordered pair of nodes, and the
// messages in flight, handed out in order of arrival. It is the one
// network of the virtual-time harness (lockstep/locksteptest), the core's
// tests and the cursor simulation of phalanx sim.
//
// [Network.Send] puts a datagram through the sender's uplink and the link
// to its receiver and queues the message M for every copy that arrives;
// [Network.Schedule] queues a message of the caller's own (a timer, a
// command to submit) in the same order, so one loop of [Network.Pop]
// drives a whole run. Messages due at the same time come out in the order
// they were sent or scheduled, so a run is a pure function of the
// profile, the generators and the calls made.
//
// A Network reads no clock and is not safe for concurrent use.
type Network[M any] struct {
	uplinks []*Uplink
	links   [][]*Link // [from][to]; nil on the diagonal
	q       timed[M]

	// Cut, when set, reports whether a partition separates from and to
	// now: a datagram between them that its uplink admitted is lost
	// before its link sees it (the link draws nothing for it).
	Cut func(from, to int) bool
	// Copy, when set, returns the message queued for a duplicated
	// datagram's second copy, given the first's; nil queues the same
	// message twice.
	Copy func(M) M
}

// NewNetwork returns an empty network of n nodes whose uplinks and links
// all follow profile p; the link from node from to node to draws from
// link(from, to), which must give every pair a generator of its own (for
// example root.Derive(fmt.Sprintf("link %d->%d", from, to))).
//
// It panics if p is not valid (see [Profile.Validate]) or link returns
// nil.
func NewNetwork[M any](n int, p Profile, link func(from, to int) *rng.PCG) *Network[M] {
	nw := &Network[M]{uplinks: make([]*Uplink, n), links: make([][]*Link, n)}
	var sched schedule // the links' (validated by NewUplink first, as NewLink would)
	for i := range n {
		nw.uplinks[i] = NewUplink(p)
		if i == 0 {
			sched = newSchedule("NewLink", p)
		}
		nw.links[i] = make([]*Link, n)
		for j := range n {
			if j != i {
				r := link(i, j)
				if r == nil {
					panic("netsim: NewLink: nil generator")
				}
				nw.links[i][j] = newLink(sched, r)
			}
		}
	}
	return nw
}

// Send offers a datagram of size bytes from node from to node to at time
// now: through from's uplink ([Uplink.Admit]), then, unless Cut separates
// them, the link ([Link.Send]) from the time it departs. It queues m (and,
// for a duplicate, Copy(m)) at each arrival and returns the delivery,
// whose Copies is 0 when the datagram was refused by the uplink's queue,
// cut or lost.
//
// It panics if from or to is not a node, if they are the same, or as
// Uplink.Admit and Link.Send do.
func (n *Network[M]) Send(now time.Duration, from, to, size int, m M) Delivery {
	d := n.Transit(now, from, to, size)
	for i := range d.Copies {
		if i > 0 && n.Copy != nil {
			m = n.Copy(m)
		}
		n.q.push(d.Arrival[i], m)
	}
	return d
}

// Transit is Send without the queueing: it puts the datagram through
// from's uplink and, unless Cut separates them, the link, and returns the
// delivery; the caller queues what arrives itself. Transit for one sender
// reads and changes only that sender's uplink and links, so calls for
// different senders may run concurrently when nothing else is called on
// the network meanwhile and Cut is safe to call concurrently.
//
// It panics as Send does.
func (n *Network[M]) Transit(now time.Duration, from, to, size int) Delivery {
	depart, ok := n.uplinks[from].Admit(now, size)
	if !ok || (n.Cut != nil && n.Cut(from, to)) {
		return Delivery{}
	}
	l := n.links[from][to]
	if l == nil {
		panic("netsim: Network.Send: a node sends to itself")
	}
	return l.Send(depart, size)
}

// Schedule queues m at time at, behind whatever is already queued for
// the same time.
func (n *Network[M]) Schedule(at time.Duration, m M) { n.q.push(at, m) }

// Next returns the time of the first message queued; ok is false when
// nothing is.
func (n *Network[M]) Next() (at time.Duration, ok bool) { return n.q.peek() }

// Pop removes and returns the first message queued and its time; ok is
// false when nothing is.
func (n *Network[M]) Pop() (at time.Duration, m M, ok bool) {
	if n.q.len() == 0 {
		return 0, m, false
	}
	at, m = n.q.pop()
	return at, m, true
}

// PopSeq is Pop that also returns the message's place in the order of
// queueing: messages due at the same time come out in increasing seq.
func (n *Network[M]) PopSeq() (at time.Duration, seq uint64, m M, ok bool) {
	if n.q.len() == 0 {
		return 0, 0, m, false
	}
	seq = n.q.items[0].seq
	at, m = n.q.pop()
	return at, seq, m, true
}

// TakeBefore removes every message due before end and calls f with each,
// its time and its place in the order of queueing (as PopSeq returns
// them), in no particular order: sorted by time, ties by seq, they are
// what PopSeq would have returned one after another. It takes time in
// proportion to all the messages queued, not the number taken times its
// logarithm, so it pays where many are due. f must not call n.
func (n *Network[M]) TakeBefore(end time.Duration, f func(at time.Duration, seq uint64, m M)) {
	n.q.takeBefore(end, f)
}

// Len returns how many messages are queued.
func (n *Network[M]) Len() int { return n.q.len() }

// Take removes the queued messages match selects, whatever their time,
// and returns them in the order Pop would have: a test that holds the
// datagrams in flight hands them over or drops them with it.
func (n *Network[M]) Take(match func(M) bool) []M { return n.q.take(match) }

// Backlog returns how long a datagram node offers its uplink at now would
// wait before its first byte goes out ([Uplink.Backlog]).
func (n *Network[M]) Backlog(node int, now time.Duration) time.Duration {
	return n.uplinks[node].Backlog(now)
}
