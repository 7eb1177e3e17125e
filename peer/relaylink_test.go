package peer

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
)

// goroutinesIn counts the goroutines whose stack runs fn.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// A member that opens packet streams again and again (each a relayed link
// that replaces the one before) leaves one writer goroutine running, the
// newest link's, not one per stream until Close.
func TestReplacedRelayedLinksStopTheirWriters(t *testing.T) {
	hosts := newHosts(t, 2)
	sessions := mustJoin(t, hosts)
	lower, higher := dialOrder(sessions)
	trs := openTransports(t, hosts, sessions, nil)
	go func() {
		for range trs[higher].Incoming() {
		}
	}()
	const writer = "(*streamSender).runRelayed"
	const streams = 20
	for i := range streams {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := hosts[lower].h.NewStream(network.WithAllowLimitedConn(ctx, "test"), hosts[higher].ID(), PacketsProtocol)
		cancel()
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		// A frame makes the member's side take the stream; the next
		// stream waits for it to arrive.
		if _, err := s.Write(appendFrame(nil, payload(sessions[lower].Self, i, 16))); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if !until(20*time.Second, func() bool { return trs[higher].Stats().Members[sessions[lower].Self].DatagramsReceived == uint64(i+1) }) {
			t.Fatalf("stream %d: its frame never arrived", i)
		}
	}
	if !until(20*time.Second, func() bool { return goroutinesIn(writer) <= 1 }) {
		t.Errorf("after %d relayed links replaced one another, %d of their writers still run; want at most 1", streams, goroutinesIn(writer))
	}
}
