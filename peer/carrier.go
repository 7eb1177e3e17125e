package peer

import (
	"errors"
	"fmt"

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
	return datagramCarrier{conn}
}

// datagramCarrier sends each packet as one QUIC datagram (RFC 9221),
// unreliably: ModeDatagram.
type datagramCarrier struct{ conn *quic.Conn }

func (c datagramCarrier) send(packet []byte) (bool, error) {
	if err := c.conn.SendDatagram(packet); err != nil {
		var tooLarge *quic.DatagramTooLargeError
		if errors.As(err, &tooLarge) {
			return false, fmt.Errorf("%w: %d bytes, the path takes %d", ErrDatagramTooLarge, len(packet), tooLarge.MaxDatagramPayloadSize)
		}
		return false, err
	}
	return true, nil
}

func (c datagramCarrier) start(t *Transport, slot bucket.Slot, _ *link) {
	t.wg.Go(func() { t.readLoop(slot, c.conn) })
}

func (c datagramCarrier) alive() bool { return c.conn.Context().Err() == nil }

func (c datagramCarrier) close(code quic.ApplicationErrorCode, why string) {
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
	t.wg.Go(func() { t.streamReadLoop(slot, c.conn) })
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
