package peer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/quic-go/quic-go"

	"github.com/phalanx-net/phalanx/bucket"
)

// carrier is how the packets of one link travel: the transport hands each
// packet to its member's carrier and knows no more of the mode than which
// carrier a new connection gets (newCarrier). A carrier's send is called
// from one goroutine at a time; alive and close are safe for concurrent use
// with it.
type carrier interface {
	// send hands one packet over. It returns false and no error when the
	// packet was dropped for want of room, and an error when the link
	// cannot take it (one wrapping ErrDatagramTooLarge if the path's
	// datagrams are smaller).
	send(packet []byte) (bool, error)

	// start starts, under t.wg, the goroutines that carry the link's
	// packets; the reader hands what arrives to t.deliver as from slot.
	start(t *Transport, slot bucket.Slot, l *link)

	// alive reports whether the link can still carry packets.
	alive() bool

	// close ends the link, telling the member why.
	close(code quic.ApplicationErrorCode, why string)
}

// newCarrier returns the carrier of a QUIC connection to slot in the
// transport's mode.
func (t *Transport) newCarrier(slot bucket.Slot, conn *quic.Conn) carrier {
	if t.mode == ModeStream {
		return &streamCarrier{conn: conn, out: newStreamSender(slot, t.queue, t.log)}
	}
	return newDatagramCarrier(conn)
}

// datagramCarrier sends each packet as one QUIC datagram (RFC 9221),
// unreliably: ModeDatagram. quic-go's SendDatagram blocks while the
// connection's queue of 32 datagrams is full: under congestion, or for as
// long as a member stops acknowledging (one stuck, or hostile). The
// session's goroutine therefore never calls it: send queues a copy for the
// link's writer goroutine and drops the packet, as an unreliable carrier
// may, when datagramQueue packets already wait; one stuck link then costs
// its own packets, not every member's frames.
type datagramCarrier struct {
	conn *quic.Conn
	out  chan []byte
	free chan []byte // buffers the writer is done with (SendDatagram copies)
	// failed holds the writer's last error for the next send to return.
	failed atomic.Pointer[error]
}

// datagramQueue is how many packets wait for a link's writer: a burst the
// sender makes before the writer runs (QUIC holds 32 more behind it).
const datagramQueue = 64

func newDatagramCarrier(conn *quic.Conn) *datagramCarrier {
	return &datagramCarrier{conn: conn, out: make(chan []byte, datagramQueue), free: make(chan []byte, datagramQueue)}
}

func (c *datagramCarrier) send(packet []byte) (bool, error) {
	if err := c.failed.Swap(nil); err != nil {
		return false, *err
	}
	if ctx := c.conn.Context(); ctx.Err() != nil {
		return false, context.Cause(ctx)
	}
	var buf []byte
	select {
	case buf = <-c.free:
	default:
	}
	select {
	case c.out <- append(buf[:0], packet...):
		return true, nil
	default:
		return false, nil
	}
}

func (c *datagramCarrier) start(t *Transport, slot bucket.Slot, l *link) {
	t.wg.Go(func() { t.readLoop(slot, l) })
	t.wg.Go(func() { c.write(t.ctx) })
}

// write hands the queued packets to QUIC until the transport or the
// connection ends.
func (c *datagramCarrier) write(ctx context.Context) {
	closed := c.conn.Context().Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-closed:
			return
		case p := <-c.out:
			if err := c.conn.SendDatagram(p); err != nil {
				var tooLarge *quic.DatagramTooLargeError
				if errors.As(err, &tooLarge) {
					err = fmt.Errorf("%w: %d bytes, the path takes %d", ErrDatagramTooLarge, len(p), tooLarge.MaxDatagramPayloadSize)
				}
				c.failed.Store(&err)
			}
			select {
			case c.free <- p:
			default:
			}
		}
	}
}

func (c *datagramCarrier) alive() bool { return c.conn.Context().Err() == nil }

func (c *datagramCarrier) close(code quic.ApplicationErrorCode, why string) {
	_ = c.conn.CloseWithError(code, why)
}

// streamCarrier sends the packets as length-prefixed frames on a stream,
// reliably and in order: on QUIC unidirectional streams of conn
// (ModeStream), or on relayed, a libp2p stream through a relay (either
// mode). Send only queues (streamSender); a goroutine writes.
type streamCarrier struct {
	conn    *quic.Conn     // nil for a relayed link
	relayed network.Stream // nil on a direct link
	out     *streamSender
}

func (c *streamCarrier) send(packet []byte) (bool, error) { return c.out.enqueue(packet) }

func (c *streamCarrier) start(t *Transport, slot bucket.Slot, l *link) {
	if c.relayed != nil {
		t.wg.Go(func() { c.out.runRelayed(t.ctx, c.relayed) })
		t.wg.Go(func() { t.relayReadLoop(slot, l, c) })
		return
	}
	t.wg.Go(func() { c.out.run(c.conn) })
	t.wg.Go(func() { t.streamReadLoop(slot, l) })
}

func (c *streamCarrier) alive() bool {
	if c.relayed != nil {
		return c.out.failed() == nil
	}
	return c.conn.Context().Err() == nil
}

func (c *streamCarrier) close(code quic.ApplicationErrorCode, why string) {
	if c.relayed != nil {
		_ = c.relayed.Reset()
		return
	}
	_ = c.conn.CloseWithError(code, why)
}

// link is the connection to one member and the carrier of its packets.
type link struct {
	conn    *quic.Conn     // nil for a relayed link
	relayed network.Stream // the stream through a relay (relaylink.go); nil otherwise
	carrier
	dialled bool        // a direct connection we dialled
	heard   atomic.Bool // a packet arrived on it (connectionLost)
}
