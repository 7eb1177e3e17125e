package netsim

import (
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/phalanx-net/phalanx/rng"
)

// udpPair returns two UDP sockets on the IPv4 loopback, closed at the end.
func udpPair(t *testing.T) (a, b *net.UDPConn) {
	t.Helper()
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	return listen(), listen()
}

type arrival struct {
	seq   uint32
	delay time.Duration
}

// receive reads datagrams that carry (seq, send time) until none arrives for
// quiet.
func receive(t *testing.T, c *net.UDPConn, quiet time.Duration) []arrival {
	t.Helper()
	var got []arrival
	buf := make([]byte, 2048)
	for {
		c.SetReadDeadline(time.Now().Add(quiet))
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return got
			}
			t.Fatal(err)
		}
		if n < 12 {
			t.Fatalf("short datagram: %d bytes", n)
		}
		sent := time.Unix(0, int64(binary.BigEndian.Uint64(buf[4:12])))
		got = append(got, arrival{seq: binary.BigEndian.Uint32(buf), delay: time.Since(sent)})
	}
}

func stamp(seq int, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, uint32(seq))
	binary.BigEndian.PutUint64(b[4:], uint64(time.Now().UnixNano()))
	return b
}

func TestConnDelaysAndLoses(t *testing.T) {
	a, b := udpPair(t)
	p := constant(Conditions{Latency: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 300_000})
	r := rng.New(7, 7)
	w := WrapPacketConn(a, p, r)
	defer w.Close()

	const n = 300
	for seq := range n {
		if k, err := w.WriteTo(stamp(seq, 100), b.LocalAddr()); err != nil || k != 100 {
			t.Fatalf("WriteTo = %d, %v", k, err)
		}
	}
	got := receive(t, b, 300*time.Millisecond)
	st := w.Stats()

	// The same model, driven alike, loses the same datagrams.
	model := NewLink(p, r.Derive("netsim/conn").Derive(b.LocalAddr().String()))
	var lost uint64
	for range n {
		if model.Send(0, 100).Lost() {
			lost++
		}
	}
	if st.Lost != lost || st.Written != n || st.Delivered != n-lost {
		t.Fatalf("stats %+v, want %d written, %d lost as the model says", st, n, lost)
	}
	if uint64(len(got)) != n-lost {
		t.Fatalf("received %d, want %d", len(got), n-lost)
	}
	if lost < 60 || lost > 120 {
		t.Errorf("lost %d of %d, want about 30%%", lost, n)
	}
	for _, a := range got {
		if a.delay < 20*time.Millisecond {
			t.Fatalf("datagram %d arrived after %v, before the 20ms latency", a.seq, a.delay)
		}
	}
	if len(st.Delays) != len(got) {
		t.Fatalf("%d delay samples, want one per delivered datagram (%d)", len(st.Delays), len(got))
	}
	for _, d := range st.Delays {
		if d < 20*time.Millisecond || d > 20*time.Millisecond+19*2*time.Millisecond/3+time.Millisecond {
			t.Fatalf("delay sample %v outside latency + jitter", d)
		}
	}

	// Reads through the wrapper are counted. The pings go through a
	// lossless wrapper: through w, whose link draws from a stream derived
	// from b's port, all three were lost in about 2.7% of runs.
	rw := WrapPacketConn(b, p, rng.New(8, 8))
	defer rw.Close()
	c, _ := udpPair(t)
	lossless := WrapPacketConn(c, constant(Conditions{Latency: 20 * time.Millisecond}), rng.New(9, 9))
	defer lossless.Close()
	for range 3 {
		lossless.WriteTo([]byte("ping"), b.LocalAddr())
	}
	buf := make([]byte, 64)
	rw.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	for {
		if _, _, err := rw.ReadFrom(buf); err != nil {
			break
		}
	}
	if rs := rw.Stats(); rs.Read != 3 || rs.ReadBytes != 4*rs.Read {
		t.Fatalf("read stats %+v", rs)
	}
	if w.Pending() != 0 {
		t.Errorf("%d still pending", w.Pending())
	}
}

func TestConnDuplicatesAndReorders(t *testing.T) {
	a, b := udpPair(t)
	w := WrapPacketConn(a, constant(Conditions{Latency: time.Millisecond, Duplicate: Always, Reorder: 200_000, ReorderDelay: 10 * time.Millisecond}), rng.New(1, 2))
	defer w.Close()
	const n = 50
	for seq := range n {
		w.WriteTo(stamp(seq, 20), b.LocalAddr())
	}
	got := receive(t, b, 200*time.Millisecond)
	if len(got) != 2*n {
		t.Fatalf("received %d, want every one of %d twice", len(got), n)
	}
	count := make(map[uint32]int)
	inversions := 0
	for i, a := range got {
		count[a.seq]++
		if i > 0 && a.seq < got[i-1].seq {
			inversions++
		}
	}
	for seq := range uint32(n) {
		if count[seq] != 2 {
			t.Fatalf("datagram %d arrived %d times", seq, count[seq])
		}
	}
	if inversions == 0 {
		t.Error("nothing reordered")
	}
}

