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

// A dialler whose handshake ended but whose member never took the
// connection (the member's side timed out: here the member's socket and
// every connection on it vanish without a word) dials again once the
// connection ends, and the member's new socket, the same port with the
// same stateless reset key, ends the old connection at the dialler's next
// datagram and takes the new one. Without the second
// dial the member would wait for a dialler that believes it is connected.
func TestDiallerDialsAgainAnUntakenConnection(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	lower, higher := dialOrder(sessions)
	var key quic.StatelessResetKey
	rand.Read(key[:])
	// The higher member's datagram channel, in a process that loses its
	// state: a QUIC transport of its own on a loopback port.
	listen := func(addr *net.UDPAddr) (vanish func(), ln *quic.Listener) {
		t.Helper()
		udp, err := net.ListenUDP("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		qt := &quic.Transport{Conn: udp, StatelessResetKey: &key}
		ln, err = qt.Listen(serverTLS(hosts[higher].ident, ALPN, ALPNStream, nil), quicConfig())
		if err != nil {
			t.Fatal(err)
		}
		vanish = func() { qt.Close(); udp.Close() }
		t.Cleanup(vanish)
		return vanish, ln
	}
	vanish, ln := listen(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	addr := ln.Addr().(*net.UDPAddr)

	sess := *sessions[lower]
	sess.Endpoints = slices.Clone(sess.Endpoints)
	sess.Endpoints[sessions[higher].Self] = addr.AddrPort()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opened := make(chan error, 1)
	var tr *Transport
	go func() {
		var err error
		tr, err = NewTransport(ctx, hosts[lower], &sess, TransportConfig{Logger: testLogger()})
		opened <- err
	}()
	if _, err := ln.Accept(ctx); err != nil {
		t.Fatalf("the dialler never dialled: %v", err)
	}
	if err := <-opened; err != nil {
		t.Fatalf("NewTransport: %v", err)
	}
	defer tr.Close()
	// The member loses its state: nothing tells the dialler.
	vanish()
	_, ln = listen(addr)
	// The dialler's next datagram meets the new socket, which knows no
	// such connection and answers with a stateless reset.
	if err := tr.Send(sessions[higher].Self, payload(sessions[lower].Self, 0, 64)); err != nil {
		t.Fatal(err)
	}
	second, err := ln.Accept(ctx)
	if err != nil {
		t.Fatalf("the dialler did not dial again after its connection ended untaken: %v", err)
	}
	defer second.CloseWithError(0, "")
	if !until(5*time.Second, func() bool { return tr.Stats().Members[sessions[higher].Self].Connected }) {
		t.Error("the dialler's new connection is not its link")
	}
}
