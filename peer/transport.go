package peer

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
)

// Errors of the transport.
var (
	ErrTransportBusy    = errors.New("peer: the host's datagram socket is in use by another transport")
	ErrClosed           = errors.New("peer: transport closed")
	ErrNotConnected     = errors.New("peer: member not connected")
	ErrNoSuchMember     = errors.New("peer: no such member")
	ErrDatagramTooLarge = errors.New("peer: datagram too large")
	ErrInvalidSession   = errors.New("peer: session does not fit this host")
	ErrModeMismatch     = errors.New("peer: transport mode mismatch")
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
// unimpaired datagram transport that logs nothing.
type TransportConfig struct {
	// Mode is how packets travel: ModeDatagram (the zero value), one QUIC
	// datagram each, or ModeStream, the reliable ordered baseline. Every
	// member of the session must use the same mode.
	Mode Mode

	// StreamQueue bounds, in ModeStream, the bytes (frames, length
	// prefixes included) queued for one member that QUIC has not taken
	// yet because its flow or congestion control holds them back; 0 means
	// DefaultStreamQueue, and it is never less than one frame. Send drops
	// a packet that does not fit (MemberStats.SendDropped). Unused in
	// ModeDatagram.
	StreamQueue int

	// Profile, if set, impairs every datagram this member sends (and the
	// QUIC packets that carry handshakes and acknowledgements): the
	// datagram socket is wrapped by netsim.WrapPacketConn with a generator
	// derived from the session seed and this member's slot, so a run is
	// reproducible in its decisions. Impair every member to impair both
	// directions.
	Profile *netsim.Profile

	// PacketLog, if set, receives one line per packet sent or received
	// (see docs/network.md, "Diagnostics"). Lines are buffered and flushed
	// every 250 ms and on Close.
	PacketLog io.Writer

	// Logger receives the transport's log records; nil discards them.
	Logger *slog.Logger

	// IncomingBuffer is the capacity of the Incoming channel; 0 means
	// DefaultIncomingBuffer. When it is full, arriving datagrams are
	// dropped and counted; in ModeStream the readers wait instead.
	IncomingBuffer int

	// SilenceWarning is how long nothing may arrive from any member before
	// a warning is logged; 0 means DefaultSilenceWarning, negative never.
	SilenceWarning time.Duration
}

// modeMismatchGrace is how long NewTransport goes on listening after a
// member dialled in the other mode, before it gives up.
const modeMismatchGrace = 2 * time.Second

// Transport is the datagram channel of one session: one QUIC connection per
// pair of members, carrying unreliable datagrams (RFC 9221), authenticated
// by the members' libp2p identities. It implements [lockstep.Transport];
// slots are indices in Agreement.Members. In ModeStream the same connections
// carry the packets on streams instead, reliably and in order (the
// baseline; see [Mode]).
//
// Send is called from one goroutine at a time (as lockstep.Transport
// says); Stats, Incoming and Close are safe for concurrent use with it and
// each other.
type Transport struct {
	host     *Host
	sess     *Agreement
	self     bucket.Slot
	log      *slog.Logger
	impaired *netsim.Conn // nil without a profile
	sock     *socket      // the host's datagram socket
	// sockStart are the socket's counts when the transport took it.
	sockStart SocketStats
	mode      Mode

	serverConf *tls.Config // the listener's side of the handshake (serverTLS)
	queue      int         // ModeStream: bound of each member's send queue, bytes

	links []atomic.Pointer[link] // by slot
	in    chan lockstep.Inbound

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex // guards closed, connected, ready, dialErr, failErr, mismatchErr
	closed      bool
	connected   int
	ready       chan struct{} // closed once every member is connected
	dialErr     []error       // by slot: why the last dial failed
	failed      chan struct{} // closed by fail: NewTransport gives up at once
	failErr     error
	mismatch    chan struct{} // cap 1: a member dialled in the other mode (otherMode)
	mismatchErr error

	need  int                              // members to connect before NewTransport returns
	moved []atomic.Pointer[netip.AddrPort] // by slot: a member's new address, once it came back (Redial)
	// redialing, by slot: a dial loop (dialLocked's: the start's, a
	// redial's or dialAgain's) still runs; at most one does.
	redialing []atomic.Bool

	closeOnce sync.Once
	closeErr  error
	// releases, guarded by mu: the dial sockets' references
	// (dialDatagram), by connection, each given back once its connection
	// ends (holdRelease) or by Close.
	releases map[*quic.Conn]func()
	// againWait, guarded by mu, by slot: how long dialAgain waits before
	// its first dial, grown by each dialled connection that ends untaken
	// and cleared by one the member took (hear).
	againWait []time.Duration

	epoch    time.Time    // when the transport started
	lastRecv atomic.Int64 // time of the last datagram from anyone, in ns since epoch; 0 none
	plog     *packetLog   // nil without a packet log

	members  []memberCounters
	dropped  atomic.Uint64
	refused  atomic.Uint64
	silences atomic.Uint64
	silent   atomic.Bool // the silence warning is out; the next datagram clears it
}

// NewTransport opens the datagram channel of sess on h's datagram socket
// and waits until it is connected to every other member, as long as ctx
// allows; on failure it names the members it could not reach.
//
// A member in the other [Mode] fails the handshake (each mode has its own
// ALPN) once both sides have proven their identities: NewTransport then
// returns an error wrapping [ErrModeMismatch] that names the member, on
// both sides (the acceptor after a short grace, so the dialler hears why),
// and logs it. A packet of anyone else never makes it give up.
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
func NewTransport(ctx context.Context, h *Host, sess *Agreement, cfg TransportConfig) (*Transport, error) {
	return newTransport(ctx, h, sess, cfg, sess.started()-1, nil)
}

// newTransport is NewTransport, waiting for need members to connect (a
// member that comes back waits for the live ones only) and calling
// listening, if not nil, once it takes the members' connections.
func newTransport(ctx context.Context, h *Host, sess *Agreement, cfg TransportConfig, need int, listening func()) (*Transport, error) {
	n := len(sess.Members)
	if int(sess.Self) >= n || sess.Members[sess.Self] != h.ID() || len(sess.Endpoints) != n {
		return nil, fmt.Errorf("%w: host %s, session members %v, self %d", ErrInvalidSession, h.ID(), sess.Members, sess.Self)
	}
	if cfg.Mode != ModeDatagram && cfg.Mode != ModeStream {
		return nil, fmt.Errorf("peer: unknown transport mode %d", cfg.Mode)
	}
	if cfg.Profile != nil {
		if err := cfg.Profile.Validate(); err != nil {
			return nil, err
		}
	}
	log := orDiscard(cfg.Logger)
	buf := cfg.IncomingBuffer
	if buf <= 0 {
		buf = DefaultIncomingBuffer
	}
	t := &Transport{
		host:      h,
		sess:      sess,
		self:      sess.Self,
		log:       log.With("session", sess.ID, "slot", sess.Self),
		mode:      cfg.Mode,
		queue:     max(cmp.Or(cfg.StreamQueue, DefaultStreamQueue), streamFrameHeader+wire.MaxDatagramSize),
		links:     make([]atomic.Pointer[link], n),
		in:        make(chan lockstep.Inbound, buf),
		ready:     make(chan struct{}),
		failed:    make(chan struct{}),
		mismatch:  make(chan struct{}, 1),
		epoch:     time.Now(),
		members:   make([]memberCounters, n),
		dialErr:   make([]error, n),
		need:      need,
		moved:     make([]atomic.Pointer[netip.AddrPort], n),
		redialing: make([]atomic.Bool, n),
		releases:  make(map[*quic.Conn]func()),
		againWait: make([]time.Duration, n),
	}
	t.serverConf = serverTLS(h.ident, cfg.Mode.alpn(), cfg.Mode.other().alpn(), t.otherMode)
	t.ctx, t.cancel = context.WithCancel(context.Background())
	sock, err := h.acquireDatagram(t)
	if err != nil {
		t.cancel()
		return nil, err
	}
	t.sock, t.sockStart = sock, sock.counts.stats()
	if cfg.PacketLog != nil {
		t.plog = newPacketLog(cfg.PacketLog, sess, n, cfg.Mode)
	}
	if cfg.Profile != nil {
		r := sess.Seed.PCG().Derive(fmt.Sprintf("peer/netsim/%d", sess.Self))
		t.impaired = netsim.WrapPacketConn(newRawSocket(sock.conn), *cfg.Profile, r)
		var pc net.PacketConn = t.impaired
		sock.impair.Store(&pc)
	}
	if listening != nil {
		listening()
	}
	if need <= 0 {
		close(t.ready)
	}
	// Through dialLocked, so that a redial or dialAgain of the same member
	// never runs beside this loop: two loops' handshakes could complete in
	// opposite orders at the two ends, each end keeping the connection the
	// other replaced.
	t.mu.Lock()
	for slot, id := range sess.Members {
		if id > h.ID() {
			t.dialLocked(bucket.Slot(slot), 0)
		}
	}
	t.mu.Unlock()
	stop := func(reason *error) error {
		t.mu.Lock()
		err := *reason
		t.mu.Unlock()
		t.Close()
		return err
	}
	var giveUp <-chan time.Time // set once a member dialled in the other mode
	for connected := false; !connected; {
		select {
		case <-t.ready:
			connected = true
		case <-t.mismatch:
			// The member's handshake failed with an alert that tells it
			// why. Listen a while longer, so that the alert, or its repeat
			// if the network loses it, reaches the member.
			giveUp = time.After(modeMismatchGrace)
		case <-giveUp:
			return nil, stop(&t.mismatchErr)
		case <-t.failed:
			return nil, stop(&t.failErr)
		case <-ctx.Done():
			var missing []string
			t.mu.Lock()
			for slot, id := range sess.Members {
				if bucket.Slot(slot) != t.self && id != "" && t.links[slot].Load() == nil {
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
	}
	t.wg.Go(t.monitor(cfg.SilenceWarning))
	t.log.Info("peer: datagram channel up", "members", n, "addr", sock.LocalAddr(), "mode", cfg.Mode, "impaired", cfg.Profile != nil)
	return t, nil
}

// deliver counts and logs one packet from slot and puts it on Incoming.
// An unreliable carrier's packet is dropped when Incoming is full; a
// reliable one's, where nothing may be lost, waits (and the stream's flow
// control in time holds the member back). It returns false if the
// transport closed meanwhile.
func (t *Transport) deliver(slot bucket.Slot, data []byte, reliable bool) bool {
	m := &t.members[slot]
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
	in := lockstep.Inbound{From: slot, Data: data}
	if reliable {
		select {
		case t.in <- in:
			return true
		case <-t.ctx.Done():
			return false
		}
	}
	select {
	case t.in <- in:
	default:
		t.dropped.Add(1)
		m.dropped.Add(1)
	}
	return true
}

// Send sends one datagram to member to, unreliably. data is copied; it
// must be at most wire.MaxDatagramSize bytes ([ErrDatagramTooLarge]). Send
// never blocks: in ModeDatagram it queues data for the member's writer
// goroutine, which hands it to QUIC, and drops it and returns nil when 64
// datagrams already wait (a congested path, or a member that stopped
// acknowledging: QUIC then holds its own queue of 32). It returns an error
// wrapping [ErrNoSuchMember] for a bad slot or this member's own,
// [ErrClosed] after Close, and an error when the connection to the member
// is gone, or when the path refused an earlier datagram as too large.
//
// In ModeStream Send queues data as the next frame of the member's stream
// and returns without waiting for QUIC; when the queue is full
// (TransportConfig.StreamQueue) it drops data and returns nil, as
// lockstep.Transport allows on a congested path.
func (t *Transport) Send(to bucket.Slot, data []byte) error {
	if int(to) >= len(t.links) || to == t.self {
		return fmt.Errorf("%w: slot %d of %d (self %d)", ErrNoSuchMember, to, len(t.links), t.self)
	}
	if t.ctx.Err() != nil {
		return ErrClosed
	}
	m := &t.members[to]
	if len(data) > wire.MaxDatagramSize {
		m.sendErrors.Add(1)
		return fmt.Errorf("%w: %d bytes, limit %d", ErrDatagramTooLarge, len(data), wire.MaxDatagramSize)
	}
	l := t.links[to].Load()
	if l == nil {
		m.sendErrors.Add(1)
		return fmt.Errorf("%w: slot %d", ErrNotConnected, to)
	}
	sent, err := l.send(data)
	switch {
	case errors.Is(err, ErrDatagramTooLarge):
		m.sendErrors.Add(1)
		return err
	case err != nil:
		m.sendErrors.Add(1)
		if t.ctx.Err() != nil {
			return ErrClosed
		}
		return fmt.Errorf("peer: sending to member %d: %w", to, err)
	case !sent:
		m.sendDropped.Add(1)
		return nil
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

// Agreement returns the session the transport serves.
func (t *Transport) Agreement() *Agreement { return t.sess }

// LocalAddr returns the address of the datagram socket.
func (t *Transport) LocalAddr() net.Addr { return t.sock.LocalAddr() }

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
		for i := range t.links {
			if l := t.links[i].Load(); l != nil {
				wg.Go(func() { l.close(CodeClosed, "transport closed") })
			}
		}
		wg.Wait()
		t.host.releaseDatagram(t)
		t.wg.Wait()
		t.mu.Lock()
		releases := t.releases
		t.releases = nil
		t.mu.Unlock()
		for _, release := range releases {
			release() // every connection is closed, and the dial loops ended
		}
		if t.impaired != nil {
			t.sock.impair.Store(nil)
			_ = t.impaired.Close()
		}
		if t.plog != nil {
			if err := t.plog.flush(); err != nil && t.closeErr == nil {
				t.closeErr = fmt.Errorf("peer: packet log: %w", err)
			}
		}
		close(t.in)
		t.log.Info("peer: datagram channel closed")
	})
	return t.closeErr
}

// monitor flushes the packet log and warns when nothing has arrived from
// any member for the silence limit (the adaptive send interval article's "DT" warning: a quiet
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
				if limit < 0 || len(t.links) == 1 {
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
