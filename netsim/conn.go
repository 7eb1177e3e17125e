package netsim

import (
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/rng"
)

// MaxPending bounds how many datagrams a [Conn] holds back at once. A
// datagram that would exceed it is dropped and counted in
// ConnStats.Overflow, so a long delay on a fast sender cannot exhaust
// memory.
const MaxPending = 4096

// MaxDelaySamples is how many one-way delays ConnStats.Delays keeps.
const MaxDelaySamples = 1024

// MaxLinks bounds how many destination addresses a [Conn] keeps a [Link]
// for. A socket that answers whoever writes to it (a QUIC listener) would
// otherwise keep one per address that ever reached it, spoofed or not.
// When a new destination would pass the bound, the link idle longest is
// forgotten.
const MaxLinks = 1024

// ReleaseWindow is how late a [Conn] may write a held datagram so that
// those due close together leave together: when the earliest held
// datagram is due, the Conn waits for the last one due within
// ReleaseWindow of it and writes them all at once, in one wake-up of its
// goroutine (and, on a [BatchWriter], one call). No datagram leaves
// before its time, none more than ReleaseWindow after it, and each
// destination's datagrams leave in the order of their arrival times. A
// millisecond is the resolution at which the Go runtime, idle, sleeps
// anyway.
const ReleaseWindow = time.Millisecond

// BatchWriter is a connection that writes several datagrams in one call
// (sendmmsg on Linux). When the connection a [Conn] wraps is one, the
// datagrams the Conn releases together go out in one call.
type BatchWriter interface {
	// WriteBatch writes ps[i] to addrs[i] in order (len(addrs) ==
	// len(ps)) and returns how many it wrote; when that is fewer than
	// len(ps), err says why the next one failed. A Conn calls it from
	// one goroutine at a time and keeps neither slice.
	WriteBatch(ps [][]byte, addrs []net.Addr) (int, error)
}

// LinkIdle is how long a destination may go without a datagram before a
// [Conn] forgets its link. A destination written to again later starts a
// fresh link (its streams from the start), as a new path would.
const LinkIdle = time.Minute

// ConnStats counts what a [Conn] did with the datagrams written to it, and
// what was read through it. Counters only grow.
type ConnStats struct {
	Releases    uint64 // wake-ups that wrote held datagrams (each writes one or more)
	Written     uint64 // datagrams passed to WriteTo
	Bytes       uint64 // their total size
	QueueDrops  uint64 // dropped by the uplink queue (Bandwidth, Queue)
	Lost        uint64 // lost on a link (Loss, Burst)
	Duplicated  uint64 // sent twice
	Overflow    uint64 // dropped because MaxPending datagrams were already held
	Delivered   uint64 // copies written to the wrapped connection
	WriteErrors uint64 // writes to the wrapped connection that failed
	Read        uint64 // datagrams returned by ReadFrom
	ReadBytes   uint64 // their total size

	// Delays are the one-way delays the models gave the most recent
	// delivered datagrams (from WriteTo to the arrival of the first copy,
	// uplink queueing included), at most MaxDelaySamples, oldest first.
	Delays []time.Duration
}

// Conn is a net.PacketConn that impairs what is written to it: each
// datagram passes through one [Uplink] shared by all destinations, then
// through a [Link] of its own destination address, and is written to the
// wrapped connection at its arrival time (twice if duplicated, never if
// lost), or up to [ReleaseWindow] after it together with those due close
// to it. Time counts from the wrap: phase 1 of the profile begins then.
// Reading is not impaired: wrap both ends to impair both directions.
//
// The decisions are those of the models: given the same sequence of writes
// (sizes and destinations) and the same generator they are the same; only
// the timing of real writes adds the scheduler's latency (well under a
// millisecond on an idle machine).
//
// A Conn is safe for concurrent use. One goroutine, started by
// [WrapPacketConn] and stopped by [Conn.Close], writes the held datagrams;
// it wakes only when they are due (a write arms its one timer, it does not
// wake it).
type Conn struct {
	inner net.PacketConn
	start time.Time
	root  *rng.PCG

	mu      sync.Mutex
	uplink  *Uplink
	profile Profile
	links   map[string]*connLink
	swept   time.Duration // when idle links were last looked for
	queue   timed[pending]
	timer   *time.Timer   // fires when the held datagrams are to be released
	armed   time.Duration // when timer fires; -1: stopped
	closed  bool
	stats   ConnStats
	delays  []time.Duration // ring of the last MaxDelaySamples delays
	next    int             // where the ring writes next

	done chan struct{}
	wg   sync.WaitGroup
}

