package peer

import (
	"bufio"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// holdStreams opens n bucket requests from f to id for frames the member
// has not stepped, and reports how many it took (each waits for its frame,
// holding a place) and how many it refused. The streams it took stay open
// until the test ends.
func holdStreams(t *testing.T, ctx context.Context, f *fetcher, id peer.ID, n int) (taken, refused int) {
	t.Helper()
	type answer struct {
		typ byte
		err error
	}
	answers := make(chan answer, n)
	for range n {
		s, r, err := f.request(ctx, id, catchupRequest{Kind: "buckets", From: 0, To: 10})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		go func() {
			// A stream taken says it waits (every catchupKeepalive), a
			// stream refused says so at once.
			typ, _, err := readMsg(r, nil, maxRequestMessage)
			answers <- answer{typ, err}
		}()
	}
	for range n {
		a := <-answers
		switch {
		case a.err == nil && a.typ == msgWait:
			taken++
		case errors.Is(a.err, errRefused) && strings.Contains(a.err.Error(), "busy"):
			refused++
		default:
			t.Fatalf("a held stream answered %d, %v", a.typ, a.err)
		}
	}
	return taken, refused
}

// One peer cannot take every stream a member serves: past maxPeerStreams
// its streams are refused, and another member is still served.
func TestCatchupStreamsPerPeer(t *testing.T) {
	r := newCatchupRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := r.servers[0].ID()
	taken, refused := holdStreams(t, ctx, r.fetcher(t, r.joiner), server, maxCatchupStreams)
	if taken != maxPeerStreams || refused != maxCatchupStreams-maxPeerStreams {
		t.Fatalf("one peer's %d streams: %d taken, %d refused; want %d taken", maxCatchupStreams, taken, refused, maxPeerStreams)
	}
	other := r.fetcher(t, r.servers[1]) // a member too
	if _, err := other.info(ctx, server); err != nil {
		t.Fatalf("another member's info while one peer holds its streams: %v", err)
	}
}

// Spectators have a budget of their own: a crowd of them cannot take the
// streams of a member that comes back.
func TestCatchupSpectatorBudget(t *testing.T) {
	const places = 2 // a budget of spectatorStreams(2) = 4 streams
	r := newCatchupRig(t, func(srv *catchupServer) { srv.spectators = places })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := r.servers[0]
	crowd := append(newHosts(t, 2), r.stranger)
	var taken, refused int
	for _, h := range crowd {
		if err := h.h.Connect(ctx, server.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		f := &fetcher{h: h, session: r.sess.ID, log: orDiscard(testLogger())}
		tk, rf := holdStreams(t, ctx, f, server.ID(), maxPeerStreams)
		taken, refused = taken+tk, refused+rf
	}
	if want := spectatorStreams(places); taken != want || refused != len(crowd)*maxPeerStreams-want {
		t.Fatalf("spectators' %d streams: %d taken, %d refused; want %d taken", len(crowd)*maxPeerStreams, taken, refused, want)
	}
	if _, err := r.fetcher(t, r.joiner).info(ctx, server.ID()); err != nil {
		t.Fatalf("a member's info while spectators hold their streams: %v", err)
	}
}

// A joiner reads no bucket longer than a bucket of its session can be,
// even one that parses.
func TestCatchupBucketBound(t *testing.T) {
	hosts := newHosts(t, 2)
	joiner, liar := hosts[0], hosts[1]
	// Three commands of 20 KB: a well-formed bucket, but no member of a
	// session may put more than lockstep.DefaultMaxFrameBytes in a frame.
	var cmds []bucket.Command
	for slot := range 3 {
		cmds = append(cmds, bucket.Command{Slot: bucket.Slot(slot), Seq: 1, Frame: 0, Payload: make([]byte, 20_000)})
	}
	big := appendBucket(nil, 0, cmds)
	if len(big) <= maxBucketMessage(3) {
		t.Fatalf("the test's bucket of %d bytes is within the bound %d", len(big), maxBucketMessage(3))
	}
	liar.h.SetStreamHandler(CatchupProtocol, func(s network.Stream) {
		defer s.Close()
		if _, _, err := readMsg(bufio.NewReader(s), nil, maxRequestMessage); err != nil {
			return
		}
		_ = writeMsg(s, msgBucket, big)
		_ = writeMsg(s, msgEnd, nil)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := joiner.h.Connect(ctx, liar.AddrInfo()); err != nil {
		t.Fatal(err)
	}
	f := &fetcher{h: joiner, session: "bound", log: orDiscard(testLogger()), members: 3}
	out := make(chan lockstep.Bucket, 1)
	err := f.bucketRange(ctx, 0, 0, []peer.ID{liar.ID()}, 0, out)
	if !errors.Is(err, ErrCatchup) || !strings.Contains(err.Error(), "past the bound") || len(out) != 0 {
		t.Fatalf("a bucket of %d bytes for a session of 3: %d taken, err %v", len(big), len(out), err)
	}
}

// A stream's deadline is per message: a transfer longer than the idle
// time goes through while every message leaves within it.
func TestCatchupIdleIsPerMessage(t *testing.T) {
	const idle = 300 * time.Millisecond
	r := newCatchupRig(t, func(srv *catchupServer) {
		srv.idle = idle
		srv.rate = 2 * catchupChunk // a chunk every half second
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := r.archives[0]
	data := make([]byte, 4*catchupChunk) // 2 s at that rate
	for i := range data {
		data[i] = byte(i)
	}
	a.mu.Lock()
	a.cps = append(a.cps, checkpoint{frame: 49, hash: 1, data: data})
	a.mu.Unlock()
	f := r.fetcher(t, r.joiner)
	s, rd, err := f.request(ctx, r.servers[0].ID(), catchupRequest{Kind: "checkpoint", Frame: 49})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	var got []byte
	for {
		_ = s.SetReadDeadline(time.Now().Add(catchupRead))
		typ, body, err := readMsg(rd, nil, maxChunkMessage)
		if err != nil {
			t.Fatalf("after %d bytes in %v: %v", len(got), time.Since(start), err)
		}
		if typ == msgEnd {
			break
		}
		got = append(got, body...)
	}
	if len(got) != len(data) || time.Since(start) < 2*idle {
		t.Fatalf("%d of %d bytes in %v", len(got), len(data), time.Since(start))
	}
}

// The spectators' budget grows with the places a member gives them: each
// spectator it admits keeps a stream open for the live frames and may
// open another beside it.
func TestCatchupSpectatorBudgetFollowsPlaces(t *testing.T) {
	const places = 6
	r := newCatchupRig(t, func(srv *catchupServer) { srv.spectators = places })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := r.servers[0]
	crowd := newHosts(t, places-1)
	var taken, refused int
	for _, h := range crowd {
		if err := h.h.Connect(ctx, server.AddrInfo()); err != nil {
			t.Fatal(err)
		}
		f := &fetcher{h: h, session: r.sess.ID, log: orDiscard(testLogger())}
		tk, rf := holdStreams(t, ctx, f, server.ID(), 2)
		taken, refused = taken+tk, refused+rf
	}
	if taken != 2*len(crowd) || refused != 0 {
		t.Fatalf("%d spectators with %d places, two streams each: %d taken, %d refused; want every one taken", len(crowd), places, taken, refused)
	}
}
