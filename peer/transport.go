package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/quic-go/quic-go"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/peer/netsim"
)

// Errors of the datagram transport.
var (
	ErrTransportBusy    = errors.New("peer: the host's datagram socket is in use by another transport")
	ErrClosed           = errors.New("peer: transport closed")
	ErrNotConnected     = errors.New("peer: member not connected")
	ErrNoSuchMember     = errors.New("peer: no such member")
	ErrDatagramTooLarge = errors.New("peer: datagram too large")
	ErrInvalidSession   = errors.New("peer: session does not fit this host")
)

var _ lockstep.Transport = (*Transport)(nil)

// DefaultIncomingBuffer is the capacity of [Transport.Incoming] when
// TransportConfig.IncomingBuffer is 0.
const DefaultIncomingBuffer = 1024

// DefaultSilenceWarning is how long nothing may arrive from any member
// before the transport logs a warning, when TransportConfig.SilenceWarning
// is 0.
const DefaultSilenceWarning = time.Second

// TransportConfig configures [NewTransport]. The zero value is an
// unimpaired transport that logs nothing.
type TransportConfig struct {
	// Profile, if set, impairs every datagram this member sends (and the
	// QUIC packets that carry handshakes and acknowledgements): the
	// datagram socket is wrapped by netsim.WrapPacketConn with a generator
	// derived from the session seed and this member's slot, so a run is
	// reproducible in its decisions. Impair every member to impair both
	// directions.
	Profile *netsim.Profile

	// PacketLog, if set, receives one line per datagram sent or received
	// (see docs/network.md, "Diagnostics"). Lines are buffered and flushed
	// every 250 ms and on Close.
	PacketLog io.Writer

	// Logger receives the transport's log records; nil discards them.
	Logger *slog.Logger

	// IncomingBuffer is the capacity of the Incoming channel; 0 means
	// DefaultIncomingBuffer. When it is full, arriving datagrams are
	// dropped and counted.
	IncomingBuffer int

	// SilenceWarning is how long nothing may arrive from any member before
	// a warning is logged; 0 means DefaultSilenceWarning, negative never.
	SilenceWarning time.Duration
}

// Transport is the datagram channel of one session: one QUIC connection per
// pair of members, carrying unreliable datagrams (RFC 9221), authenticated
// by the members' libp2p identities. It implements [lockstep.Transport];
// slots are indices in Session.Members.
//
// Send is called from one goroutine at a time (as lockstep.Transport
// says); Stats, Incoming and Close are safe for concurrent use with it and
// each other.
type Transport struct {
	host     *Host
	sess     *Session
	self     bucket.Slot
	log      *slog.Logger
	impaired *netsim.Conn // nil without a profile
	qt       *quic.Transport
	ln       *quic.Listener

	conns []atomic.Pointer[quic.Conn] // by slot
	in    chan lockstep.Inbound

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex // guards closed, connected, ready, dialErr
	closed    bool
	connected int
	ready     chan struct{} // closed once every member is connected
	dialErr   []error       // by slot: why the last dial failed

	closeOnce sync.Once
	closeErr  error

	epoch    time.Time    // when the transport started
	lastRecv atomic.Int64 // time of the last datagram from anyone, in ns since epoch; 0 none
	plog     *packetLog   // nil without a packet log

	members  []memberCounters
	dropped  atomic.Uint64
	refused  atomic.Uint64
	silences atomic.Uint64
	silent   atomic.Bool // the silence warning is out; the next datagram clears it
}

type memberCounters struct {
	sent, sentBytes, recv, recvBytes, sendErrors, dropped atomic.Uint64
}

// MemberStats counts one member's datagrams, payload bytes only.
type MemberStats struct {
	Connected         bool   // a connection to the member is open
	DatagramsSent     uint64 // datagrams handed to QUIC for it
	BytesSent         uint64
	DatagramsReceived uint64 // datagrams that arrived from it
	BytesReceived     uint64
	SendErrors        uint64 // sends that failed (too large, connection gone)
	Dropped           uint64 // of its datagrams, dropped because Incoming was full
}

// TransportStats are the transport's counters. Counters only grow.
type TransportStats struct {
	Members    []MemberStats     // by slot; this member's own entry stays zero
	Dropped    uint64            // datagrams dropped because Incoming was full
	Refused    uint64            // connections refused: strangers, wrong direction, unreadable identity
	Silences   uint64            // times nothing arrived from anyone for SilenceWarning
	Impairment *netsim.ConnStats // what the profile did to outgoing packets; nil without one
}

