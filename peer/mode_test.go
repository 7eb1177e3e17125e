package peer

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestTransportModeNotFromUnauthenticatedHello: a ClientHello that offers
// the other mode's ALPN, sent from a member's very address (its datagram
// socket) but by a stranger without the member's key, does not make the
// listening member give up on the session: the mode is judged only on a
// peer that proved its identity. After longer than the mismatch grace,
// the real member connects and both transports come up.
func TestTransportModeNotFromUnauthenticatedHello(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	lower, higher := dialOrder(sessions)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	listening := openTransport(ctx, hosts[higher], sessions[higher], TransportConfig{Logger: testLogger()})

	// The forger: a stranger's identity on the lower member's own socket,
	// dialling for the stream mode.
	ident := newIdentity(t)
	for range 3 {
		conf := clientTLS(ident, hosts[higher].ID())
		conf.NextProtos = []string{ALPNStream}
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		conn, release, err := hosts[lower].dialDatagram(dctx, net.UDPAddrFromAddrPort(hosts[higher].DatagramAddr()), conf, ModeStream.quicConfig())
		dcancel()
		if err == nil {
			if conn.LocalAddr().String() != hosts[lower].DatagramAddr().String() {
				t.Errorf("forged from %v, not the member's socket %v", conn.LocalAddr(), hosts[lower].DatagramAddr())
			}
			<-conn.Context().Done() // the listener ends it
			release()
		}
	}

	select {
	case r := <-listening:
		t.Fatalf("the listener gave up before the member came: %v", r.err)
	case <-time.After(modeMismatchGrace + 500*time.Millisecond):
	}
	dialler, err := NewTransport(ctx, hosts[lower], sessions[lower], TransportConfig{Logger: testLogger()})
	if err != nil {
		t.Fatalf("the member's NewTransport: %v", err)
	}
	defer dialler.Close()
	r := <-listening
	if r.err != nil {
		t.Fatalf("the listener's NewTransport: %v", r.err)
	}
	defer r.tr.Close()
	if st := r.tr.Stats(); st.Refused < 1 {
		t.Errorf("the forged handshakes were not refused: %+v", st)
	}
	if err := dialler.Send(sessions[higher].Self, []byte("same mode")); err != nil {
		t.Fatal(err)
	}
	if got := collect(r.tr.Incoming(), 1, 20*time.Second); len(got) != 1 || string(got[0].Data) != "same mode" {
		t.Fatalf("received %v", got)
	}
}
