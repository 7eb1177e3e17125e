package peer

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/quic-go/quic-go"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// tally is the tests' small simulation: its state is a running hash of
// every bucket.
type tally struct{ state uint64 }

func (s *tally) Step(f bucket.Frame, cmds []bucket.Command) {
	s.state = s.state*1099511628211 ^ lockstep.InputHash(f, cmds)
}

func (s *tally) Hash() uint64 { return s.state }

// opening is the result of a NewTransport run by openTransport.
type opening struct {
	tr  *Transport
	err error
}

// openTransport runs NewTransport in a goroutine, which ends when it
// returns (at the latest when ctx ends), and returns where its result
// arrives.
func openTransport(ctx context.Context, h *Host, s *Agreement, cfg TransportConfig) <-chan opening {
	c := make(chan opening, 1)
	go func() {
		tr, err := NewTransport(ctx, h, s, cfg)
		c <- opening{tr, err}
	}()
	return c
}

// testLogger logs to stderr when PHALANX_TEST_LOG is set, else nowhere.
// (t.Log cannot be used: libp2p goroutines may log after a test ends.)
func testLogger() *slog.Logger {
	if os.Getenv("PHALANX_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// newHosts starts n loopback hosts, closed when the test ends.
func newHosts(t *testing.T, n int) []*Host {
	t.Helper()
	hosts := make([]*Host, n)
	for i := range hosts {
		h, err := NewHost(context.Background(), HostConfig{Logger: testLogger()})
		if err != nil {
			t.Fatalf("NewHost: %v", err)
		}
		t.Cleanup(func() { h.Close() })
		hosts[i] = h
	}
	return hosts
}

// newHostWithKey starts a loopback host with the given identity.
func newHostWithKey(t *testing.T, key crypto.PrivKey) *Host {
	t.Helper()
	h, err := NewHost(context.Background(), HostConfig{Identity: key, Logger: testLogger()})
	if err != nil {
		t.Fatalf("NewHost: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// othersOf returns the addresses of every host but hosts[i].
func othersOf(hosts []*Host, i int) []peer.AddrInfo {
	var out []peer.AddrInfo
	for j, h := range hosts {
		if j != i {
			out = append(out, h.AddrInfo())
		}
	}
	return out
}

func testParams(n int) SessionParams {
	return SessionParams{SessionID: "test-session", Members: n, Sim: "demo", SimVersion: "1.0"}
}

// eachAtOnce runs f(i) for every i in [0, n) at once, each in a goroutine
// of its own, and returns their results and errors by i once all returned.
func eachAtOnce[T any](n int, f func(i int) (T, error)) ([]T, []error) {
	out := make([]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = f(i) })
	}
	wg.Wait()
	return out, errs
}

// joinAll runs Join on every host at once, with params(i), and
// returns each member's session and error.
func joinAll(t *testing.T, hosts []*Host, params func(i int) SessionParams) ([]*Agreement, []error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return eachAtOnce(len(hosts), func(i int) (*Agreement, error) {
		return Join(ctx, hosts[i], params(i), othersOf(hosts, i))
	})
}

// dialOrder returns, of two joined members, the index of the one that
// dials (the lower peer ID: slot 0) and of the one that accepts.
func dialOrder(sessions []*Agreement) (lower, higher int) {
	if sessions[0].Self == 1 {
		return 1, 0
	}
	return 0, 1
}

// mustJoin joins every host with testParams and fails the test on any error.
func mustJoin(t *testing.T, hosts []*Host) []*Agreement {
	t.Helper()
	sessions, errs := joinAll(t, hosts, func(int) SessionParams { return testParams(len(hosts)) })
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: Join: %v", i, err)
		}
	}
	return sessions
}

// openTransports opens a transport per member at once.
func openTransports(t *testing.T, hosts []*Host, sessions []*Agreement, cfg func(i int) TransportConfig) []*Transport {
	t.Helper()
	// Connections are set up over the impaired socket: on the bad profile a
	// handshake that meets a loss burst waits out QUIC's doubling probe
	// timeouts, several seconds under the race detector on a busy machine, and
	// several handshakes of one member may meet bursts in a row.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	trs, errs := eachAtOnce(len(hosts), func(i int) (*Transport, error) {
		c := TransportConfig{Logger: testLogger()}
		if cfg != nil {
			c = cfg(i)
		}
		return NewTransport(ctx, hosts[i], sessions[i], c)
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: NewTransport: %v", i, err)
		}
		t.Cleanup(func() { trs[i].Close() })
	}
	return trs
}

