package peer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
)

// TestSpectatorsServeSpectators: two members serve one spectator each;
// the first spectator takes both places and serves two more, which the
// members, with no room, send to it. Each member's replay names the first
// spectator alone, the others follow it, and all three end on the members'
// final hash.
func TestSpectatorsServeSpectators(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hosts := newHosts(t, 5)
	dir := t.TempDir()
	params := SessionParams{SessionID: "relay-test", Members: 2, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: 400}
	newSim := func(*Agreement) lockstep.Simulation { return &snapTally{} }
	members := startServingMembers(ctx, t, hosts[:2], params, dir)
	join := []AddrInfo{hosts[0].AddrInfo(), hosts[1].AddrInfo()}
	watch := func(h *Host, onStep func(bucket.Frame, uint64)) (Watched, error) {
		return Watch(ctx, WatchConfig{Host: h, Join: join, SessionID: params.SessionID, NewSim: newSim,
			Spectators: 2, CheckpointEvery: 50, OnStep: onStep, Logger: testLogger()})
	}
	waitFor(t, time.Minute, "the members stepping frame 10", func() bool { return members[1].Status().Frame >= 10 })
	var stepped atomic.Int64
	results := make([]Watched, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	first := make(chan struct{})
	wg.Go(func() {
		defer close(first)
		results[0], errs[0] = watch(hosts[2], func(f bucket.Frame, _ uint64) { stepped.Store(int64(f)) })
	})
	waitFor(t, time.Minute, "the first spectator stepping frame 60", func() bool {
		select {
		case <-first:
			return true // it ended: the checks below say how
		default:
			return stepped.Load() >= 60
		}
	})
	for i := 1; i < 3; i++ {
		wg.Go(func() { results[i], errs[i] = watch(hosts[2+i], nil) })
	}
	wg.Wait()
	st, err := members[0].Wait()
	if err != nil || !st.Completed {
		t.Fatalf("member: %v, %v", st, err)
	}
	if _, err := members[1].Wait(); err != nil {
		t.Fatal(err)
	}
	for i, w := range results {
		if errs[i] != nil || w.Frame != 399 || w.Hash != st.Hash {
			t.Fatalf("spectator %d: %+v, %v; members' final hash %016x", i, w, errs[i], st.Hash)
		}
		if (w.Followed > 0) != (i > 0) {
			t.Errorf("spectator %d followed %d spectators", i, w.Followed)
		}
		t.Logf("spectator %d: from frame %d (checkpoint %d), %d bytes, following %d spectators", i, w.From, w.CheckpointFrame, w.Bytes, w.Followed)
	}
	for slot := range 2 {
		_, served := servedSpectators(t, dir, slot)
		if len(served) != 1 || served[0].Detail != hosts[2].ID().String() {
			t.Errorf("member %d served %v, want the first spectator alone", slot, served)
		}
	}
}

// startServingMembers starts a member of params on each host, joining the
// others: each steps snapTally on one byte of input a frame, checkpoints
// every 50 frames, serves one spectator and records its replay into dir.
func startServingMembers(ctx context.Context, t *testing.T, hosts []*Host, params SessionParams, dir string) []*Member {
	t.Helper()
	return startEach(ctx, t, hosts, func(h *Host, join []AddrInfo) MemberConfig {
		return MemberConfig{Host: h, Params: params, Join: join,
			NewSim:          func(*Agreement) lockstep.Simulation { return &snapTally{} },
			Input:           func(f bucket.Frame) [][]byte { return [][]byte{{byte(f)}} },
			CheckpointEvery: 50, Spectators: 1, Record: &Recording{Dir: dir}, Logger: testLogger()}
	})
}

// servedSpectators verifies the replay that member slot recorded into dir
// and returns its result and the spectators it names, in order.
func servedSpectators(t *testing.T, dir string, slot int) (replay.Result, []replay.Change) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, fmt.Sprintf("member-%d.phx", slot)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := replay.Verify(f, func(replay.Header) (lockstep.Simulation, error) { return &snapTally{}, nil }, nil)
	if err != nil {
		t.Fatalf("member %d's replay: %+v, %v", slot, res, err)
	}
	var seen []replay.Change
	for _, c := range res.Changes {
		if c.Kind == replay.ChangeSpectator {
			seen = append(seen, c)
		}
	}
	return res, seen
}

