package netsim

import (
	"fmt"
	"time"
)

// Retransmission timeouts of the stream model (see Reliable).
const (
	MinRTO     = 200 * time.Millisecond // floor of the timeout, as Linux's TCP
	InitialRTO = time.Second            // before the first round trip is measured (RFC 6298)
	MaxRTO     = time.Minute            // ceiling of the backed-off timeout
	// ClockGranularity is RFC 6298's G, the least margin of the timeout
	// over the smoothed round trip: on a path without jitter RTTVAR decays
	// to zero, and a timeout of exactly SRTT would fire as the
	// acknowledgement arrives.
	ClockGranularity = time.Millisecond
)

// ReliableStats counts what a Reliable did. Counters only grow.
type ReliableStats struct {
	Segments    int64 // segments sent for the first time
	Retransmits int64 // segments sent again after their timer fired
	Arrivals    int64 // copies of segments that reached the receiver
	Duplicates  int64 // copies of segments the receiver already had, dropped
	Delivered   int64 // segments handed on in order
	Blocked     int64 // segments that arrived ahead of a missing one and waited for it
}

// Add adds o's counters to s.
func (s *ReliableStats) Add(o ReliableStats) {
	s.Segments += o.Segments
	s.Retransmits += o.Retransmits
	s.Arrivals += o.Arrivals
	s.Duplicates += o.Duplicates
	s.Delivered += o.Delivered
	s.Blocked += o.Blocked
}

// Reliable is one direction of a reliable, ordered stream between two members
// (a TCP connection, or one QUIC stream), modelled in virtual time. It is the
// baseline Phalanx's datagrams are measured against (the virtual-time
// harness's stream transport), and it does no I/O: the caller carries segments over
// the network model and reports what became of them.
//
// Every datagram given to Send becomes a segment with the next sequence
// number. The caller records each transmission of it with Transmit, which
// sets the segment's retransmission timer, and, per copy that reaches the
// receiver, calls Arrive, which returns what can now be handed on in order.
// When the receiver's acknowledgement of a segment reaches the sender the
// caller calls Acked; when a segment's timer fires it calls Expired, which
// returns the segment to transmit again if it is still unacknowledged.
//
// The model:
//
//   - Retransmission timeout as in TCP (RFC 6298), with Linux's floor:
//     RTO = max(MinRTO, SRTT + max(G, 4·RTTVAR)), G being ClockGranularity,
//     InitialRTO before the first sample.
//     Each retransmission of a segment doubles its timeout (exponential
//     backoff) up to MaxRTO. Every acknowledgement names the transmission it
//     answers, as QUIC's packet numbers and TCP's timestamp option do, so
//     each gives an unambiguous round-trip sample, retransmissions included
//     (without that, Karn's algorithm would have to skip them).
//   - Selective acknowledgement: each segment is acknowledged on its own, so
//     only lost segments are sent again, as with QUIC or TCP with SACK. There
//     is no fast retransmit: a loss is repaired by the timeout alone.
//   - In-order delivery: the receiver hands segments on strictly in
//     sequence; one that arrives early waits for every one before it
//     (head-of-line blocking). Copies of a segment it already had are
//     dropped.
//   - No congestion or flow control: the sender's window is unlimited.
//
// A Reliable is not safe for concurrent use.
type Reliable struct {
	// Sender: segments base, base+1, ... not yet acknowledged (acked ones
	// inside the window stay until those before them are acked too).
	base         uint64
	window       []segment
	srtt, rttvar time.Duration
	sampled      bool

	// Receiver: early[i] holds segment expect+i if it has arrived.
	expect uint64
	early  []earlySegment
	out    [][]byte // Arrive's result, handed back to free on the next call

	free  [][]byte // spare buffers
	stats ReliableStats
}

type segment struct {
	data     []byte
	sentAt   time.Duration // last transmission
	deadline time.Duration // its retransmission timer
	tries    int           // transmissions so far (0: not yet on the wire)
	acked    bool
}

type earlySegment struct {
	data []byte
	ok   bool
}

// NewReliable returns an empty stream.
func NewReliable() *Reliable { return &Reliable{} }

// RTO returns the retransmission timeout a segment sent now would get.
func (s *Reliable) RTO() time.Duration {
	if !s.sampled {
		return InitialRTO
	}
	return max(MinRTO, s.srtt+max(ClockGranularity, 4*s.rttvar))
}

// SRTT returns the smoothed round-trip time and its variation, both zero
// before the first sample.
func (s *Reliable) SRTT() (srtt, rttvar time.Duration) { return s.srtt, s.rttvar }

// Stats returns the stream's counters.
func (s *Reliable) Stats() ReliableStats { return s.stats }

