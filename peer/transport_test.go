package peer

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/quic-go/quic-go"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
)

// payload makes a datagram that names its sender and number.
func payload(from bucket.Slot, seq, size int) []byte {
	b := make([]byte, size)
	b[0] = byte(from)
	binary.BigEndian.PutUint32(b[1:], uint32(seq))
	return b
}

// collect reads from in until it has want datagrams or nothing arrives for
// quiet.
func collect(in <-chan lockstep.Inbound, want int, quiet time.Duration) []lockstep.Inbound {
	var got []lockstep.Inbound
	for len(got) < want {
		select {
		case d, ok := <-in:
			if !ok {
				return got
			}
			got = append(got, d)
		case <-time.After(quiet):
			return got
		}
	}
	return got
}

func TestTransportThreeMembers(t *testing.T) {
	hosts := newHosts(t, 3)
	sessions := mustJoin(t, hosts)
	trs := openTransports(t, hosts, sessions, nil)

	const perPair = 20
	for i, tr := range trs {
		self := sessions[i].Self
		for to := range bucket.Slot(3) {
			if to == self {
				continue
			}
			for seq := range perPair {
				if err := tr.Send(to, payload(self, seq, 100+seq)); err != nil {
					t.Fatalf("member %d: Send(%d): %v", i, to, err)
				}
			}
		}
	}
	for i, tr := range trs {
		got := collect(tr.Incoming(), 2*perPair, 2*time.Second)
		if len(got) != 2*perPair {
			t.Fatalf("member %d received %d datagrams, want %d", i, len(got), 2*perPair)
		}
		for _, d := range got {
			if d.From == sessions[i].Self || bucket.Slot(d.Data[0]) != d.From {
				t.Fatalf("member %d: datagram from slot %d says it is from %d", i, d.From, d.Data[0])
			}
			if seq := int(binary.BigEndian.Uint32(d.Data[1:])); len(d.Data) != 100+seq {
				t.Fatalf("member %d: datagram %d has %d bytes", i, seq, len(d.Data))
			}
		}
		st := tr.Stats()
		for slot, m := range st.Members {
			if bucket.Slot(slot) == sessions[i].Self {
				continue
			}
			if !m.Connected || m.DatagramsSent != perPair || m.DatagramsReceived != perPair || m.Dropped != 0 {
				t.Errorf("member %d: stats for slot %d: %+v", i, slot, m)
			}
		}
	}

	// The size limit: 1200 bytes pass, 1201 are refused.
	a, b := trs[0], trs[1]
	to := sessions[1].Self
	if err := a.Send(to, make([]byte, wire.MaxDatagramSize)); err != nil {
		t.Fatalf("Send(1200 bytes): %v", err)
	}
	if got := collect(b.Incoming(), 1, 2*time.Second); len(got) != 1 || len(got[0].Data) != wire.MaxDatagramSize {
		t.Fatalf("1200-byte datagram did not arrive whole")
	}
	if err := a.Send(to, make([]byte, wire.MaxDatagramSize+1)); !errors.Is(err, ErrDatagramTooLarge) {
		t.Fatalf("Send(1201 bytes) = %v, want ErrDatagramTooLarge", err)
	}
	if err := a.Send(sessions[0].Self, []byte{1}); !errors.Is(err, ErrNoSuchMember) {
		t.Fatalf("Send to self = %v, want ErrNoSuchMember", err)
	}
	if err := a.Send(7, []byte{1}); !errors.Is(err, ErrNoSuchMember) {
		t.Fatalf("Send to slot 7 = %v, want ErrNoSuchMember", err)
	}
}

// newIdentity returns a libp2p TLS identity of a new key: a stranger's.
func newIdentity(t *testing.T) *libp2ptls.Identity {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ident, err := libp2ptls.NewIdentity(key)
	if err != nil {
		t.Fatal(err)
	}
	return ident
}

