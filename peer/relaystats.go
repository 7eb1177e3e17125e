package peer

import (
	"sync/atomic"
	"time"

	pbv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/pb"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
)

// RelayStats counts what a relay's circuit service did since it started.
type RelayStats struct {
	Reservations int64 // reservations granted to a peer that held none
	Renewals     int64 // reservations renewed by the peer holding them
	Circuits     int64 // relayed connections opened
	BytesRelayed int64 // bytes relayed, both ways
}

// relayCounts is the relay service's metrics tracer: counters, nothing
// exported anywhere.
type relayCounts struct {
	reservations, renewals, circuits, bytes atomic.Int64
}

var _ relayv2.MetricsTracer = (*relayCounts)(nil)

func (c *relayCounts) ReservationAllowed(renewal bool) {
	if renewal {
		c.renewals.Add(1)
	} else {
		c.reservations.Add(1)
	}
}

func (c *relayCounts) ConnectionOpened()                     { c.circuits.Add(1) }
func (c *relayCounts) BytesTransferred(n int)                { c.bytes.Add(int64(n)) }
func (c *relayCounts) RelayStatus(bool)                      {}
func (c *relayCounts) ConnectionClosed(time.Duration)        {}
func (c *relayCounts) ConnectionRequestHandled(pbv2.Status)  {}
func (c *relayCounts) ReservationClosed(int)                 {}
func (c *relayCounts) ReservationRequestHandled(pbv2.Status) {}

func (c *relayCounts) stats() RelayStats {
	return RelayStats{
		Reservations: c.reservations.Load(),
		Renewals:     c.renewals.Load(),
		Circuits:     c.circuits.Load(),
		BytesRelayed: c.bytes.Load(),
	}
}