// WrapPacketConn returns c with its outgoing datagrams impaired by profile
// p. Each destination address gets its own link, drawing from
// r.Derive("netsim/conn").Derive(address.String()), so links do not depend
// on the order destinations first appear in; r itself is neither kept nor
// advanced. A destination's link is forgotten after LinkIdle without
// datagrams, or when MaxLinks others are more recent. The returned Conn
// owns c: closing it closes c.
//
// It panics if p is not valid (see [Profile.Validate]) or r is nil.
func WrapPacketConn(c net.PacketConn, p Profile, r *rng.PCG) *Conn {
	if r == nil {
		panic("netsim: WrapPacketConn: nil generator")
	}
	w := &Conn{
		inner:   c,
		start:   time.Now(),
		root:    r.Derive("netsim/conn"),
		uplink:  NewUplink(p),
		profile: Profile{Name: p.Name, Phases: slices.Clone(p.Phases)},
		links:   make(map[string]*connLink),
		timer:   time.NewTimer(time.Hour),
		armed:   -1,
		done:    make(chan struct{}),
	}
	w.timer.Stop()
	w.wg.Add(1)
	go w.run()
	return w
}

// WriteTo impairs one datagram to addr and returns at once: the datagram is
// copied and written later, or dropped. Like a real network, a lost or
// dropped datagram still reports success. After Close it returns an error
// wrapping net.ErrClosed.
func (w *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, &net.OpError{Op: "write", Net: "udp", Addr: addr, Err: net.ErrClosed}
	}
	now := time.Since(w.start)
	w.stats.Written++
	w.stats.Bytes += uint64(len(b))
	depart, ok := w.uplink.Admit(now, len(b))
	if !ok {
		w.stats.QueueDrops++
		return len(b), nil
	}
	d := w.link(now, addr.String()).Send(depart, len(b))
	if d.Lost() {
		w.stats.Lost++
		return len(b), nil
	}
	if d.Copies == 2 {
		w.stats.Duplicated++
	}
	if len(w.delays) < MaxDelaySamples {
		w.delays = append(w.delays, d.Arrival[0]-now)
	} else {
		w.delays[w.next] = d.Arrival[0] - now
		w.next = (w.next + 1) % MaxDelaySamples
	}
	data := append([]byte(nil), b...)
	for _, at := range d.Arrival[:d.Copies] {
		if w.queue.len() >= MaxPending {
			w.stats.Overflow++
			continue
		}
		w.queue.push(at, pending{data: data, addr: addr})
	}
	w.arm(now)
	return len(b), nil
}

// connLink is the link to one destination, with when it was last used.
type connLink struct {
	*Link
	used time.Duration
	seq  uint64 // the Conn's write count at its last use: orders ties of used
}

// link returns the link to the destination key at now, making one if
// needed, and forgets links idle for LinkIdle or, past MaxLinks, the one
// idle longest. The caller holds w.mu.
func (w *Conn) link(now time.Duration, key string) *Link {
	if now-w.swept >= LinkIdle/4 {
		w.swept = now
		for k, l := range w.links {
			if now-l.used >= LinkIdle {
				delete(w.links, k)
			}
		}
	}
	l := w.links[key]
	if l == nil {
		if len(w.links) >= MaxLinks {
			oldest := ""
			for k, c := range w.links {
				if oldest == "" || c.seq < w.links[oldest].seq {
					oldest = k
				}
			}
			delete(w.links, oldest)
		}
		l = &connLink{Link: NewLink(w.profile, w.root.Derive(key))}
		w.links[key] = l
	}
	l.used, l.seq = now, w.stats.Written
	return l.Link
}

// releaseAt returns when the held datagrams are next to be written: when
// the last of those due within ReleaseWindow of the earliest is due; ok is
// false when none is held. The caller holds w.mu.
func (w *Conn) releaseAt() (at time.Duration, ok bool) {
	first, ok := w.queue.peek()
	if !ok {
		return 0, false
	}
	return w.queue.lastBy(first + ReleaseWindow), true
}

// arm sets the timer for the next release, as of now. The caller holds
// w.mu.
func (w *Conn) arm(now time.Duration) {
	at, ok := w.releaseAt()
	switch {
	case !ok:
		if w.armed >= 0 {
			w.timer.Stop()
			w.armed = -1
		}
	case at != w.armed:
		w.timer.Reset(max(at-now, 0))
		w.armed = at
	}
}