// NewTransport opens the datagram channel of sess on h's datagram socket
// and waits until it is connected to every other member, as long as ctx
// allows; on failure it names the members it could not reach.
//
// The member with the lower peer ID of each pair dials; the higher accepts.
// An accepted connection whose libp2p identity is not a member of sess is
// closed at once with [CodeNotMember] (and counted in Stats().Refused):
// nothing it sends reaches Incoming. A member's newer connection replaces
// its older one.
//
// The transport holds h's datagram socket until Close. It returns an error
// wrapping [ErrInvalidSession] if sess does not name h as its Self member,
// and [ErrTransportBusy] if another transport holds the socket.
func NewTransport(ctx context.Context, h *Host, sess *Session, cfg TransportConfig) (*Transport, error) {
	n := len(sess.Members)
	if int(sess.Self) >= n || sess.Members[sess.Self] != h.ID() || len(sess.Endpoints) != n {
		return nil, fmt.Errorf("%w: host %s, session members %v, self %d", ErrInvalidSession, h.ID(), sess.Members, sess.Self)
	}
	if cfg.Profile != nil {
		if err := cfg.Profile.Validate(); err != nil {
			return nil, err
		}
	}
	sock, err := h.acquireDatagram()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	buf := cfg.IncomingBuffer
	if buf <= 0 {
		buf = DefaultIncomingBuffer
	}
	t := &Transport{
		host:    h,
		sess:    sess,
		self:    sess.Self,
		log:     log.With("session", sess.ID, "slot", sess.Self),
		conns:   make([]atomic.Pointer[quic.Conn], n),
		in:      make(chan lockstep.Inbound, buf),
		ready:   make(chan struct{}),
		epoch:   time.Now(),
		members: make([]memberCounters, n),
		dialErr: make([]error, n),
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	if cfg.PacketLog != nil {
		t.plog = newPacketLog(cfg.PacketLog, sess, n)
	}

	var pc net.PacketConn = sock
	if cfg.Profile != nil {
		r := sess.Seed.PCG().Derive(fmt.Sprintf("peer/netsim/%d", sess.Self))
		t.impaired = netsim.WrapPacketConn(hostSocket{sock}, *cfg.Profile, r)
		pc = t.impaired
	}
	t.qt = &quic.Transport{Conn: pc}
	t.ln, err = t.qt.Listen(serverTLS(h.ident), quicConfig())
	if err != nil {
		t.qt.Close()
		if t.impaired != nil {
			t.impaired.Close()
		}
		t.cancel()
		h.releaseDatagram()
		return nil, fmt.Errorf("peer: datagram listener: %w", err)
	}
	if n == 1 {
		close(t.ready)
	}
	t.wg.Go(t.acceptLoop)
	for slot, id := range sess.Members {
		if id > h.ID() {
			t.wg.Go(func() { t.dialLoop(bucket.Slot(slot), id) })
		}
	}
	select {
	case <-t.ready:
	case <-ctx.Done():
		var missing []string
		t.mu.Lock()
		for slot, id := range sess.Members {
			if bucket.Slot(slot) != t.self && t.conns[slot].Load() == nil {
				m := fmt.Sprintf("%d (%s at %s", slot, id, sess.Endpoints[slot])
				if err := t.dialErr[slot]; err != nil {
					m += ": " + err.Error()
				} else if id < h.ID() {
					m += ": it has not dialled us"
				}
				missing = append(missing, m+")")
			}
		}
		t.mu.Unlock()
		t.Close()
		return nil, fmt.Errorf("peer: datagram channel: members %s not connected: %w", strings.Join(missing, ", "), context.Cause(ctx))
	}
	t.wg.Go(t.monitor(cfg.SilenceWarning))
	t.log.Info("peer: datagram channel up", "members", n, "addr", pc.LocalAddr(), "impaired", cfg.Profile != nil)
	return t, nil
}

// hostSocket is the host's socket as the impairment wrapper sees it:
// closing the wrapper must leave the socket to the host.
type hostSocket struct{ *net.UDPConn }

func (hostSocket) Close() error { return nil }

// dialLoop dials a higher member until a connection is up or the transport
// closes.
func (t *Transport) dialLoop(slot bucket.Slot, id peer.ID) {
	addr := net.UDPAddrFromAddrPort(t.sess.Endpoints[slot])
	backoff := 50 * time.Millisecond
	for t.ctx.Err() == nil {
		conn, err := t.qt.Dial(t.ctx, addr, clientTLS(t.host.ident, id), quicConfig())
		if err == nil {
			t.attach(slot, conn)
			return
		}
		t.log.Debug("peer: dialling member failed; retrying", "member", slot, "id", id, "err", err)
		t.mu.Lock()
		t.dialErr[slot] = err
		t.mu.Unlock()
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// acceptLoop accepts connections from lower members and refuses the rest.
func (t *Transport) acceptLoop() {
	for {
		conn, err := t.ln.Accept(t.ctx)
		if err != nil {
			return
		}
		id, err := remoteID(conn)
		if err != nil {
			t.refuse(conn, CodeBadIdentity, "no libp2p identity", "", err)
			continue
		}
		slot, member := t.sess.Slot(id)
		switch {
		case !member:
			t.refuse(conn, CodeNotMember, "not a member of this session", id, nil)
		case id >= t.sess.Members[t.self]:
			t.refuse(conn, CodeWrongDirection, "the lower peer ID dials", id, nil)
		default:
			t.attach(slot, conn)
		}
	}
}

func (t *Transport) refuse(conn *quic.Conn, code quic.ApplicationErrorCode, why string, id peer.ID, err error) {
	t.refused.Add(1)
	t.log.Warn("peer: refused a datagram connection", "from", conn.RemoteAddr(), "id", id, "why", why, "err", err)
	_ = conn.CloseWithError(code, why)
}

// attach makes conn the connection to slot and starts reading it.
func (t *Transport) attach(slot bucket.Slot, conn *quic.Conn) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = conn.CloseWithError(CodeClosed, "transport closed")
		return
	}
	old := t.conns[slot].Swap(conn)
	if old == nil {
		t.connected++
		if t.connected == len(t.conns)-1 {
			close(t.ready)
		}
	}
	t.wg.Go(func() { t.readLoop(slot, conn) })
	t.mu.Unlock()
	t.log.Debug("peer: member connected", "member", slot, "remote", conn.RemoteAddr())
	if old != nil {
		_ = old.CloseWithError(CodeReplaced, "replaced by a newer connection")
	}
}

// readLoop moves the datagrams of one connection onto Incoming, promptly:
// quic-go queues only 128 of them and drops the rest.
func (t *Transport) readLoop(slot bucket.Slot, conn *quic.Conn) {
	m := &t.members[slot]
	for {
		data, err := conn.ReceiveDatagram(t.ctx)
		if err != nil {
			if t.ctx.Err() == nil && t.conns[slot].Load() == conn {
				t.log.Warn("peer: connection to member lost", "member", slot, "err", err)
			}
			return
		}
		now := time.Now()
		t.lastRecv.Store(max(int64(now.Sub(t.epoch)), 1))
		if t.silent.CompareAndSwap(true, false) {
			t.log.Info("peer: datagrams arriving again", "from", slot)
		}
		m.recv.Add(1)
		m.recvBytes.Add(uint64(len(data)))
		if t.plog != nil {
			t.plog.record(now, dirIn, slot, data)
		}
		select {
		case t.in <- lockstep.Inbound{From: slot, Data: data}:
		default:
			t.dropped.Add(1)
			m.dropped.Add(1)
		}
	}
}

// Send sends one datagram to member to, unreliably. data is copied; it
// must be at most wire.MaxDatagramSize bytes ([ErrDatagramTooLarge]). Send
// may block briefly when QUIC's datagram send queue (32 datagrams) is full
// under congestion. It returns an error wrapping [ErrNoSuchMember] for a bad
// slot or this member's own, [ErrClosed] after Close, and an error when the
// connection to the member is gone.
func (t *Transport) Send(to bucket.Slot, data []byte) error {
	if int(to) >= len(t.conns) || to == t.self {
		return fmt.Errorf("%w: slot %d of %d (self %d)", ErrNoSuchMember, to, len(t.conns), t.self)
	}
	if t.ctx.Err() != nil {
		return ErrClosed
	}
	m := &t.members[to]
	if len(data) > wire.MaxDatagramSize {
		m.sendErrors.Add(1)
		return fmt.Errorf("%w: %d bytes, limit %d", ErrDatagramTooLarge, len(data), wire.MaxDatagramSize)
	}
	conn := t.conns[to].Load()
	if conn == nil {
		m.sendErrors.Add(1)
		return fmt.Errorf("%w: slot %d", ErrNotConnected, to)
	}
	if err := conn.SendDatagram(data); err != nil {
		m.sendErrors.Add(1)
		var tooLarge *quic.DatagramTooLargeError
		if errors.As(err, &tooLarge) {
			return fmt.Errorf("%w: %d bytes, the path takes %d", ErrDatagramTooLarge, len(data), tooLarge.MaxDatagramPayloadSize)
		}
		if t.ctx.Err() != nil {
			return ErrClosed
		}
		return fmt.Errorf("peer: sending to member %d: %w", to, err)
	}
	m.sent.Add(1)
	m.sentBytes.Add(uint64(len(data)))
	if t.plog != nil {
		t.plog.record(time.Now(), dirOut, to, data)
	}
	return nil
}

// Incoming returns the channel of received datagrams. It is closed by
// Close, after the last datagram was put on it.
func (t *Transport) Incoming() <-chan lockstep.Inbound { return t.in }

// Session returns the session the transport serves.
func (t *Transport) Session() *Session { return t.sess }

// LocalAddr returns the address of the datagram socket.
func (t *Transport) LocalAddr() net.Addr { return t.qt.Conn.LocalAddr() }

// Stats returns a snapshot of the counters.
func (t *Transport) Stats() TransportStats {
	s := TransportStats{
		Members:  make([]MemberStats, len(t.members)),
		Dropped:  t.dropped.Load(),
		Refused:  t.refused.Load(),
		Silences: t.silences.Load(),
	}
	for i := range t.members {
		m := &t.members[i]
		c := t.conns[i].Load()
		s.Members[i] = MemberStats{
			Connected:         c != nil && c.Context().Err() == nil,
			DatagramsSent:     m.sent.Load(),
			BytesSent:         m.sentBytes.Load(),
			DatagramsReceived: m.recv.Load(),
			BytesReceived:     m.recvBytes.Load(),
			SendErrors:        m.sendErrors.Load(),
			Dropped:           m.dropped.Load(),
		}
	}
	if t.impaired != nil {
		st := t.impaired.Stats()
		s.Impairment = &st
	}
	return s
}

// Close closes every connection (telling the members with [CodeClosed]),
// stops every goroutine the transport started, flushes the packet log,
// closes Incoming and gives the datagram socket back to the host. Close is
// idempotent.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		t.cancel()
		var wg sync.WaitGroup
		for i := range t.conns {
			if c := t.conns[i].Load(); c != nil {
				wg.Go(func() { _ = c.CloseWithError(CodeClosed, "transport closed") })
			}
		}
		wg.Wait()
		_ = t.ln.Close()
		t.closeErr = t.qt.Close()
		t.wg.Wait()
		if t.impaired != nil {
			_ = t.impaired.Close()
		}
		if t.plog != nil {
			if err := t.plog.flush(); err != nil && t.closeErr == nil {
				t.closeErr = fmt.Errorf("peer: packet log: %w", err)
			}
		}
		close(t.in)
		t.host.releaseDatagram()
		t.log.Info("peer: datagram channel closed")
	})
	return t.closeErr
}

// monitor flushes the packet log and warns when nothing has arrived from
// any member for the silence limit (the anet seed's "DT" warning: a quiet
// network is a sign of trouble in the game or the network).
func (t *Transport) monitor(limit time.Duration) func() {
	if limit == 0 {
		limit = DefaultSilenceWarning
	}
	return func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		// Nothing is expected before the session starts.
		since := max(time.Since(t.epoch), t.sess.Start.Sub(t.epoch))
		for {
			select {
			case <-t.ctx.Done():
				return
			case now := <-tick.C:
				if t.plog != nil {
					if err := t.plog.flush(); err != nil {
						t.log.Warn("peer: packet log", "err", err)
					}
				}
				if limit < 0 || len(t.conns) == 1 {
					continue
				}
				last := max(time.Duration(t.lastRecv.Load()), since)
				quiet := now.Sub(t.epoch) - last
				if quiet >= limit && t.silent.CompareAndSwap(false, true) {
					t.silences.Add(1)
					t.log.Warn("peer: nothing received from any member", "for", quiet.Round(time.Millisecond))
				}
			}
		}
	}
}
