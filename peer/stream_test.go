package peer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	"github.com/quic-go/quic-go"

	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// TestSessionsOverQUICStreamsBadProfile: four members play 300 frames over
// QUIC streams on loopback impaired by the bad profile, step identical
// buckets, and every packet sent arrives: QUIC repaired every loss.
func TestSessionsOverQUICStreamsBadProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("a 300-frame real-time session")
	}
	// A stream delays, it does not lose: a long drop timeout.
	sessions, trs := playOverBad(t, ModeStream, 300, 20*time.Millisecond, time.Minute, 60*time.Second)

	// Reliable: once the last retransmissions are in, every member has
	// received every packet each other member queued for it, byte for byte.
	missing := ""
	arrived := func() bool {
		missing = ""
		for i, a := range trs {
			sa := a.Stats()
			if sa.Mode != ModeStream {
				t.Fatalf("member %d: mode %v", i, sa.Mode)
			}
			for j, b := range trs {
				if i == j {
					continue
				}
				sent, got := sa.Members[sessions[j].Self], b.Stats().Members[sessions[i].Self]
				if sent.SendDropped != 0 || got.Dropped != 0 {
					t.Fatalf("member %d to %d: %d dropped from the queue, %d from Incoming", i, j, sent.SendDropped, got.Dropped)
				}
				if sent.DatagramsSent != got.DatagramsReceived || sent.BytesSent != got.BytesReceived {
					missing = slotName(i) + " to " + slotName(j)
				}
			}
		}
		return missing == ""
	}
	if !until(20*time.Second, arrived) {
		t.Fatalf("%s: packets sent never arrived", missing)
	}
}

// Members in different modes cannot connect: both NewTransports fail at
// once with ErrModeMismatch naming the other member, whichever of them
// dials; the same members in the same mode then connect.
func TestTransportModeMismatch(t *testing.T) {
	for _, dialler := range []Mode{ModeDatagram, ModeStream} {
		t.Run("dialler "+dialler.String(), func(t *testing.T) {
			hosts := newHosts(t, 2)
			sessions := mustJoin(t, hosts)
			// Slot 0, the lower peer ID, dials.
			modes := []Mode{dialler, dialler.other()}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var logs [2]syncBuffer
			errs := make([]error, 2)
			start := time.Now()
			var wg sync.WaitGroup
			for i, h := range hosts {
				wg.Go(func() {
					cfg := TransportConfig{Mode: modes[sessions[i].Self], Logger: slog.New(slog.NewTextHandler(&logs[i], nil))}
					tr, err := NewTransport(ctx, h, sessions[i], cfg)
					if err == nil {
						tr.Close()
					}
					errs[i] = err
				})
			}
			wg.Wait()
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the mismatch took %v to notice", took)
			}
			for i, err := range errs {
				other := sessions[i].Members[1-sessions[i].Self]
				if !errors.Is(err, ErrModeMismatch) {
					t.Fatalf("member %d (%v): NewTransport = %v, want ErrModeMismatch", i, modes[sessions[i].Self], err)
				}
				t.Logf("member %d: %v", i, err)
				errorContains(t, slotName(i), err, other.String(), "stream transport")
				if !bytes.Contains([]byte(logs[i].String()), []byte("transport mode mismatch")) {
					t.Errorf("member %d logged nothing about the mismatch:\n%s", i, logs[i].String())
				}
			}

			// The sockets are free again, and in one mode the members connect.
			trs := openTransports(t, hosts, sessions, func(int) TransportConfig { return TransportConfig{Mode: ModeStream, Logger: testLogger()} })
			if err := trs[0].Send(sessions[1].Self, []byte("same mode")); err != nil {
				t.Fatal(err)
			}
			if got := collect(trs[1].Incoming(), 1, 2*time.Second); len(got) != 1 || string(got[0].Data) != "same mode" {
				t.Fatalf("received %v", got)
			}
		})
	}
}