// A stranger with a valid libp2p identity of its own who dials a member's
// datagram endpoint under the right ALPN is refused with CodeNotMember, and
// nothing it sends reaches Incoming.
func TestTransportRefusesStranger(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	trs := openTransports(t, hosts, sessions, nil)

	ident, qt := newIdentity(t), rawQUIC(t)

	for i, h := range hosts {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		conn, err := qt.Dial(ctx, net.UDPAddrFromAddrPort(h.DatagramAddr()), clientTLS(ident, h.ID()), quicConfig())
		if err != nil {
			cancel()
			t.Fatalf("stranger's dial to member %d: %v (the handshake itself should succeed)", i, err)
		}
		for seq := range 50 {
			if conn.SendDatagram(payload(0, seq, 64)) != nil {
				break
			}
		}
		select {
		case <-conn.Context().Done():
		case <-ctx.Done():
			t.Fatalf("member %d did not close the stranger's connection", i)
		}
		cancel()
		var appErr *quic.ApplicationError
		if cause := context.Cause(conn.Context()); !errors.As(cause, &appErr) || appErr.ErrorCode != CodeNotMember || !appErr.Remote {
			t.Fatalf("stranger's connection to member %d ended with %v, want a remote application error %d", i, cause, CodeNotMember)
		}
		if got := trs[i].Stats().Refused; got != 1 {
			t.Errorf("member %d: Refused = %d, want 1", i, got)
		}
	}
	for i, tr := range trs {
		if got := collect(tr.Incoming(), 1, 300*time.Millisecond); len(got) != 0 {
			t.Fatalf("member %d received %d datagrams from the stranger", i, len(got))
		}
		if st := tr.Stats(); !st.Members[1-sessions[i].Self].Connected {
			t.Errorf("member %d lost its real peer", i)
		}
	}

	// The members still talk to each other.
	if err := trs[0].Send(sessions[1].Self, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	if got := collect(trs[1].Incoming(), 1, 2*time.Second); len(got) != 1 || string(got[0].Data) != "still here" {
		t.Fatalf("members no longer connected: %v", got)
	}
}

// A client that does not offer a phalanx ALPN never reaches the datagram
// channel: on the socket it shares with libp2p, an unknown ALPN fails the
// handshake and libp2p's own ALPN reaches libp2p.
func TestTransportRequiresALPN(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	trs := openTransports(t, hosts, sessions, nil)

	ident, qt := newIdentity(t), rawQUIC(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conf := clientTLS(ident, hosts[0].ID())
	conf.NextProtos = []string{"not-phalanx"}
	if conn, err := qt.Dial(ctx, net.UDPAddrFromAddrPort(hosts[0].DatagramAddr()), conf, quicConfig()); err == nil {
		conn.CloseWithError(0, "")
		t.Fatal("dial under an unknown ALPN succeeded")
	}
	conf = clientTLS(ident, hosts[0].ID())
	conf.NextProtos = []string{"libp2p"}
	if conn, err := qt.Dial(ctx, net.UDPAddrFromAddrPort(hosts[0].DatagramAddr()), conf, quicConfig()); err == nil {
		if p := conn.ConnectionState().TLS.NegotiatedProtocol; p != "libp2p" {
			t.Errorf("dial under the libp2p ALPN negotiated %q", p)
		}
		conn.CloseWithError(0, "")
	}
	if st := trs[0].Stats(); st.Refused != 0 {
		t.Errorf("the datagram channel saw the connections: %+v", st)
	}
	if got := collect(trs[0].Incoming(), 1, 200*time.Millisecond); len(got) != 0 {
		t.Fatalf("received %v", got)
	}
}

// One socket: the datagram channel listens on the host's libp2p QUIC
// port, and dials from it.
func TestTransportSharesLibp2pSocket(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	trs := openTransports(t, hosts, sessions, nil)
	for i, h := range hosts {
		var ports []string
		for _, a := range h.LibP2P().Network().ListenAddresses() {
			p, _ := a.ValueForProtocol(ma.P_UDP)
			ports = append(ports, p)
		}
		want := strconv.Itoa(int(h.DatagramAddr().Port()))
		if len(ports) != 1 || ports[0] != want {
			t.Errorf("host %d: libp2p listens on UDP ports %v, the datagram channel on %s", i, ports, want)
		}
		if got := trs[i].LocalAddr().String(); got != h.DatagramAddr().String() {
			t.Errorf("host %d: transport on %s, want %s", i, got, h.DatagramAddr())
		}
	}
	// The dialler's connection leaves from its datagram address.
	lower := 0
	if sessions[0].Self == 1 {
		lower = 1
	}
	l := trs[lower].links[1-sessions[lower].Self].Load()
	if l == nil {
		t.Fatal("not connected")
	}
	if got := l.conn.LocalAddr().String(); got != hosts[lower].DatagramAddr().String() {
		t.Errorf("the dialler's connection leaves from %s, want %s", got, hosts[lower].DatagramAddr())
	}
}

// Over an impaired network the share of datagrams lost is about the
// profile's.
func TestTransportImpairedLoss(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	profile := netsim.Profile{Name: "lossy", Phases: []netsim.Phase{{
		Duration:   time.Minute,
		Conditions: netsim.Conditions{Latency: 5 * time.Millisecond, Jitter: time.Millisecond, Loss: 250_000}, // 25%
	}}}
	trs := openTransports(t, hosts, sessions, func(int) TransportConfig {
		return TransportConfig{Profile: &profile, Logger: testLogger()}
	})

	const n = 400
	a, b := trs[0], trs[1]
	for seq := range n {
		// 700 bytes: one datagram per QUIC packet, so packet loss is datagram loss.
		if err := a.Send(b.Agreement().Self, payload(a.Agreement().Self, seq, 700)); err != nil {
			t.Fatalf("Send %d: %v", seq, err)
		}
		pause(4 * time.Millisecond) // a QUIC packet each, not a burst
	}
	got := collect(b.Incoming(), n, 500*time.Millisecond)
	// Send drops, never waits for, what QUIC cannot take yet (its
	// congestion window on a path that loses a quarter is small): the
	// share is of the datagrams it handed on.
	dropped := a.Stats().Members[b.Agreement().Self].SendDropped
	share := float64(len(got)) / float64(n-dropped)
	t.Logf("%d of %d handed on arrived (%.1f%%), %d dropped at the sender; impairment %+v", len(got), n-dropped, 100*share, dropped, *a.Stats().Impairment)
	if dropped > n/2 || share < 0.65 || share > 0.85 {
		t.Fatalf("%.1f%% of %d arrived, want about 75%%", 100*share, n-dropped)
	}
	if st := a.Stats().Impairment; st == nil || st.Lost == 0 {
		t.Fatalf("impairment stats %+v: nothing lost", st)
	}
}

// Close stops everything the transports and hosts started, in either mode.
func TestTransportCloseLeavesNoGoroutines(t *testing.T) {
	for _, mode := range []Mode{ModeDatagram, ModeStream} {
		t.Run(mode.String(), func(t *testing.T) { closeLeavesNoGoroutines(t, mode) })
	}
}

func closeLeavesNoGoroutines(t *testing.T, mode Mode) {
	before := runtime.NumGoroutine()
	func() {
		hosts := make([]*Host, 3)
		for i := range hosts {
			h, err := NewHost(context.Background(), HostConfig{Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			hosts[i] = h
		}
		defer func() {
			for _, h := range hosts {
				if err := h.Close(); err != nil {
					t.Errorf("host Close: %v", err)
				}
			}
		}()
		sessions, errs := joinAll(t, hosts, func(int) SessionParams { return testParams(3) })
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		profile, _ := netsim.Named("lan")
		var logs [3]syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		trs, errs := eachAtOnce(3, func(i int) (*Transport, error) {
			return NewTransport(ctx, hosts[i], sessions[i], TransportConfig{Mode: mode, Profile: &profile, PacketLog: &logs[i]})
		})
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		for i, tr := range trs {
			for to := range bucket.Slot(3) {
				if to != sessions[i].Self {
					// A stream must take every packet; a datagram may be lost.
					if err := tr.Send(to, []byte("x")); err != nil && mode == ModeStream {
						t.Fatal(err)
					}
				}
			}
		}
		for i, tr := range trs {
			if got := collect(tr.Incoming(), 2, 2*time.Second); len(got) != 2 && mode == ModeStream {
				t.Fatalf("member %d received %d packets, want 2", i, len(got))
			}
		}
		for i, tr := range trs {
			if err := tr.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if _, ok := <-tr.Incoming(); ok {
				t.Error("Incoming still open after Close")
			}
			if err := tr.Send((tr.Agreement().Self+1)%3, []byte("x")); !errors.Is(err, ErrClosed) {
				t.Errorf("Send after Close = %v, want ErrClosed", err)
			}
			if log := logs[i].String(); mode == ModeStream && (!strings.Contains(log, "stream transport") || strings.Count(log, " in  ") != 2) {
				t.Errorf("member %d's packet log:\n%s", i, log)
			}
		}
		if mode == ModeDatagram {
			// The socket goes back to the host: a second transport can open.
			tr, err := NewTransport(ctx, hosts[0], &Agreement{ID: "solo", Members: sessions[0].Members[sessions[0].Self : sessions[0].Self+1], Endpoints: []netip.AddrPort{hosts[0].DatagramAddr()}}, TransportConfig{})
			if err != nil {
				t.Fatalf("second transport on the same host: %v", err)
			}
			tr.Close()
		}
	}()
	settleGoroutines(t, before)
	t.Logf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

func TestPacketLogAndSilenceWarning(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	var logs [2]syncBuffer
	var records syncBuffer
	logger := slog.New(slog.NewTextHandler(&records, nil))
	trs := openTransports(t, hosts, sessions, func(i int) TransportConfig {
		return TransportConfig{PacketLog: &logs[i], Logger: logger, SilenceWarning: 200 * time.Millisecond}
	})
	a, b := trs[0], trs[1]

	// Nothing is sent: after the start and the limit, a warning, on both
	// (the receiver must have warned too before anything is sent, or it
	// has no silence to recover from: their monitors tick at their own
	// moments).
	waitFor(t, 10*time.Second, "a silence warning on both", func() bool { return a.Stats().Silences > 0 && b.Stats().Silences > 0 })
	if !strings.Contains(records.String(), "nothing received from any member") {
		t.Fatalf("log lacks the warning:\n%s", records.String())
	}

	// A real lockstep packet, logged with its seal and commands on both sides.
	pkt := wire.Packet{Session: sessions[0].Tag(), From: a.Agreement().Self, Number: 9, Seal: 41,
		Commands: []wire.Command{{Frame: 40, Payload: []byte("move")}, {Frame: 41, Payload: []byte("stop")}}}
	data, err := pkt.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := a.Send(b.Agreement().Self, data); err != nil {
			t.Fatal(err)
		}
		pause(10 * time.Millisecond)
	}
	if err := a.Send(b.Agreement().Self, []byte("junk")); err != nil {
		t.Fatal(err)
	}
	if got := collect(b.Incoming(), 3, 2*time.Second); len(got) != 3 {
		t.Fatalf("received %d datagrams, want 3", len(got))
	}
	if !until(10*time.Second, func() bool { return strings.Contains(records.String(), "datagrams arriving again") }) {
		t.Fatalf("no recovery message:\n%s", records.String())
	}
	a.Close()
	b.Close()

	out, in := logs[0].String(), logs[1].String()
	t.Logf("sender's log:\n%s\nreceiver's log:\n%s", out, in)
	wantOut := fmt.Sprintf(" out %3d %4d seal=41 cmds=2 n=9", b.Agreement().Self, len(data))
	wantIn := fmt.Sprintf(" in  %3d %4d seal=41 cmds=2 n=9", a.Agreement().Self, len(data))
	if !strings.HasPrefix(out, "# phalanx packet log") || !strings.Contains(out, wantOut) || !strings.Contains(out, "unparsed") {
		t.Errorf("sender's log lacks %q", wantOut)
	}
	if !strings.Contains(in, wantIn) || !strings.Contains(in, " dt=") {
		t.Errorf("receiver's log lacks %q or a dt", wantIn)
	}
	if lines := strings.Count(in, "\n"); lines != 4 {
		t.Errorf("receiver's log has %d lines, want a header and 3 datagrams", lines)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Without the other member's transport, NewTransport gives up when ctx
// ends, names the member, and leaves the socket free.
func TestTransportTimeout(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := NewTransport(ctx, hosts[0], sessions[0], TransportConfig{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NewTransport = %v, want DeadlineExceeded", err)
	}
	errorContains(t, "member 0", err, hosts[1].ID().String())
	trs := openTransports(t, hosts, sessions, nil)
	if err := trs[1].Send(sessions[0].Self, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if got := collect(trs[0].Incoming(), 1, 2*time.Second); len(got) != 1 {
		t.Fatal("nothing arrived after the retry")
	}
	if _, err := NewTransport(ctx, hosts[0], sessions[0], TransportConfig{}); !errors.Is(err, ErrTransportBusy) {
		t.Fatalf("second transport on a busy host: %v, want ErrTransportBusy", err)
	}
	if _, err := NewTransport(ctx, hosts[0], sessions[1], TransportConfig{}); !errors.Is(err, ErrInvalidSession) {
		t.Fatalf("transport for another member's session: %v, want ErrInvalidSession", err)
	}
}

// A member that stops acknowledging must not hold up Send: QUIC's own
// datagram queue then fills and its SendDatagram waits, but the writer
// goroutine waits for it, and Send drops what its queue cannot hold.
// The receiver here plays fair for 8 s, then loses every packet it sends,
// its acknowledgements included.
func TestSendNeverWaitsForAStuckMember(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	stuck := netsim.Profile{Name: "stuck", Phases: []netsim.Phase{
		{Duration: 8 * time.Second},
		{Duration: time.Hour, Conditions: netsim.Conditions{Loss: 1_000_000}},
	}}
	trs := openTransports(t, hosts, sessions, func(i int) TransportConfig {
		c := TransportConfig{Logger: testLogger()}
		if i == 1 {
			c.Profile = &stuck
		}
		return c
	})
	a, b := trs[0], trs[1]
	to := b.Agreement().Self
	seq := 0
	// Until the receiver's acknowledgements are lost.
	waitFor(t, time.Minute, "the receiver losing its packets", func() bool {
		if err := a.Send(to, payload(a.Agreement().Self, seq, 100)); err != nil {
			t.Fatalf("Send %d: %v", seq, err)
		}
		seq++
		pause(20 * time.Millisecond)
		return b.Stats().Impairment.Lost > 0
	})
	// Far more than QUIC's congestion window and both queues hold.
	for range 2000 {
		if err := a.Send(to, payload(a.Agreement().Self, seq, 1000)); err != nil {
			t.Fatalf("Send %d to a member that stopped acknowledging: %v", seq, err)
		}
		seq++
	}
	if st := a.Stats().Members[to]; st.SendDropped == 0 {
		t.Fatalf("2,000 datagrams to a member that stopped acknowledging, none dropped: %+v", st)
	}
}