// The uplink's cap spaces datagrams and its queue drops the excess.
func TestConnBandwidth(t *testing.T) {
	a, b := udpPair(t)
	// 20 kB/s: a 500-byte datagram takes 25 ms; the queue holds 100 ms.
	w := WrapPacketConn(a, constant(Conditions{Bandwidth: 20_000, Queue: 100 * time.Millisecond}), rng.New(3, 3))
	defer w.Close()
	const n = 20
	for seq := range n {
		w.WriteTo(stamp(seq, 500), b.LocalAddr())
	}
	got := receive(t, b, 300*time.Millisecond)
	st := w.Stats()
	if st.QueueDrops == 0 || uint64(len(got)) != n-st.QueueDrops {
		t.Fatalf("received %d, stats %+v: want the queue to drop some and deliver the rest", len(got), st)
	}
	if len(got) < 4 || len(got) > 6 { // 1 in service + 4 queued (waits of 25..100 ms)
		t.Errorf("received %d, want about 5", len(got))
	}
	if last := got[len(got)-1].delay; last < time.Duration(len(got))*25*time.Millisecond {
		t.Errorf("last of %d arrived after %v: faster than the cap", len(got), last)
	}
}

func TestConnConcurrentAndClose(t *testing.T) {
	before := runtime.NumGoroutine()
	a, b := udpPair(t)
	w := WrapPacketConn(a, constant(Conditions{Latency: 5 * time.Millisecond}), rng.New(4, 4))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 25 {
				w.WriteTo(stamp(g*100+i, 16), b.LocalAddr())
			}
		})
	}
	wg.Wait()
	if got := receive(t, b, 200*time.Millisecond); len(got) != 100 {
		t.Fatalf("received %d, want 100", len(got))
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Close drops what is held, stops the goroutine and closes the socket.
	c, _ := udpPair(t)
	slow := WrapPacketConn(c, constant(Conditions{Latency: time.Hour}), rng.New(5, 5))
	slow.WriteTo(stamp(0, 16), b.LocalAddr())
	if slow.Pending() != 1 {
		t.Fatalf("pending %d, want 1", slow.Pending())
	}
	if err := slow.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteTo([]byte{1}, b.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the wrapped socket is still open: %v", err)
	}
	if err := slow.Close(); err != nil {
		t.Fatalf("Close twice: %v", err)
	}
	if _, err := slow.WriteTo([]byte{1}, b.LocalAddr()); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WriteTo after Close: %v, want net.ErrClosed", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWrapPacketConnPanics(t *testing.T) {
	a, _ := udpPair(t)
	mustPanic(t, "invalid profile", func() { WrapPacketConn(a, Profile{}, rng.New(1, 1)) })
	mustPanic(t, "nil generator", func() { WrapPacketConn(a, constant(Conditions{}), nil) })
}

// TestConnForgetsLinks: the per-destination links are bounded by MaxLinks
// (the one idle longest goes) and forgotten after LinkIdle without
// datagrams, so writing to ever new addresses does not grow the wrapper.
func TestConnForgetsLinks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := udpPair(t)
		// Everything is lost: the test needs the links, not the datagrams.
		w := WrapPacketConn(a, constant(Conditions{Loss: Always}), rng.New(6, 6))
		defer w.Close()
		to := func(port int) net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port} }
		for port := 1; port <= MaxLinks+100; port++ {
			w.WriteTo([]byte{1}, to(port))
		}
		if n := w.linkCount(); n != MaxLinks {
			t.Fatalf("%d links after %d destinations, want %d", n, MaxLinks+100, MaxLinks)
		}
		// The most recent destinations kept their links; the first went.
		w.mu.Lock()
		_, first := w.links[to(1).String()]
		_, last := w.links[to(MaxLinks+100).String()]
		w.mu.Unlock()
		if first || !last {
			t.Errorf("first destination kept: %v, last kept: %v", first, last)
		}

		time.Sleep(LinkIdle / 2)
		w.WriteTo([]byte{1}, to(1)) // keeps one destination busy
		time.Sleep(LinkIdle / 2)
		w.WriteTo([]byte{1}, to(2))
		if n := w.linkCount(); n != 2 {
			t.Errorf("%d links after the others were idle for %v, want 2", n, LinkIdle)
		}
		if st := w.Stats(); st.Written != MaxLinks+102 || st.Lost != st.Written {
			t.Errorf("stats %+v", st)
		}
	})
}
