package peer

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/quic-go/quic-go"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Mode is how a [Transport] carries lockstep packets between two members.
// Every member of a session must use the same mode: each mode has its own
// ALPN, so a connection between members in different modes fails its
// handshake (see [ErrModeMismatch]).
type Mode uint8

const (
	// ModeDatagram carries each packet as one QUIC datagram (RFC 9221):
	// unreliable and unordered; the lockstep core repeats what is lost.
	// It is Phalanx's transport, and the zero value.
	ModeDatagram Mode = iota
	// ModeStream carries the packets to each member, framed, in order on
	// one unidirectional QUIC stream: reliable, with QUIC's
	// retransmissions and head-of-line blocking. It is the baseline the
	// datagrams are measured against, not a recommendation
	// (docs/network.md, "The stream baseline").
	ModeStream
)

// String returns "datagram" or "stream".
func (m Mode) String() string {
	switch m {
	case ModeDatagram:
		return "datagram"
	case ModeStream:
		return "stream"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// other returns the other mode.
func (m Mode) other() Mode {
	if m == ModeStream {
		return ModeDatagram
	}
	return ModeStream
}

// alpn returns the TLS application protocol of the mode's connections.
func (m Mode) alpn() string {
	if m == ModeStream {
		return ALPNStream
	}
	return ALPN
}

// quicConfig returns the QUIC configuration of the mode's connections: in
// ModeStream no datagrams, and one incoming unidirectional stream at a time.
func (m Mode) quicConfig() *quic.Config {
	c := quicConfig()
	if m == ModeStream {
		c.EnableDatagrams = false
		c.MaxIncomingUniStreams = 1
	}
	return c
}

// modeOfALPN returns the mode whose ALPN is the first of protos that is
// one, if any.
func modeOfALPN(protos []string) (Mode, bool) {
	for _, p := range protos {
		switch p {
		case ALPN:
			return ModeDatagram, true
		case ALPNStream:
			return ModeStream, true
		}
	}
	return 0, false
}

// DefaultStreamQueue is the bound of each member's send queue in
// ModeStream when TransportConfig.StreamQueue is 0: about a minute of a
// busy session's packets to one member.
const DefaultStreamQueue = 1 << 20

// streamFrameHeader is the size of a stream frame's length prefix.
const streamFrameHeader = 2

// errFrameTooLarge is a stream frame whose length prefix exceeds
// wire.MaxDatagramSize: the sender is broken or hostile.
var errFrameTooLarge = errors.New("peer: stream frame too large")

// appendFrame appends packet to b as one stream frame: its length as a
// 2-byte big-endian integer, then the packet. The packet is at most
// wire.MaxDatagramSize bytes.
func appendFrame(b, packet []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(packet)))
	return append(b, packet...)
}

// readFrame reads one stream frame from r and returns its packet, in a new
// slice. It returns io.EOF at a clean end between frames,
// io.ErrUnexpectedEOF within one, and an error wrapping errFrameTooLarge
// for a length over wire.MaxDatagramSize (the packet is not read).
func readFrame(r *bufio.Reader) ([]byte, error) {
	var h [streamFrameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(h[:]))
	if n > wire.MaxDatagramSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errFrameTooLarge, n, wire.MaxDatagramSize)
	}
	packet := make([]byte, n)
	if _, err := io.ReadFull(r, packet); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return packet, nil
}

// streamSender is the send side of one member's stream in ModeStream: Send
// appends frames to a bounded queue, and one goroutine (run) opens the
// stream and writes the queue to it, so that Send never waits for QUIC's
// flow or congestion control. Its methods are safe for concurrent use.
type streamSender struct {
	slot  bucket.Slot
	limit int // bound of queued
	log   *slog.Logger
	wake  chan struct{} // cap 1: pending is not empty
	done  chan struct{} // closed by the first fail

	mu      sync.Mutex
	pending []byte // frames run has not taken yet
	queued  int    // bytes in pending and in the write in progress
	dropped int    // packets dropped since the queue last had room
	err     error  // why the stream failed; set once
}

func newStreamSender(slot bucket.Slot, limit int, log *slog.Logger) *streamSender {
	return &streamSender{slot: slot, limit: limit, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// enqueue queues packet as one frame. It returns false if the queue has no
// room for it (the packet is dropped), and the stream's error once it has
// failed.
func (s *streamSender) enqueue(packet []byte) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	n := streamFrameHeader + len(packet)
	if s.queued+n > s.limit {
		if s.dropped == 0 {
			s.log.Warn("peer: stream queue full, dropping packets until QUIC takes them", "member", s.slot, "queued", s.queued)
		}
		s.dropped++
		return false, nil
	}
	if s.dropped > 0 {
		s.log.Info("peer: stream queue has room again", "member", s.slot, "dropped", s.dropped)
		s.dropped = 0
	}
	s.pending = appendFrame(s.pending, packet)
	s.queued += n
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true, nil
}

// fail records why the stream is unusable; the first reason stays.
func (s *streamSender) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
		close(s.done)
	}
	s.mu.Unlock()
}

// failed returns why the stream failed, or nil.
func (s *streamSender) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// run opens the stream on conn and writes what is queued, in order, until
// the connection ends or a write fails. It blocks while QUIC holds the
// writes back.
func (s *streamSender) run(conn *quic.Conn) {
	ctx := conn.Context()
	str, err := conn.OpenUniStreamSync(ctx)
	if err != nil {
		s.fail(fmt.Errorf("opening the stream: %w", err))
		return
	}
	s.write(ctx, str)
}

// write writes what is queued to w, in order, until ctx ends, a write
// fails or the stream fails otherwise (fail: its reader lost it, or a
// newer link replaced it).
func (s *streamSender) write(ctx context.Context, str io.Writer) {
	var batch []byte
	for {
		select {
		case <-ctx.Done():
			s.fail(context.Cause(ctx))
			return
		case <-s.done:
			return
		case <-s.wake:
		}
		s.mu.Lock()
		batch, s.pending = s.pending, batch[:0]
		s.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		_, err := str.Write(batch)
		s.mu.Lock()
		s.queued -= len(batch)
		s.mu.Unlock()
		if err != nil {
			s.fail(err)
			return
		}
	}
}

// streamReadLoop reads the streams a member opens on conn, one after the
// other, and delivers their frames in order.
func (t *Transport) streamReadLoop(slot bucket.Slot, l *link) {
	conn := l.conn
	for {
		str, err := conn.AcceptUniStream(t.ctx)
		if err != nil {
			t.connectionLost(slot, l, err)
			return
		}
		r := bufio.NewReaderSize(str, 4<<10)
		for {
			packet, err := readFrame(r)
			if errors.Is(err, errFrameTooLarge) {
				t.log.Warn("peer: member sent a malformed stream; closing its connection", "member", slot, "err", err)
				_ = conn.CloseWithError(CodeBadFrame, err.Error())
				return
			}
			if err != nil {
				// The member ended or reset its stream, or the connection
				// is gone: AcceptUniStream tells which.
				if !errors.Is(err, io.EOF) {
					t.log.Debug("peer: member's stream ended", "member", slot, "err", err)
				}
				break
			}
			t.hear(slot, l)
			if !t.deliver(slot, packet, true) {
				return
			}
		}
	}
}
