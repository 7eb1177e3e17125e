package peer

import (
	"sync/atomic"

	"github.com/phalanx-net/phalanx/netsim"
)

type memberCounters struct {
	sent, sentBytes, recv, recvBytes, sendErrors, dropped, sendDropped atomic.Uint64
}

// MemberStats counts one member's datagrams, payload bytes only. In
// ModeStream a "datagram" is one packet, carried in a stream frame; the
// counts leave out the frames' length prefixes.
type MemberStats struct {
	Connected         bool   // a connection to the member is open
	Relayed           bool   // the packets travel on a stream through a relay (no direct path)
	DatagramsSent     uint64 // datagrams handed to QUIC for it (ModeStream: queued for its stream)
	BytesSent         uint64
	DatagramsReceived uint64 // datagrams that arrived from it
	BytesReceived     uint64
	SendErrors        uint64 // sends that failed (too large, connection gone)
	Dropped           uint64 // of its datagrams, dropped because Incoming was full (never in ModeStream)
	SendDropped       uint64 // ModeStream: packets Send dropped because the member's stream queue was full
}

// TransportStats are the transport's counters. Counters only grow.
type TransportStats struct {
	Mode       Mode              // how the packets travel
	Members    []MemberStats     // by slot; this member's own entry stays zero
	Dropped    uint64            // datagrams dropped because Incoming was full
	Refused    uint64            // connections refused: strangers, wrong direction, unreadable identity, another mode
	Silences   uint64            // times nothing arrived from anyone for SilenceWarning
	Impairment *netsim.ConnStats // what the profile did to outgoing packets; nil without one
	// Socket counts the UDP packets the datagram socket read and wrote
	// since the transport started.
	Socket SocketStats
}

// Stats returns a snapshot of the counters.
func (t *Transport) Stats() TransportStats {
	s := TransportStats{
		Mode:     t.mode,
		Members:  make([]MemberStats, len(t.members)),
		Dropped:  t.dropped.Load(),
		Refused:  t.refused.Load(),
		Silences: t.silences.Load(),
	}
	for i := range t.members {
		m := &t.members[i]
		l := t.links[i].Load()
		s.Members[i] = MemberStats{
			Connected:         l != nil && l.alive(),
			Relayed:           l != nil && l.relayed != nil,
			DatagramsSent:     m.sent.Load(),
			BytesSent:         m.sentBytes.Load(),
			DatagramsReceived: m.recv.Load(),
			BytesReceived:     m.recvBytes.Load(),
			SendErrors:        m.sendErrors.Load(),
			Dropped:           m.dropped.Load(),
			SendDropped:       m.sendDropped.Load(),
		}
	}
	s.Socket = t.sock.counts.stats().since(t.sockStart)
	if t.impaired != nil {
		st := t.impaired.Stats()
		s.Impairment = &st
	}
	return s
}