// rawQUIC returns a QUIC transport on a loopback UDP socket of its own,
// closed when the test ends: a client outside any host.
func rawQUIC(t *testing.T) *quic.Transport {
	t.Helper()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	qt := &quic.Transport{Conn: udp}
	t.Cleanup(func() {
		qt.Close()
		udp.Close()
	})
	return qt
}

// until reports whether cond holds within timeout, checking it every few
// milliseconds. Real sockets leave nothing else to wait on for a figure
// such as a count in Stats; the timeout is a generous bound, not a goal.
func until(timeout time.Duration, cond func() bool) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-limit.C:
			return cond()
		}
	}
	return true
}

// waitFor waits until cond holds and fails the test, naming what it waited
// for, if it does not within timeout. Call it from the test's goroutine.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !until(timeout, cond) {
		t.Fatalf("not within %v: %s", timeout, what)
	}
}

// waitFrame waits until m has stepped frame f, and fails the test if m
// ends first or ctx ends. Call it from the test's goroutine.
func waitFrame(ctx context.Context, t testing.TB, m *Member, f bucket.Frame) {
	t.Helper()
	for m.Status().Frame < f {
		select {
		case <-m.Done():
			t.Fatalf("member ended before frame %d: %v", f, m.Status())
		case <-ctx.Done():
			t.Fatalf("frame %d not reached: %v", f, m.Status())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sameFinalHash waits for every member to complete its session and fails
// the test unless they all did and end on the same hash.
func sameFinalHash(t testing.TB, members ...*Member) {
	t.Helper()
	var hashes []uint64
	for _, m := range members {
		st, err := m.Wait()
		if err != nil || !st.Completed {
			t.Fatalf("member %d: completed %v, err %v", st.Slot, st.Completed, err)
		}
		hashes = append(hashes, st.Hash)
	}
	for _, h := range hashes[1:] {
		if h != hashes[0] {
			t.Fatalf("final hashes differ: %016x", hashes)
		}
	}
}

// pause waits d on a timer: pacing for what a test sends, not a wait for
// anything to happen.
func pause(d time.Duration) { <-time.After(d) }

// settleGoroutines waits until at most limit goroutines run, or fails the
// test with their stacks after a while.
func settleGoroutines(t *testing.T, limit int) {
	t.Helper()
	if !until(10*time.Second, func() bool { return runtime.NumGoroutine() <= limit }) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%d goroutines still running, want at most %d:\n%s", runtime.NumGoroutine(), limit, buf)
	}
}

func errorContains(t *testing.T, who string, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want one containing %q", who, parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not contain %q", who, err, p)
		}
	}
}

func slotName(i int) string { return fmt.Sprintf("member %d", i) }

// newTestRelay starts a relay on loopback as cfg says, logging to the
// test's logger, and closes it when the test ends.
func newTestRelay(t *testing.T, ctx context.Context, cfg RelayConfig) *Relay {
	t.Helper()
	cfg.Logger = testLogger()
	r, err := NewRelay(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// startEach starts a member on each of hosts, each joining the others.
func startEach(ctx context.Context, t *testing.T, hosts []*Host, cfg func(h *Host, join []AddrInfo) MemberConfig) []*Member {
	t.Helper()
	var members []*Member
	for i, h := range hosts {
		m, err := Start(ctx, cfg(h, othersOf(hosts, i)))
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
	}
	return members
}
