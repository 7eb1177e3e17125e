package peer

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	ma "github.com/multiformats/go-multiaddr"
	"github.com/quic-go/quic-go"
)

// The host's side of the datagram channel: its ALPNs on the UDP socket of
// the first libp2p QUIC listen address (go-libp2p's quicreuse lets any
// number of ALPNs listen there, as WebTransport does), the connections
// accepted there handed to the running Transport, and dials from the same
// socket. Every hole a NAT opened for libp2p's QUIC connections (a direct
// dial or a hole punch) therefore serves the datagram channel too.

// listenDatagram registers the datagram channel's ALPNs on the socket of
// the first QUIC listen address and starts the loop that hands accepted
// connections to the running Transport (stopped by Close). While no
// Transport runs, every handshake under those ALPNs fails.
func (h *Host) listenDatagram() error {
	var laddr ma.Multiaddr
	for _, a := range h.h.Network().ListenAddresses() {
		if _, err := a.ValueForProtocol(ma.P_QUIC_V1); err == nil {
			laddr = a
			break
		}
	}
	if laddr == nil {
		return fmt.Errorf("peer: the host listens on no QUIC address")
	}
	conf := &tls.Config{
		NextProtos: []string{ALPN, ALPNStream},
		GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
			t := h.current.Load()
			if t == nil {
				return nil, fmt.Errorf("peer: no datagram channel running")
			}
			return t.serverConf.GetConfigForClient(hello)
		},
	}
	// The listener is associated with the host, so that dials prefer its
	// socket (dial).
	ln, err := h.cm.ListenQUICAndAssociate(h, laddr, conf, func(*quic.Conn, uint64) bool { return false })
	if err != nil {
		return fmt.Errorf("peer: datagram listener on %s: %w", laddr, err)
	}
	sock := h.socks.find(ln.Addr())
	if sock == nil {
		ln.Close()
		return fmt.Errorf("peer: datagram listener on %s: the socket is not the host's", ln.Addr())
	}
	h.dgramLn = ln
	h.dgram = sock
	h.dgramAddr = ln.Addr().(*net.UDPAddr).AddrPort()
	go h.acceptDatagram()
	return nil
}

// acceptDatagram hands each accepted connection of the datagram channel to
// the running Transport, or closes it when none runs, until the listener
// is closed.
func (h *Host) acceptDatagram() {
	defer close(h.accepted)
	for {
		conn, err := h.dgramLn.Accept(context.Background())
		if err != nil {
			return
		}
		if t := h.current.Load(); t != nil {
			t.accepted(conn)
		} else {
			_ = conn.CloseWithError(CodeClosed, "no datagram channel running")
		}
	}
}

// dialDatagram dials addr from the host's datagram socket (or, when the
// route to addr leaves from another address, from a socket of libp2p's
// for that address). release gives the socket's reference back; call it
// once the connection is closed.
func (h *Host) dialDatagram(ctx context.Context, addr *net.UDPAddr, tlsConf *tls.Config, conf *quic.Config) (conn *quic.Conn, release func(), err error) {
	network := "udp4"
	if addr.IP.To4() == nil {
		network = "udp6"
	}
	tr, err := h.cm.TransportWithAssociationForDial(h, network, addr)
	if err != nil {
		return nil, nil, err
	}
	conn, err = tr.Dial(ctx, addr, tlsConf, conf)
	if err != nil {
		tr.DecreaseCount()
		return nil, nil, err
	}
	return conn, tr.DecreaseCount, nil
}
