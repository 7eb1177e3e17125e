package netsim

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/phalanx-net/phalanx/rng"
)

// recorder is an in-memory connection that notes every write it gets and
// when (in synctest's virtual time, from its creation): one group per
// call. batchRecorder makes it a BatchWriter.
type recorder struct {
	mu     sync.Mutex
	start  time.Time
	groups []written
}

type written struct {
	at   time.Duration
	data []string
}

func (r *recorder) note(ps ...[]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := written{at: time.Since(r.start)}
	for _, p := range ps {
		g.data = append(g.data, string(p))
	}
	r.groups = append(r.groups, g)
}

func (r *recorder) WriteTo(b []byte, _ net.Addr) (int, error) { r.note(b); return len(b), nil }
func (r *recorder) ReadFrom([]byte) (int, net.Addr, error)    { return 0, nil, net.ErrClosed }
func (r *recorder) Close() error                              { return nil }
func (r *recorder) LocalAddr() net.Addr                       { return &net.UDPAddr{} }
func (r *recorder) SetDeadline(time.Time) error               { return nil }
func (r *recorder) SetReadDeadline(time.Time) error           { return nil }
func (r *recorder) SetWriteDeadline(time.Time) error          { return nil }

// batchRecorder is a recorder that writes batches in one call.
type batchRecorder struct{ *recorder }

func (b batchRecorder) WriteBatch(ps [][]byte, addrs []net.Addr) (int, error) {
	if len(ps) != len(addrs) {
		panic("WriteBatch: ps and addrs differ in length")
	}
	b.note(ps...)
	return len(ps), nil
}

// TestConnReleasesTogether: datagrams due within ReleaseWindow of the
// earliest held one leave together, in the order of their arrival times,
// when the last of them is due, never before their time; one due later
// waits for its own time. A BatchWriter gets each release in one call;
// any other connection gets the same writes one by one at the same times.
func TestConnReleasesTogether(t *testing.T) {
	for _, batch := range []bool{true, false} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{start: time.Now()}
				var inner net.PacketConn = rec
				if batch {
					inner = batchRecorder{rec}
				}
				w := WrapPacketConn(inner, constant(Conditions{Latency: 10 * time.Millisecond}), rng.New(1, 1))
				defer w.Close()
				x := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
				y := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}
				w.WriteTo([]byte("a"), x) // due at 10ms
				w.WriteTo([]byte("b"), y) // due at 10ms
				time.Sleep(ReleaseWindow / 2)
				w.WriteTo([]byte("c"), x) // due half a window later: leaves with a and b
				time.Sleep(2 * ReleaseWindow)
				w.WriteTo([]byte("d"), y) // due past the window of a: alone
				time.Sleep(20 * time.Millisecond)
				synctest.Wait()

				var want []written
				if batch {
					want = []written{
						{at: 10*time.Millisecond + ReleaseWindow/2, data: []string{"a", "b", "c"}},
						{at: 10*time.Millisecond + 5*ReleaseWindow/2, data: []string{"d"}},
					}
				} else {
					want = []written{
						{at: 10*time.Millisecond + ReleaseWindow/2, data: []string{"a"}},
						{at: 10*time.Millisecond + ReleaseWindow/2, data: []string{"b"}},
						{at: 10*time.Millisecond + ReleaseWindow/2, data: []string{"c"}},
						{at: 10*time.Millisecond + 5*ReleaseWindow/2, data: []string{"d"}},
					}
				}
				rec.mu.Lock()
				got := slices.Clone(rec.groups)
				rec.mu.Unlock()
				if !slices.EqualFunc(got, want, func(a, b written) bool { return a.at == b.at && slices.Equal(a.data, b.data) }) {
					t.Fatalf("writes %+v, want %+v", got, want)
				}
				st := w.Stats()
				if st.Releases != 2 || st.Delivered != 4 || st.WriteErrors != 0 || st.Written != 4 {
					t.Fatalf("stats %+v, want 4 written and delivered in 2 releases", st)
				}
				if w.Pending() != 0 {
					t.Fatalf("%d still held", w.Pending())
				}
			})
		})
	}
}

// TestConnWritesAloneAtItsTime: a datagram with none due near it is
// written alone, once, at its time.
func TestConnWritesAloneAtItsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{start: time.Now()}
		w := WrapPacketConn(batchRecorder{rec}, constant(Conditions{Latency: 3 * time.Millisecond}), rng.New(1, 1))
		defer w.Close()
		time.Sleep(time.Second)
		w.WriteTo([]byte("a"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
		time.Sleep(time.Second)
		synctest.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.groups) != 1 || rec.groups[0].at != time.Second+3*time.Millisecond {
			t.Fatalf("writes %+v, want a alone at 1.003s", rec.groups)
		}
		if st := w.Stats(); st.Releases != 1 {
			t.Fatalf("%d releases, want 1", st.Releases)
		}
	})
}

// TestTimedLastBy: lastBy finds the latest time at or before the limit,
// as a look at every message does.
func TestTimedLastBy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var q timed[int]
		var all []time.Duration
		for range r.IntN(100) {
			at := time.Duration(r.IntN(50))
			q.push(at, 0)
			all = append(all, at)
		}
		if r.IntN(2) == 0 && q.len() > 0 {
			at, _ := q.pop()
			i := slices.Index(all, at)
			all = slices.Delete(all, i, i+1)
		}
		limit := time.Duration(r.IntN(60))
		want := time.Duration(-1)
		for _, at := range all {
			if at <= limit {
				want = max(want, at)
			}
		}
		if got := q.lastBy(limit); got != want {
			t.Fatalf("lastBy(%v) = %v, want %v (times %v)", limit, got, want, all)
		}
	}
}
