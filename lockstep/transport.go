package lockstep

import "github.com/phalanx-net/phalanx/bucket"

// Inbound is a datagram that arrived from a member.
type Inbound struct {
	From bucket.Slot // the member the transport authenticated as the sender
	Data []byte      // owned by the receiver of the Inbound
}

// Transport carries datagrams between the members of one session for a
// Session. Implementations deliver datagrams unreliably (loss, duplication
// and reordering are fine), authenticate the sender of each, and never hand
// on a datagram from anyone who is not a member.
type Transport interface {
	// Send sends one datagram to member to. It must not block for long and
	// may drop the datagram (returning nil) when the path is congested; it
	// returns an error only when the member cannot be reached at all. The
	// transport does not retain data after Send returns. Send is called from
	// one goroutine at a time.
	Send(to bucket.Slot, data []byte) error

	// Incoming returns the channel on which received datagrams arrive. It is
	// closed when the transport is closed.
	Incoming() <-chan Inbound

	// Close stops the transport and releases its resources.
	Close() error
}
