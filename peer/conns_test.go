package peer

import (
	"context"
	"crypto/rand"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// untakenMember stands in for the accepting member of a two-member session:
// its datagram channel on a QUIC transport of its own, on a loopback port,
// in a process that can lose its state (vanish) and listen again on the
// same port with the same stateless reset key. dial opens the dialler's
// transport towards it.
type untakenMember struct {
	t       *testing.T
	hosts   []*Host
	lower   int // the dialler's index
	higher  int
	mode    Mode
	key     quic.StatelessResetKey
	addr    *net.UDPAddr
	vanish  func()
	ln      *quic.Listener
	session *Agreement // the dialler's, with the member at addr
}

func newUntakenMember(t *testing.T, mode Mode) *untakenMember {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	u := &untakenMember{t: t, hosts: hosts, mode: mode}
	u.lower, u.higher = dialOrder(sessions)
	rand.Read(u.key[:])
	u.listen(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	u.addr = u.ln.Addr().(*net.UDPAddr)
	sess := *sessions[u.lower]
	sess.Endpoints = slices.Clone(sess.Endpoints)
	sess.Endpoints[1-sess.Self] = u.addr.AddrPort()
	u.session = &sess
	return u
}

// listen listens at addr as the member.
func (u *untakenMember) listen(addr *net.UDPAddr) {
	u.t.Helper()
	udp, err := net.ListenUDP("udp", addr)
	if err != nil {
		u.t.Fatal(err)
	}
	qt := &quic.Transport{Conn: udp, StatelessResetKey: &u.key}
	u.ln, err = qt.Listen(serverTLS(u.hosts[u.higher].ident, u.mode.alpn(), u.mode.other().alpn(), nil), u.mode.quicConfig())
	if err != nil {
		u.t.Fatal(err)
	}
	u.vanish = func() { qt.Close(); udp.Close() }
	u.t.Cleanup(u.vanish)
}

// accept waits up to limit for the dialler's next connection.
func (u *untakenMember) accept(limit time.Duration) (*quic.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return u.ln.Accept(ctx)
}

// dial opens the dialler's transport and returns it with the member's end
// of its first connection.
func (u *untakenMember) dial() (*Transport, *quic.Conn) {
	u.t.Helper()
	opened := make(chan error, 1)
	var tr *Transport
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var err error
		tr, err = NewTransport(ctx, u.hosts[u.lower], u.session, TransportConfig{Mode: u.mode, Logger: testLogger()})
		opened <- err
	}()
	conn, err := u.accept(30 * time.Second)
	if err != nil {
		u.t.Fatalf("the dialler never dialled: %v", err)
	}
	if err := <-opened; err != nil {
		u.t.Fatalf("NewTransport: %v", err)
	}
	u.t.Cleanup(func() { tr.Close() })
	return tr, conn
}

// gone loses the member's state without a word and listens again: the
// dialler's next datagram meets a socket that knows no such connection
// and answers with a stateless reset.
func (u *untakenMember) gone(tr *Transport) {
	u.t.Helper()
	u.vanish()
	u.listen(u.addr)
	if err := tr.Send(1-u.session.Self, payload(u.session.Self, 0, 64)); err != nil {
		u.t.Fatal(err)
	}
}

// A dialler whose handshake ended but whose member never took the
// connection (the member's side timed out: here the member's state
// vanishes before it sends anything) dials again once the connection
// ends, and the member takes the new one. Without the second dial the
// member would wait for a dialler that believes it is connected.
func TestDiallerDialsAgainAnUntakenConnection(t *testing.T) {
	u := newUntakenMember(t, ModeDatagram)
	tr, _ := u.dial()
	u.gone(tr)
	second, err := u.accept(30 * time.Second)
	if err != nil {
		t.Fatalf("the dialler did not dial again after its connection ended untaken: %v", err)
	}
	defer second.CloseWithError(0, "")
	if !until(5*time.Second, func() bool { return tr.Stats().Members[1-u.session.Self].Connected }) {
		t.Error("the dialler's new connection is not its link")
	}
}

// A connection the member took (something arrived on it), or that an
// application closed, the member or the dialler itself, is not dialled
// again when it ends: the member chose, or is gone.
func TestDiallerDoesNotDialAgainATakenConnection(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode Mode
		end  func(t *testing.T, u *untakenMember, tr *Transport, conn *quic.Conn)
	}{
		{"taken, then gone", ModeDatagram, func(t *testing.T, u *untakenMember, tr *Transport, conn *quic.Conn) {
			if err := conn.SendDatagram([]byte("took it")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-tr.Incoming():
			case <-time.After(10 * time.Second):
				t.Fatal("the member's datagram never arrived")
			}
			u.gone(tr)
		}},
		{"closed by the member", ModeDatagram, func(_ *testing.T, _ *untakenMember, _ *Transport, conn *quic.Conn) {
			_ = conn.CloseWithError(CodeClosed, "transport closed")
		}},
		{"closed by the dialler", ModeStream, func(t *testing.T, _ *untakenMember, _ *Transport, conn *quic.Conn) {
			// A frame longer than any packet: the dialler closes the
			// connection with CodeBadFrame.
			str, err := conn.OpenUniStream()
			if err != nil {
				t.Fatal(err)
			}
			_, _ = str.Write([]byte{0xff, 0xff})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newUntakenMember(t, tc.mode)
			tr, conn := u.dial()
			member := 1 - u.session.Self
			tc.end(t, u, tr, conn)
			if !until(30*time.Second, func() bool { return !tr.Stats().Members[member].Connected }) {
				t.Fatal("the dialler's connection never ended")
			}
			if again, err := u.accept(1500 * time.Millisecond); err == nil {
				again.CloseWithError(0, "")
				t.Fatal("the dialler dialled again")
			}
		})
	}
}