// A member whose stream frames arrive cut anywhere still delivers them
// whole and in order; a frame longer than wire.MaxDatagramSize closes its
// connection with CodeBadFrame.
func TestStreamFramesFromRawMember(t *testing.T) {
	h := newHosts(t, 1)[0]
	// The raw member needs the lower peer ID, so that it dials.
	var ident *libp2ptls.Identity
	var id libp2ppeer.ID
	for ident == nil {
		key, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ = libp2ppeer.IDFromPrivateKey(key); id < h.ID() {
			if ident, err = libp2ptls.NewIdentity(key); err != nil {
				t.Fatal(err)
			}
		}
	}
	qt := rawQUIC(t)
	sess := &Agreement{
		ID: "raw", Members: []libp2ppeer.ID{id, h.ID()}, Self: 1, Start: time.Now(),
		Endpoints: []netip.AddrPort{qt.Conn.LocalAddr().(*net.UDPAddr).AddrPort(), h.DatagramAddr()},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opened := openTransport(ctx, h, sess, TransportConfig{Mode: ModeStream, Logger: testLogger()})
	conf := clientTLS(ident, h.ID())
	conf.NextProtos = []string{ALPNStream}
	var conn *quic.Conn
	var err error
	until(time.Minute, func() bool { // until the transport listens, or ctx ends
		conn, err = qt.Dial(ctx, net.UDPAddrFromAddrPort(h.DatagramAddr()), conf, ModeStream.quicConfig())
		return err == nil || ctx.Err() != nil
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	r := <-opened
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.tr.Close()

	// The frames, written in pieces of 1, 2, 3, ... bytes.
	var want [][]byte
	var stream []byte
	for i := range 40 {
		p := bytes.Repeat([]byte{byte(i)}, []int{0, 1, 2, 700, wire.MaxDatagramSize}[i%5])
		want = append(want, p)
		stream = appendFrame(stream, p)
	}
	str, err := conn.OpenUniStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; len(stream) > 0; k++ {
		n := min(k, len(stream))
		if _, err := str.Write(stream[:n]); err != nil {
			t.Fatal(err)
		}
		stream = stream[n:]
	}
	got := collect(r.tr.Incoming(), len(want), 2*time.Second)
	if len(got) != len(want) {
		t.Fatalf("received %d packets, want %d", len(got), len(want))
	}
	for i, in := range got {
		if in.From != 0 || !bytes.Equal(in.Data, want[i]) {
			t.Fatalf("packet %d: from %d, %d bytes, want from 0, %d bytes as sent", i, in.From, len(in.Data), len(want[i]))
		}
	}

	// The transport's own stream reaches the raw member, framed.
	if err := r.tr.Send(0, []byte("back")); err != nil {
		t.Fatal(err)
	}
	back, err := conn.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := readFrame(bufio.NewReader(back)); err != nil || string(p) != "back" {
		t.Fatalf("raw member read %q, %v", p, err)
	}

	// A frame too long for any lockstep packet.
	if _, err := str.Write([]byte{0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-conn.Context().Done():
	case <-ctx.Done():
		t.Fatal("the transport kept the connection of a malformed stream")
	}
	var appErr *quic.ApplicationError
	if cause := context.Cause(conn.Context()); !errors.As(cause, &appErr) || appErr.ErrorCode != CodeBadFrame || !appErr.Remote {
		t.Fatalf("connection ended with %v, want a remote application error %d", cause, CodeBadFrame)
	}
}

// A full stream queue drops what does not fit and takes packets again once
// QUIC has taken the queue.
func TestStreamSenderQueueBound(t *testing.T) {
	s := newStreamSender(1, 3*(streamFrameHeader+100), slog.New(slog.DiscardHandler))
	for i := range 4 {
		ok, err := s.enqueue(make([]byte, 100))
		if err != nil || ok != (i < 3) {
			t.Fatalf("packet %d: queued %v, %v; want queued %v", i, ok, err, i < 3)
		}
	}
	if s.dropped != 1 || s.queued != 3*(streamFrameHeader+100) {
		t.Fatalf("dropped %d, queued %d bytes", s.dropped, s.queued)
	}
	// What run does with one batch.
	s.mu.Lock()
	s.queued -= len(s.pending)
	s.pending = s.pending[:0]
	s.mu.Unlock()
	if ok, err := s.enqueue(make([]byte, 100)); !ok || err != nil || s.dropped != 0 {
		t.Fatalf("after the write: queued %v, %v, dropped %d", ok, err, s.dropped)
	}
	s.fail(io.ErrClosedPipe)
	if _, err := s.enqueue([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("after a failure: %v", err)
	}
}

// FuzzStreamFrames feeds arbitrary bytes to the stream frame reader: it
// must never panic, never return a packet over wire.MaxDatagramSize, and
// the packets it returns, framed again, must be the bytes it consumed.
func FuzzStreamFrames(f *testing.F) {
	var seed []byte
	for _, n := range []int{0, 1, 37, wire.MaxDatagramSize} {
		seed = appendFrame(seed, make([]byte, n))
		f.Add(slices.Clone(seed))
	}
	f.Add([]byte{0xff, 0xff, 1})
	f.Add([]byte{0x00})
	f.Add([]byte{0x00, 0x05, 1, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		var again []byte
		for {
			p, err := readFrame(r)
			if err != nil {
				switch {
				case errors.Is(err, io.EOF):
					if !bytes.Equal(again, data) {
						t.Fatalf("clean end after %d of %d bytes", len(again), len(data))
					}
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errFrameTooLarge):
					if !bytes.HasPrefix(data, again) || len(again) == len(data) {
						t.Fatalf("%v after %d of %d bytes", err, len(again), len(data))
					}
				default:
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(p) > wire.MaxDatagramSize {
				t.Fatalf("a packet of %d bytes", len(p))
			}
			again = appendFrame(again, p)
		}
	})
}

// Cutting a valid stream anywhere but between frames is an unexpected end.
func TestReadFrameTruncated(t *testing.T) {
	var stream []byte
	bounds := map[int]bool{0: true}
	for _, n := range []int{3, 0, 5} {
		stream = appendFrame(stream, bytes.Repeat([]byte{byte(n)}, n))
		bounds[len(stream)] = true
	}
	for cut := 0; cut <= len(stream); cut++ {
		r := bufio.NewReader(bytes.NewReader(stream[:cut]))
		var err error
		for err == nil {
			_, err = readFrame(r)
		}
		if want := io.ErrUnexpectedEOF; bounds[cut] {
			if err != io.EOF {
				t.Errorf("cut at %d (a frame boundary): %v, want EOF", cut, err)
			}
		} else if !errors.Is(err, want) {
			t.Errorf("cut at %d: %v, want %v", cut, err, want)
		}
	}
}