// run writes held datagrams when their time comes.
func (w *Conn) run() {
	defer w.wg.Done()
	var due []pending
	var ps [][]byte
	var addrs []net.Addr
	batch, _ := w.inner.(BatchWriter)
	for {
		select {
		case <-w.done:
			return
		case <-w.timer.C:
		}
		w.mu.Lock()
		now := time.Since(w.start)
		w.armed = -1
		due = due[:0]
		if at, ok := w.releaseAt(); ok && at <= now {
			for at, ok := w.queue.peek(); ok && at <= now; at, ok = w.queue.peek() {
				_, p := w.queue.pop()
				due = append(due, p)
			}
		}
		w.arm(now)
		w.mu.Unlock()
		if len(due) == 0 {
			continue
		}

		var delivered, failed uint64
		if batch != nil {
			ps, addrs = ps[:0], addrs[:0]
			for _, p := range due {
				ps, addrs = append(ps, p.data), append(addrs, p.addr)
			}
			for len(ps) > 0 {
				n, err := batch.WriteBatch(ps, addrs)
				delivered += uint64(n)
				if n < len(ps) && err != nil {
					failed++
					n++ // the one that failed is dropped, as a single write's would be
				}
				if n == 0 {
					n = len(ps) // no progress and no error: give the rest up
					failed += uint64(len(ps))
				}
				ps, addrs = ps[n:], addrs[n:]
			}
			clear(due) // let go of the data
		} else {
			for i, p := range due {
				if _, err := w.inner.WriteTo(p.data, p.addr); err != nil {
					failed++
				} else {
					delivered++
				}
				due[i] = pending{}
			}
		}
		w.mu.Lock()
		w.stats.Releases++
		w.stats.Delivered += delivered
		w.stats.WriteErrors += failed
		w.mu.Unlock()
	}
}

// Stats returns the counters; Delays is the caller's.
func (w *Conn) Stats() ConnStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Delays = make([]time.Duration, 0, len(w.delays))
	s.Delays = append(s.Delays, w.delays[w.next:]...)
	s.Delays = append(s.Delays, w.delays[:w.next]...)
	return s
}

// linkCount returns how many destinations have a link.
func (w *Conn) linkCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.links)
}

// Pending returns how many datagrams are held, waiting for their time.
func (w *Conn) Pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queue.len()
}

// Close discards the held datagrams, stops the goroutine and closes the
// wrapped connection. Close is idempotent; later calls return nil.
func (w *Conn) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.queue = timed[pending]{}
	w.timer.Stop()
	w.armed = -1
	w.mu.Unlock()
	close(w.done)
	w.wg.Wait()
	return w.inner.Close()
}

// ReadFrom reads from the wrapped connection, unimpaired, and counts what
// it read.
func (w *Conn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := w.inner.ReadFrom(b)
	if err == nil {
		w.mu.Lock()
		w.stats.Read++
		w.stats.ReadBytes += uint64(n)
		w.mu.Unlock()
	}
	return n, addr, err
}

// LocalAddr returns the wrapped connection's local address.
func (w *Conn) LocalAddr() net.Addr { return w.inner.LocalAddr() }

// SetDeadline sets the wrapped connection's deadlines. A write deadline
// applies to the delayed writes, not to WriteTo, which never blocks.
func (w *Conn) SetDeadline(t time.Time) error { return w.inner.SetDeadline(t) }

// SetReadDeadline sets the wrapped connection's read deadline.
func (w *Conn) SetReadDeadline(t time.Time) error { return w.inner.SetReadDeadline(t) }

// SetWriteDeadline sets the wrapped connection's write deadline (see
// SetDeadline).
func (w *Conn) SetWriteDeadline(t time.Time) error { return w.inner.SetWriteDeadline(t) }

// errNoBuffer is returned by SetReadBuffer and SetWriteBuffer when the
// wrapped connection has no such setting.
var errNoBuffer = errors.New("netsim: wrapped connection has no buffer size setting")

// SetReadBuffer sets the wrapped connection's receive buffer size, if it
// has one (as a *net.UDPConn does).
func (w *Conn) SetReadBuffer(n int) error {
	if c, ok := w.inner.(interface{ SetReadBuffer(int) error }); ok {
		return c.SetReadBuffer(n)
	}
	return errNoBuffer
}

// SetWriteBuffer sets the wrapped connection's send buffer size, if it has
// one.
func (w *Conn) SetWriteBuffer(n int) error {
	if c, ok := w.inner.(interface{ SetWriteBuffer(int) error }); ok {
		return c.SetWriteBuffer(n)
	}
	return errNoBuffer
}

// pending is a held datagram (queued at its arrival time). Copies of one
// datagram share data.
type pending struct {
	data []byte
	addr net.Addr
}