// A member that comes back (redial) is dialled at its new address each
// time, while the connection to its last address is still up.
func TestRedialDialsEveryComeback(t *testing.T) {
	u := newUntakenMember(t, ModeDatagram)
	tr, conn := u.dial()
	member := 1 - u.session.Self
	for i := range 3 {
		if err := conn.SendDatagram([]byte("here")); err != nil {
			t.Fatal(err)
		}
		if !until(10*time.Second, func() bool { return tr.Stats().Members[member].DatagramsReceived == uint64(i+1) }) {
			t.Fatalf("connection %d: nothing arrived", i)
		}
		if i == 2 {
			break
		}
		u.listen(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		tr.redial(member, u.ln.Addr().(*net.UDPAddr).AddrPort())
		var err error
		if conn, err = u.accept(30 * time.Second); err != nil {
			t.Fatalf("comeback %d: not dialled: %v", i+1, err)
		}
	}
}

// A member that takes our handshakes and never a connection (its state
// vanishes each time before it sends anything) is dialled again after
// waits that double, not as fast as the path carries handshakes; each
// ended connection's dial socket reference is given back as it ends, not
// held until Close; and a connection the member takes clears the wait.
func TestUntakenConnectionsAreDialledLessOften(t *testing.T) {
	u := newUntakenMember(t, ModeDatagram)
	tr, conn := u.dial()
	member := 1 - u.session.Self
	attached := func(prev *link) *link {
		t.Helper()
		var l *link
		if !until(10*time.Second, func() bool { l = tr.links[member].Load(); return l != prev && l != nil && l.alive() }) {
			t.Fatal("the dialler's new connection never became its link")
		}
		return l
	}
	l := attached(nil)
	const rounds = 6
	start := time.Now()
	for i := range rounds {
		u.gone(tr)
		var err error
		if conn, err = u.accept(30 * time.Second); err != nil {
			t.Fatalf("untaken connection %d: not dialled again: %v", i+1, err)
		}
		l = attached(l)
	}
	// Waits of 0, 50, 100, 200, 400 and 800 ms at least.
	if took, least := time.Since(start), 1500*time.Millisecond; took < least {
		t.Errorf("%d untaken connections were dialled again within %v; their waits add up to at least %v", rounds, took, least)
	}
	held := func() int { tr.mu.Lock(); defer tr.mu.Unlock(); return len(tr.releases) }
	if !until(10*time.Second, func() bool { return held() == 1 }) {
		t.Errorf("the dialler holds %d dial sockets' references after %d connections ended; want 1, the live one's", held(), rounds)
	}
	wait := func() time.Duration { tr.mu.Lock(); defer tr.mu.Unlock(); return tr.againWait[member] }
	if w := wait(); w != againMax {
		t.Errorf("after %d untaken connections the next dial waits %v; want %v", rounds, w, againMax)
	}
	if err := conn.SendDatagram([]byte("took it")); err != nil {
		t.Fatal(err)
	}
	if !until(10*time.Second, func() bool { return tr.Stats().Members[member].DatagramsReceived == 1 }) {
		t.Fatal("the member's datagram never arrived")
	}
	if w := wait(); w != 0 {
		t.Errorf("a connection the member took left a wait of %v before the next dial; want none", w)
	}
}
