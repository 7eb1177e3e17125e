package locksteptest

import (
	"fmt"

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
	// over a reliable, ordered stream (see netsim.Reliable): the baseline of a TCP
	// connection or one QUIC stream per pair of members.
	TransportStream = "stream"
)

// streamNet is the stream transport of a run: a netsim.Reliable for each ordered pair
// of members, the paths their acknowledgements take, and the traffic each
// member put on and took off the wire.
type streamNet struct {
	pairs [][]*netsim.Reliable // [from][to]
	acks  [][]*netsim.Link     // [from][to]: the path of to's acknowledgements back to from
	sent  []wireCount          // per member, every transmission, retransmissions included
	recv  []wireCount          // per member, every copy that arrived
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
		pairs: make([][]*netsim.Reliable, members),
		acks:  make([][]*netsim.Link, members),
		sent:  make([]wireCount, members),
		recv:  make([]wireCount, members),
	}
	for i := range members {
		n.pairs[i] = make([]*netsim.Reliable, members)
		n.acks[i] = make([]*netsim.Link, members)
		for j := range members {
			if j != i {
				n.pairs[i][j] = netsim.NewReliable()
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
		at += max(0, h.net.Backlog(int(m.slot), h.now)-c.Queue)
	}
	s := h.streams.pairs[m.slot][to]
	timer := h.newEvent()
	timer.kind, timer.to, timer.from, timer.gen = evRTO, m.slot, to, seq
	h.schedule(s.Transmit(at, seq), timer)

	size := len(data) + m.overhead
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
		h.streams.recv[m.slot].bytes += int64(len(e.data) + m.overhead)
		ack := h.streams.acks[e.from][m.slot].Send(h.now, 0)
		a := h.newEvent()
		a.kind, a.to, a.from, a.gen, a.sent = evAck, e.from, m.slot, e.gen, e.sent
		h.schedule(ack.Arrival[0], a)
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
	res.Reliable = make([]netsim.ReliableStats, len(n.pairs))
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
