package peer

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	"github.com/quic-go/quic-go"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// socket is one UDP socket of the host's QUIC side, as go-libp2p's
// quicreuse connection manager opens it: libp2p's QUIC transport and the
// datagram channel share it (each QUIC connection is told apart by its
// connection IDs, each listener by its ALPN). Writes pass through the
// impairment a Transport attaches, if any, so a profile impairs every
// packet leaving the socket while that transport runs.
//
// It offers quic-go what a *net.UDPConn does (quic.OOBCapablePacketConn
// and batched reads), so that quic-go reads up to a batch of packets per
// system call (recvmmsg) and writes with its own control messages and GSO
// (several packets in one system call). Unimpaired, a write goes straight
// to the UDP socket: the wrapper costs one atomic load. Impaired, each
// packet of a write (a GSO write split at its segment size) passes
// through the impairment one by one, without control messages, as if
// written alone. Reads are never impaired. It is safe for concurrent use.
type socket struct {
	conn   *net.UDPConn
	batch  *ipv4.PacketConn               // reads batches of packets from conn
	impair atomic.Pointer[net.PacketConn] // nil: write to conn directly
	counts socketCounts
}

// socketCounts count every packet read from and written to a socket (a
// GSO write counts each of its packets), whoever's: counters only grow.
type socketCounts struct {
	read, readBytes, written, writtenBytes atomic.Uint64
}

// SocketStats count the UDP packets of the datagram socket while a
// Transport holds it, whichever QUIC connection read or wrote them (the
// datagram channel's, libp2p's own on the same socket): payloads only,
// without IP and UDP headers. Written counts what QUIC wrote, before any
// impairment.
type SocketStats struct {
	Read, ReadBytes       uint64
	Written, WrittenBytes uint64
}

// stats returns the counters.
func (c *socketCounts) stats() SocketStats {
	return SocketStats{Read: c.read.Load(), ReadBytes: c.readBytes.Load(), Written: c.written.Load(), WrittenBytes: c.writtenBytes.Load()}
}

// since returns the counts of s since start.
func (s SocketStats) since(start SocketStats) SocketStats {
	return SocketStats{Read: s.Read - start.Read, ReadBytes: s.ReadBytes - start.ReadBytes,
		Written: s.Written - start.Written, WrittenBytes: s.WrittenBytes - start.WrittenBytes}
}

func (c *socketCounts) readOne(n int) {
	c.read.Add(1)
	c.readBytes.Add(uint64(n))
}

func (c *socketCounts) wrote(packets, n int) {
	c.written.Add(uint64(packets))
	c.writtenBytes.Add(uint64(n))
}

// newSocket returns the socket over c.
func newSocket(c *net.UDPConn) *socket { return &socket{conn: c, batch: ipv4.NewPacketConn(c)} }

func (s *socket) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := s.conn.ReadFrom(b)
	if err == nil {
		s.counts.readOne(n)
	}
	return n, addr, err
}

func (s *socket) WriteTo(b []byte, addr net.Addr) (int, error) {
	s.counts.wrote(1, len(b))
	if w := s.impair.Load(); w != nil {
		return (*w).WriteTo(b, addr)
	}
	return s.conn.WriteTo(b, addr)
}

// ReadBatch reads up to len(ms) packets in one system call where the
// system offers it (quic-go's batched reads).
func (s *socket) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	n, err := s.batch.ReadBatch(ms, flags)
	for i := range n {
		s.counts.readOne(ms[i].N)
	}
	return n, err
}

func (s *socket) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	n, oobn, flags, addr, err = s.conn.ReadMsgUDP(b, oob)
	if err == nil {
		s.counts.readOne(n)
	}
	return n, oobn, flags, addr, err
}

// WriteMsgUDP writes b, one packet or, with a UDP_SEGMENT control
// message in oob, several of that size (GSO). Impaired, the packets go
// through the impairment one by one and oob is dropped.
func (s *socket) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	seg := gsoSegment(oob)
	packets := 1
	if seg > 0 {
		packets = (len(b) + seg - 1) / seg
	}
	s.counts.wrote(packets, len(b))
	w := s.impair.Load()
	if w == nil {
		return s.conn.WriteMsgUDP(b, oob, addr)
	}
	if seg <= 0 || seg >= len(b) {
		n, err = (*w).WriteTo(b, addr)
		return n, len(oob), err
	}
	for at := 0; at < len(b); at += seg {
		if _, err := (*w).WriteTo(b[at:min(at+seg, len(b))], addr); err != nil {
			return at, len(oob), err
		}
	}
	return len(b), len(oob), nil
}

