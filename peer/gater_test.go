package peer

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
)

// newStranger starts a plain libp2p host on the loopback, as a foreign
// client would run: no Phalanx host, no gater of ours.
func newStranger(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(libp2p.NoTransports, libp2p.Transport(libp2pquic.NewTransport),
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/udp/0/quic-v1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// eventually waits for cond, failing the test after a generous 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitFor(t, 10*time.Second, what, cond)
}

// TestGaterClosesStrangers: a foreign libp2p host may connect to a host
// that knows no session yet (it may be an early member), but once the host
// joins a session of which it is no member, its connection is closed, its
// lobby hello is refused as if there were no session, and it cannot
// connect again.
func TestGaterClosesStrangers(t *testing.T) {
	hosts := newHosts(t, 2) // hosts[1] never joins: the lobby waits for it
	target := hosts[0]
	stranger := newStranger(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := stranger.Connect(ctx, target.AddrInfo()); err != nil {
		t.Fatalf("connecting before the host knows a session: %v", err)
	}
	s, err := stranger.NewStream(ctx, target.ID(), LobbyProtocol)
	if err != nil {
		t.Fatal(err)
	}

	joined := make(chan error, 1)
	go func() {
		_, err := Join(ctx, target, testParams(2), []peer.AddrInfo{hosts[1].AddrInfo()})
		joined <- err
	}()
	eventually(t, "the Join registers", func() bool { return target.joining(testParams(2).SessionID) })

	// The stranger says hello now; it gets a refusal that says nothing of
	// the session (or, if the host closed the connection first, nothing).
	p := testParams(2)
	body, _ := json.Marshal(&lobbyMsg{Type: msgHello, Params: &p})
	s.Write(append(binary.AppendUvarint(nil, uint64(len(body))), body...))
	var m lobbyMsg
	if err := (&lobbyConn{r: bufio.NewReader(s), remote: target.ID()}).read(&m); err == nil {
		if m.Type != msgRefuse || m.Reason != refuseNoSession || m.Detail != "" {
			t.Errorf("the stranger got %+v", m)
		}
	}
	eventually(t, "the stranger's connection is closed", func() bool {
		return stranger.Network().Connectedness(target.ID()) != network.Connected
	})
	// Trying again, it may finish its side of the handshake, but the host
	// refuses the connection once the stranger has proven its ID.
	_ = stranger.Connect(ctx, target.AddrInfo())
	eventually(t, "the stranger's new connection is refused", func() bool {
		return stranger.Network().Connectedness(target.ID()) != network.Connected &&
			len(target.LibP2P().Network().ConnsToPeer(stranger.ID())) == 0
	})

	// A member is still let in: hosts[1] joins, and the session forms.
	sess, err := Join(ctx, hosts[1], testParams(2), []peer.AddrInfo{target.AddrInfo()})
	if err != nil {
		t.Fatalf("member's Join: %v", err)
	}
	if err := <-joined; err != nil || len(sess.Members) != 2 {
		t.Fatalf("target's Join: %v", err)
	}
}

// TestGaterBoundsConnections: with the peer's connections at the bound,
// the gater refuses another; below it, it allows one.
func TestGaterBoundsConnections(t *testing.T) {
	hosts := newHosts(t, 2)
	g := hosts[0].gate
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hosts[1].LibP2P().Connect(ctx, hosts[0].AddrInfo()); err != nil {
		t.Fatal(err)
	}
	id := hosts[1].ID()
	eventually(t, "the connection is counted", func() bool { return len(hosts[0].LibP2P().Network().ConnsToPeer(id)) == 1 })
	if !g.InterceptSecured(network.DirInbound, id, nil) {
		t.Error("a second connection refused")
	}
	g.maxConns.Store(1) // the one connection is the bound
	if g.InterceptSecured(network.DirInbound, id, nil) {
		t.Error("a connection past the bound allowed")
	}
	if !g.InterceptSecured(network.DirInbound, hosts[0].ID(), nil) {
		t.Error("a peer without connections refused")
	}
}
