package locksteptest

import (
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// Transports a run can use (Config.Transport).
const (
	// TransportDatagram carries every datagram of a core as one unreliable
	// datagram, as Phalanx does over QUIC datagrams (RFC 9221): lost ones
	// stay lost, the core's own repeats make up for them.
	TransportDatagram = "datagram"
	// TransportStream carries the datagrams from each member to each other
	// over a reliable, ordered stream (see Reliable): the baseline of a TCP
	// connection or one QUIC stream per pair of members.
	TransportStream = "stream"
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
// baseline Phalanx's datagrams are measured against (Config.Transport
// TransportStream), and it does no I/O: the caller carries segments over
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
	early  []arrival
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

type arrival struct {
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
		panic(fmt.Sprintf("locksteptest: Reliable.Transmit of segment %d, not in flight", seq))
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
		s.early = append(s.early, arrival{})
	}
	if s.early[i].ok {
		s.stats.Duplicates++
		return nil
	}
	s.early[i] = arrival{data: s.copyOf(data), ok: true}
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

// streamNet is the stream transport of a run: a Reliable for each ordered pair
// of members, the paths their acknowledgements take, and the traffic each
// member put on and took off the wire.
type streamNet struct {
	pairs [][]*Reliable    // [from][to]
	acks  [][]*netsim.Link // [from][to]: the path of to's acknowledgements back to from
	sent  []wireCount      // per member, every transmission, retransmissions included
	recv  []wireCount      // per member, every copy that arrived
}

type wireCount struct{ datagrams, bytes int64 }

// newStreamNet builds the streams of a run. An acknowledgement takes the
// reverse path's delay (latency and jitter, in order) but is never lost and
// costs no bytes: acks ride on the reverse traffic, which the core sends at
// least every MaxInterval.
func newStreamNet(members int, p netsim.Profile, root *rng.PCG) *streamNet {
	ackPath := netsim.Profile{Name: p.Name}
	for _, ph := range p.Phases {
		ackPath.Phases = append(ackPath.Phases, netsim.Phase{
			Duration:   ph.Duration,
			Conditions: netsim.Conditions{Latency: ph.Conditions.Latency, Jitter: ph.Conditions.Jitter},
		})
	}
	n := &streamNet{
		pairs: make([][]*Reliable, members),
		acks:  make([][]*netsim.Link, members),
		sent:  make([]wireCount, members),
		recv:  make([]wireCount, members),
	}
	for i := range members {
		n.pairs[i] = make([]*Reliable, members)
		n.acks[i] = make([]*netsim.Link, members)
		for j := range members {
			if j != i {
				n.pairs[i][j] = NewReliable()
				n.acks[i][j] = netsim.NewLink(ackPath, root.Derive(fmt.Sprintf("stream acks %d->%d", j, i)))
			}
		}
	}
	return n
}

// streamSend hands a core's datagram to the stream from m to to and
// transmits the segment it becomes.
func (h *harness) streamSend(m *member, to bucket.Slot, data []byte) {
	seq := h.streams.pairs[m.slot][to].Send(data)
	h.transmitSegment(m, to, seq, data)
}

// transmitSegment sends one transmission of segment seq from m to to
// through m's uplink and the link, as a datagram would go, and sets the
// segment's retransmission timer. A segment is never dropped at its own
// uplink: while the uplink's queue is full it waits in the sender's socket
// buffer, and goes on the wire (and starts its timer) when the queue has
// room.
func (h *harness) transmitSegment(m *member, to bucket.Slot, seq uint64, data []byte) {
	at := h.now
	if c := h.cfg.Profile.At(h.now); c.Bandwidth > 0 {
		at += max(0, m.uplink.Backlog(h.now)-c.Queue)
	}
	s := h.streams.pairs[m.slot][to]
	timer := h.newEvent()
	timer.at, timer.kind, timer.to, timer.from, timer.gen = s.Transmit(at, seq), evRTO, m.slot, to, seq
	h.push(timer)

	size := len(data) + m.core.Config().Overhead
	h.streams.sent[m.slot].datagrams++
	h.streams.sent[m.slot].bytes += int64(size)
	h.carry(m, to, at, size, data, evSegment, seq)
}

// streamEvent handles an event of the stream transport for member m (the
// receiver of a segment, the sender of an acknowledged or expired one) and
// reports whether m's core received anything.
func (h *harness) streamEvent(m *member, e *event) bool {
	switch e.kind {
	case evSegment:
		h.res.addOneWay(h.now-e.sent, h.cfg.KeepSamples)
		h.streams.recv[m.slot].datagrams++
		h.streams.recv[m.slot].bytes += int64(len(e.data) + m.core.Config().Overhead)
		ack := h.streams.acks[e.from][m.slot].Send(h.now, 0)
		a := h.newEvent()
		a.at, a.kind, a.to, a.from, a.gen, a.sent = ack.Arrival[0], evAck, e.from, m.slot, e.gen, e.sent
		h.push(a)
		ready := h.streams.pairs[e.from][m.slot].Arrive(e.gen, e.data)
		for _, d := range ready {
			if h.cfg.OnReceive != nil {
				h.cfg.OnReceive(h.now, e.from, m.slot, d)
			}
			m.core.Receive(h.now, e.from, d)
		}
		return len(ready) > 0
	case evAck:
		h.streams.pairs[m.slot][e.from].Acked(h.now, e.gen, e.sent)
	case evRTO:
		if data, ok := h.streams.pairs[m.slot][e.from].Expired(h.now, e.gen); ok {
			h.transmitSegment(m, e.from, e.gen, data)
		}
	}
	return false
}

// account replaces the traffic counters of the members' stats by what went
// on the wire, retransmissions included, and fills res.Reliable.
func (n *streamNet) account(res *Result) {
	res.Reliable = make([]ReliableStats, len(n.pairs))
	for i := range res.Members {
		st := &res.Members[i].Stats
		st.Datagrams, st.BytesSent = n.sent[i].datagrams, n.sent[i].bytes
		st.DatagramsReceived, st.BytesReceived = n.recv[i].datagrams, n.recv[i].bytes
		for _, s := range n.pairs[i] {
			if s != nil {
				res.Reliable[i].Add(s.Stats())
			}
		}
	}
}