func (s *socket) SyscallConn() (syscall.RawConn, error) { return s.conn.SyscallConn() }

func (s *socket) Close() error                       { return s.conn.Close() }
func (s *socket) LocalAddr() net.Addr                { return s.conn.LocalAddr() }
func (s *socket) SetDeadline(t time.Time) error      { return s.conn.SetDeadline(t) }
func (s *socket) SetReadDeadline(t time.Time) error  { return s.conn.SetReadDeadline(t) }
func (s *socket) SetWriteDeadline(t time.Time) error { return s.conn.SetWriteDeadline(t) }
func (s *socket) SetReadBuffer(n int) error          { return s.conn.SetReadBuffer(n) }
func (s *socket) SetWriteBuffer(n int) error         { return s.conn.SetWriteBuffer(n) }

// rawSocket is a socket as the impairment wrapper sees it: the wrapper
// writes to the real socket, the datagrams it releases together in one
// system call where the system offers it (sendmmsg: netsim.BatchWriter),
// and closing the wrapper leaves the socket to the host.
type rawSocket struct {
	*net.UDPConn
	batch interface {
		WriteBatch([]ipv4.Message, int) (int, error)
	}
	v6   bool           // an IPv6 socket, perhaps dual-stack
	msgs []ipv4.Message // WriteBatch's, reused
}

// newRawSocket returns the impairment's view of c.
func newRawSocket(c *net.UDPConn) *rawSocket {
	r := &rawSocket{UDPConn: c}
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
		r.batch, r.v6 = ipv6.NewPacketConn(c), true
	} else {
		r.batch = ipv4.NewPacketConn(c)
	}
	return r
}

func (*rawSocket) Close() error { return nil }

// WriteBatch writes ps[i] to addrs[i], as many as it can per system
// call. It is called from the impairment's one goroutine.
//
// On an IPv6 socket a datagram to an IPv4 address goes out alone: the
// batch would address it as IPv4, which Linux takes on a dual-stack socket
// but other systems refuse, and the single write maps the address into
// IPv6.
func (r *rawSocket) WriteBatch(ps [][]byte, addrs []net.Addr) (int, error) {
	written := 0
	for written < len(ps) {
		if r.v4on6(addrs[written]) {
			if _, err := r.UDPConn.WriteTo(ps[written], addrs[written]); err != nil {
				return written, err
			}
			written++
			continue
		}
		end := written + 1
		for end < len(ps) && !r.v4on6(addrs[end]) {
			end++
		}
		n, err := r.writeBatch(ps[written:end], addrs[written:end])
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// v4on6 reports whether a is an IPv4 address and the socket an IPv6 one
// on a system that refuses an IPv4 address in a batch on such a socket:
// Linux takes it (a dual-stack socket sends it as IPv4), so there every
// datagram goes in the batch.
func (r *rawSocket) v4on6(a net.Addr) bool {
	if runtime.GOOS == "linux" {
		return false
	}
	u, ok := a.(*net.UDPAddr)
	return r.v6 && ok && u.IP.To4() != nil
}

// writeBatch writes ps[i] to addrs[i] with as few system calls as it can.
func (r *rawSocket) writeBatch(ps [][]byte, addrs []net.Addr) (int, error) {
	r.msgs = r.msgs[:0]
	for i, p := range ps {
		if len(r.msgs) < cap(r.msgs) {
			r.msgs = r.msgs[:len(r.msgs)+1]
		} else {
			r.msgs = append(r.msgs, ipv4.Message{Buffers: make([][]byte, 1)})
		}
		m := &r.msgs[len(r.msgs)-1]
		if len(m.Buffers) != 1 {
			m.Buffers = make([][]byte, 1)
		}
		m.Buffers[0], m.Addr, m.OOB = p, addrs[i], nil
	}
	written := 0
	for written < len(r.msgs) {
		n, err := r.batch.WriteBatch(r.msgs[written:], 0)
		written += n
		if err != nil || n == 0 {
			r.release()
			return written, err
		}
	}
	r.release()
	return written, nil
}

// release lets go of the packets the messages referred to.
func (r *rawSocket) release() {
	for i := range r.msgs {
		r.msgs[i].Buffers[0], r.msgs[i].Addr = nil, nil
	}
}

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
	s := newSocket(c)
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
