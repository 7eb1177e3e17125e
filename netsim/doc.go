// Package netsim models impaired networks, deterministically: one-way delay
// with jitter, random and burst (Gilbert-Elliott) loss, reordering,
// duplication, and a bandwidth cap with a drop-tail queue.
//
// The models serve two callers. The virtual-time harness asks, for each
// datagram, when it arrives, if at all; [WrapPacketConn] asks the same
// questions for real sockets, holding datagrams until their arrival time.
// The models read no clock, start no goroutine and touch no socket: time is
// an argument, the time since the session start as a time.Duration. Only the
// socket wrapper, a [Conn], reads the clock and runs one goroutine, which
// its Close stops.
//
// Conditions come from a [Profile]: a named list of timed [Phase]s that
// repeats after its last phase. [Named] returns the built-in profiles (lan,
// broadband, intercontinental, bad, modem, and phased, whose conditions
// change; docs/profiles.md tabulates them), and [ParseProfile] and [LoadProfile] read profiles from text, one
// phase per line:
//
//	name flaky
//	10s latency=50ms jitter=10ms loss=2% burst=1%/30%/0%/50% reorder=1%/20ms dup=0.5% bw=3600 queue=200ms
//	5s  latency=50ms jitter=10ms
//
// Each member has one [Uplink], shared by all its outgoing links, which
// serializes datagrams at the bandwidth cap; each ordered pair of members has
// one [Link], which decides loss, delay, reordering and duplication:
//
//	depart, ok := uplink.Admit(now, size)
//	if ok {
//		d := link.Send(depart, size)
//		for _, at := range d.Arrival[:d.Copies] {
//			// deliver at time at
//		}
//	}
//
// [Network] puts them together for nodes 0 to n-1 in virtual time: an
// uplink per node, a link per ordered pair and one queue of what is in
// flight, handed out in order of arrival, into which a caller may schedule
// its own events too. The virtual-time harness, the core's tests and the
// cursor simulation of phalanx sim all run on it.
//
// # Determinism
//
// Results depend only on the profile, the seeds and the sequence of calls:
// the same inputs give the same arrivals, to the nanosecond, on every
// architecture. All arithmetic is integer; probabilities are parts per
// million ([PPM]); random numbers come from [rng.PCG] streams derived per
// link and per decision, and every call draws the same number of values
// whatever the conditions, so changing one setting does not reshuffle the
// outcomes of the others, and adding a link changes no other link.
//
// [Reliable] models one direction of a reliable, ordered stream (a TCP
// connection or one QUIC stream: retransmission timeouts, head-of-line
// blocking) in virtual time, the baseline datagrams are measured against.
//
// Links, uplinks, Networks and Reliable streams are not safe for
// concurrent use.
package netsim
