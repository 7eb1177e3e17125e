package peer

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	"github.com/quic-go/quic-go"
)

// socket is one UDP socket of the host's QUIC side, as go-libp2p's
// quicreuse connection manager opens it: libp2p's QUIC transport and the
// datagram channel share it (each QUIC connection is told apart by its
// connection IDs, each listener by its ALPN). Writes pass through the
// impairment a Transport attaches, if any, so a profile impairs every
// packet leaving the socket while that transport runs.
//
// It deliberately offers no WriteMsgUDP: quic-go would write through it,
// past the impairment. It is safe for concurrent use.
type socket struct {
	conn   *net.UDPConn
	impair atomic.Pointer[net.PacketConn] // nil: write to conn directly
}

func (s *socket) ReadFrom(b []byte) (int, net.Addr, error) { return s.conn.ReadFrom(b) }

func (s *socket) WriteTo(b []byte, addr net.Addr) (int, error) {
	if w := s.impair.Load(); w != nil {
		return (*w).WriteTo(b, addr)
	}
	return s.conn.WriteTo(b, addr)
}

func (s *socket) Close() error                       { return s.conn.Close() }
func (s *socket) LocalAddr() net.Addr                { return s.conn.LocalAddr() }
func (s *socket) SetDeadline(t time.Time) error      { return s.conn.SetDeadline(t) }
func (s *socket) SetReadDeadline(t time.Time) error  { return s.conn.SetReadDeadline(t) }
func (s *socket) SetWriteDeadline(t time.Time) error { return s.conn.SetWriteDeadline(t) }
func (s *socket) SetReadBuffer(n int) error          { return s.conn.SetReadBuffer(n) }
func (s *socket) SetWriteBuffer(n int) error         { return s.conn.SetWriteBuffer(n) }

// rawSocket is a socket as the impairment wrapper sees it: the wrapper
// writes to the real socket, and closing the wrapper leaves the socket to
// the host.
type rawSocket struct{ *net.UDPConn }

func (rawSocket) Close() error { return nil }

// sockets records every UDP socket the host's connection manager opens.
type sockets struct {
	mu  sync.Mutex
	all []*socket
}

// listen opens a UDP socket for the connection manager and records it.
func (ss *sockets) listen(network string, laddr *net.UDPAddr) (net.PacketConn, error) {
	c, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	s := &socket{conn: c}
	ss.mu.Lock()
	ss.all = append(ss.all, s)
	ss.mu.Unlock()
	return s, nil
}

// find returns the recorded socket bound to addr.
func (ss *sockets) find(addr net.Addr) *socket {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, s := range ss.all {
		if s.conn.LocalAddr().String() == addr.String() {
			return s
		}
	}
	return nil
}

// connManager returns the constructor of the host's quicreuse connection
// manager, for libp2p.QUICReuse: go-libp2p's own (inbound connections
// accounted by the resource manager, source addresses verified under
// load), with sockets opened by ss, no metrics, and the manager kept in
// *out so the host can listen and dial on the same sockets.
func connManager(ss *sockets, out **quicreuse.ConnManager) func(quic.StatelessResetKey, quic.TokenGeneratorKey, network.ResourceManager) (*quicreuse.ConnManager, error) {
	return func(key quic.StatelessResetKey, tokens quic.TokenGeneratorKey, rcmgr network.ResourceManager) (*quicreuse.ConnManager, error) {
		cm, err := quicreuse.NewConnManager(key, tokens,
			quicreuse.OverrideListenUDP(ss.listen),
			quicreuse.ConnContext(func(ctx context.Context, info *quic.ClientInfo) (context.Context, error) {
				addr, err := quicreuse.ToQuicMultiaddr(info.RemoteAddr, quic.Version1)
				if err != nil {
					addr = nil
				}
				scope, err := rcmgr.OpenConnection(network.DirInbound, false, addr)
				if err != nil {
					return ctx, err
				}
				ctx = network.WithConnManagementScope(ctx, scope)
				context.AfterFunc(ctx, scope.Done)
				return ctx, nil
			}),
			quicreuse.VerifySourceAddress(rcmgr.VerifySourceAddress),
		)
		if err != nil {
			return nil, err
		}
		*out = cm
		return cm, nil
	}
}