// A member remembers the spectators that serve by their own addresses
// only, names the most recent first, and forgets the silent ones.
func TestRelaySet(t *testing.T) {
	hosts := newHosts(t, 2)
	a, b := hosts[0], hosts[1]
	addr := func(h *Host) string { return h.Addrs()[0].String() }
	var r relaySet
	now := time.Unix(1000, 0)
	r.note(a.ID(), []string{addr(b), "nonsense"}, now) // another's address: ignored
	if got := r.list(now, ""); len(got) != 0 {
		t.Fatalf("a spectator named another's address: %v", got)
	}
	r.note(a.ID(), []string{addr(a)}, now)
	r.note(b.ID(), []string{addr(b)}, now.Add(time.Second))
	if got := r.list(now.Add(time.Second), ""); len(got) != 2 || got[0] != addr(b) || got[1] != addr(a) {
		t.Fatalf("relays %v", got)
	}
	if got := r.list(now.Add(time.Second), b.ID()); len(got) != 1 || got[0] != addr(a) {
		t.Fatalf("relays but b %v", got)
	}
	if got := r.list(now.Add(watcherIdle+500*time.Millisecond), ""); len(got) != 1 || got[0] != addr(b) {
		t.Fatalf("after a's silence: %v", got)
	}
}

// TestServingSpectatorEndsAfterItsAskersRead: a spectator that serves
// ends, at the session's end, only once what it sent the spectators it
// serves has been read. Closing its host (its process exiting) earlier
// discards what they had not read yet, and with its server gone such a
// spectator cannot reach the last frame. Here the asker asks for the last
// three frames and reads them only once the serving spectator has ended,
// or a second after it stepped the last frame while it waits for the asker.
func TestServingSpectatorEndsAfterItsAskersRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hosts := newHosts(t, 4) // two members, the serving spectator, the asker
	const frames = 150
	params := SessionParams{SessionID: "linger-test", Members: 2, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: frames}
	newSim := func(*Agreement) lockstep.Simulation { return &snapTally{} }
	var members []*Member
	for i, h := range hosts[:2] {
		m, err := Start(ctx, MemberConfig{Host: h, Params: params, Join: othersOf(hosts[:2], i), NewSim: newSim,
			Input: func(f bucket.Frame) [][]byte { return [][]byte{{byte(f)}} }, Spectators: 1, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
	}
	waitFor(t, time.Minute, "the members stepping frame 5", func() bool { return members[1].Status().Frame >= 5 })
	var stepped atomic.Int64
	stepped.Store(-1)
	var watched Watched
	var watchErr error
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		watched, watchErr = Watch(ctx, WatchConfig{Host: hosts[2], Join: othersOf(hosts[:2], -1), SessionID: params.SessionID,
			NewSim: newSim, Spectators: 1, Logger: testLogger(), OnStep: func(f bucket.Frame, _ uint64) { stepped.Store(int64(f)) }})
	}()
	waitFor(t, time.Minute, "the spectator stepping frame 10", func() bool {
		select {
		case <-ended:
			t.Fatalf("the spectator ended: %+v, %v", watched, watchErr)
		default:
		}
		return stepped.Load() >= 10
	})
	asker := hosts[3]
	if err := asker.h.Connect(ctx, hosts[2].AddrInfo()); err != nil {
		t.Fatal(err)
	}
	f := &fetcher{h: asker, session: params.SessionID, log: orDiscard(testLogger()), follow: true}
	s, r, err := f.request(ctx, hosts[2].ID(), catchupRequest{Kind: "buckets", From: frames - 3, To: frames - 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitFor(t, time.Minute, "the spectator stepping the last frame", func() bool { return stepped.Load() == frames-1 })
	select {
	case <-ended:
		// It ended before we read: its process would exit now.
		hosts[2].Close()
		waitFor(t, time.Minute, "the connection closing", func() bool {
			return asker.h.Network().Connectedness(hosts[2].ID()) != network.Connected
		})
	case <-time.After(time.Second):
	}
	var buf []byte
	for next := bucket.Frame(frames - 3); next < frames; next++ {
		typ, body, err := readMsg(r, buf, maxBucketMessage(2))
		if typ == msgWait {
			next--
			continue
		}
		if err != nil {
			t.Fatalf("frame %d: %v (the serving spectator ended before its asker read it)", next, err)
		}
		if b, err := parseBucket(body); typ != msgBucket || err != nil || b.Frame != next {
			t.Fatalf("frame %d: message %d, %v, %v", next, typ, b, err)
		}
		buf = body
	}
	s.Close() // read: the serving spectator may end
	<-ended
	st, err := members[0].Wait()
	if err != nil || !st.Completed {
		t.Fatalf("member: %+v, %v", st, err)
	}
	if _, err := members[1].Wait(); err != nil {
		t.Fatal(err)
	}
	if watchErr != nil || watched.Frame != frames-1 || watched.Hash != st.Hash {
		t.Fatalf("serving spectator: %+v, %v; members' final hash %016x", watched, watchErr, st.Hash)
	}
}