// Send takes a copy of data as the next segment and returns its sequence
// number. The segment is not on the wire until Transmit records it.
func (s *Reliable) Send(data []byte) (seq uint64) {
	seq = s.base + uint64(len(s.window))
	s.window = append(s.window, segment{data: s.copyOf(data)})
	s.stats.Segments++
	return seq
}

// Transmit records that segment seq goes on the wire at time at (its first
// transmission or a retransmission) and returns the deadline of its
// retransmission timer: at + RTO, doubled for every earlier transmission,
// at most at + MaxRTO. It panics if seq is not an unacknowledged segment.
func (s *Reliable) Transmit(at time.Duration, seq uint64) (deadline time.Duration) {
	seg := s.inFlight(seq)
	if seg == nil {
		panic(fmt.Sprintf("netsim: Reliable.Transmit of segment %d, not in flight", seq))
	}
	rto := s.RTO()
	for range seg.tries {
		rto = min(2*rto, MaxRTO)
	}
	if seg.tries > 0 {
		s.stats.Retransmits++
	}
	seg.tries++
	seg.sentAt, seg.deadline = at, at+rto
	return seg.deadline
}

// Expired is called when the retransmission timer of segment seq fires at
// now. If the segment is still unacknowledged and its timer is due, it
// returns the data to transmit again (valid until the segment is
// acknowledged) and ok true. Otherwise (acknowledged since, or a timer that
// is no longer the segment's) ok is false.
func (s *Reliable) Expired(now time.Duration, seq uint64) (data []byte, ok bool) {
	seg := s.inFlight(seq)
	if seg == nil || seg.tries == 0 || seg.deadline > now {
		return nil, false
	}
	return seg.data, true
}

// Acked records that the receiver's acknowledgement of segment seq, of the
// transmission that went on the wire at sent, reached the sender at now:
// the segment is done, and now − sent is a round-trip sample.
// Acknowledgements of segments already acknowledged (or never sent) are
// ignored.
func (s *Reliable) Acked(now time.Duration, seq uint64, sent time.Duration) {
	seg := s.inFlight(seq)
	if seg == nil || seg.tries == 0 {
		return
	}
	seg.acked = true
	s.sample(now - sent)
	s.free = append(s.free, seg.data[:0])
	seg.data = nil
	n := 0
	for n < len(s.window) && s.window[n].acked {
		n++
	}
	if n > 0 {
		m := copy(s.window, s.window[n:])
		clear(s.window[m:])
		s.window = s.window[:m]
		s.base += uint64(n)
	}
}

// sample folds one round-trip measurement into SRTT and RTTVAR (RFC 6298).
func (s *Reliable) sample(r time.Duration) {
	if !s.sampled {
		s.srtt, s.rttvar, s.sampled = r, r/2, true
		return
	}
	d := s.srtt - r
	if d < 0 {
		d = -d
	}
	s.rttvar = (3*s.rttvar + d) / 4
	s.srtt = (7*s.srtt + r) / 8
}

func (s *Reliable) inFlight(seq uint64) *segment {
	if seq < s.base || seq >= s.base+uint64(len(s.window)) {
		return nil
	}
	seg := &s.window[seq-s.base]
	if seg.acked {
		return nil
	}
	return seg
}

// Arrive records that a copy of segment seq carrying data reached the
// receiver, and returns the data of every segment that can now be handed on
// in order: none if seq is a duplicate or arrived ahead of a missing
// segment, else seq's and those that waited for it, in sequence. The
// returned slices are valid until the next call of Arrive; data is copied
// if it has to wait.
func (s *Reliable) Arrive(seq uint64, data []byte) [][]byte {
	for _, b := range s.out {
		s.free = append(s.free, b[:0])
	}
	s.out = s.out[:0]
	s.stats.Arrivals++
	if seq < s.expect {
		s.stats.Duplicates++
		return nil
	}
	i := int(seq - s.expect)
	for len(s.early) <= i {
		s.early = append(s.early, earlySegment{})
	}
	if s.early[i].ok {
		s.stats.Duplicates++
		return nil
	}
	s.early[i] = earlySegment{data: s.copyOf(data), ok: true}
	if i > 0 {
		s.stats.Blocked++
		return nil
	}
	n := 0
	for n < len(s.early) && s.early[n].ok {
		s.out = append(s.out, s.early[n].data)
		n++
	}
	m := copy(s.early, s.early[n:])
	clear(s.early[m:])
	s.early = s.early[:m]
	s.expect += uint64(n)
	s.stats.Delivered += int64(n)
	return s.out
}

func (s *Reliable) copyOf(data []byte) []byte {
	var b []byte
	if n := len(s.free); n > 0 {
		b = s.free[n-1]
		s.free = s.free[:n-1]
	}
	return append(b, data...)
}
