package peer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

func TestBucketEncodingRoundTrip(t *testing.T) {
	cmds := []bucket.Command{{Slot: 0, Seq: 7, Frame: 300, Payload: []byte("move")}, {Slot: 63, Seq: 1 << 31, Frame: 300}}
	enc := appendBucket(nil, 300, cmds)
	b, err := parseBucket(enc)
	if err != nil || b.Frame != 300 || len(b.Commands) != 2 || !bytes.Equal(b.Commands[0].Payload, []byte("move")) ||
		b.Commands[1].Slot != 63 || b.Commands[1].Seq != 1<<31 || b.Commands[1].Frame != 300 {
		t.Fatalf("round trip: %+v, %v", b, err)
	}
	for i := range len(enc) {
		if _, err := parseBucket(enc[:i]); err == nil {
			t.Errorf("a bucket cut to %d of %d bytes parses", i, len(enc))
		}
	}
	if _, err := parseBucket(append(enc, 0)); err == nil {
		t.Error("a bucket with a trailing byte parses")
	}
}

// The archive keeps buckets back to back and serves each as encoded;
// with checkpoints it holds those since the older of two, without them
// every bucket until its limit, then it forgets the oldest quarter.
func TestArchiveBounded(t *testing.T) {
	ctx := context.Background()
	cmds := func(f bucket.Frame) []bucket.Command {
		if f%3 != 0 {
			return nil
		}
		return []bucket.Command{{Slot: 1, Seq: uint32(f / 3), Frame: f, Payload: []byte{byte(f), 1, 2}}}
	}
	check := func(a *archive, from, next bucket.Frame) {
		t.Helper()
		_, gotFrom, gotNext := a.state()
		if gotFrom != from || gotNext != next {
			t.Fatalf("holds frames %d to %d, want %d to %d", gotFrom, gotNext-1, from, next-1)
		}
		for f := from; f < next; f++ {
			enc, err := a.bucketAt(ctx, nil, f)
			if err != nil || !bytes.Equal(enc, appendBucket(nil, f, cmds(f))) {
				t.Fatalf("frame %d: %x, %v", f, enc, err)
			}
		}
		if _, err := a.bucketAt(ctx, nil, from-1); from > 0 && !errors.Is(err, errGone) {
			t.Fatalf("frame %d, before the oldest held: %v", from-1, err)
		}
	}
	snaps := newArchive(100)
	for f := range bucket.Frame(1000) {
		snaps.keep(f, cmds(f), uint64(f), &snapTally{})
	}
	check(snaps, 900, 1000) // checkpoints after 899 and 999

	plain := newArchive(0)
	plain.limit = 4000
	held := 0
	for f := range bucket.Frame(2000) {
		plain.keep(f, cmds(f), 0, nil)
		held = max(held, len(plain.log)+4*len(plain.ends))
	}
	if held > plain.limit {
		t.Fatalf("held %d bytes, limit %d", held, plain.limit)
	}
	_, from, _ := plain.state()
	if from == 0 {
		t.Fatal("nothing forgotten at the limit")
	}
	check(plain, from, 2000)
}

// catchupRig is two members serving catch-ups from archives the test
// fills, a joiner of the same session and a stranger.
type catchupRig struct {
	servers  []*Host
	joiner   *Host
	stranger *Host
	archives []*archive
	sess     *Agreement
}

func newCatchupRig(t *testing.T, configure ...func(*catchupServer)) *catchupRig {
	t.Helper()
	hosts := newHosts(t, 4)
	r := &catchupRig{servers: hosts[:2], joiner: hosts[2], stranger: hosts[3]}
	ids := []peer.ID{hosts[0].ID(), hosts[1].ID(), hosts[2].ID()}
	slices.Sort(ids)
	r.sess = &Agreement{ID: "catchup-test", Params: testParams(3).withDefaults(), Members: ids,
		Endpoints: make([]netip.AddrPort, 3), Start: time.Now()}
	for _, h := range r.servers {
		sess := *r.sess
		sess.Self, _ = sess.Slot(h.ID())
		a := newArchive(50)
		r.archives = append(r.archives, a)
		srv := &catchupServer{sess: &sess, arch: a, live: func() uint64 { return 7 },
			log: slog.New(slog.DiscardHandler), ctx: context.Background()}
		for _, c := range configure {
			c(srv)
		}
		h.catchup.Store(srv)
	}
	return r
}

func (r *catchupRig) fetcher(t *testing.T, from *Host) *fetcher {
	t.Helper()
	for _, h := range r.servers {
		if h == from {
			continue
		}
		if err := from.h.Connect(context.Background(), h.AddrInfo()); err != nil {
			t.Fatal(err)
		}
	}
	return &fetcher{h: from, session: r.sess.ID, log: slog.New(slog.DiscardHandler)}
}

// frameCmds are the test's commands of frame f.
func frameCmds(f bucket.Frame) []bucket.Command {
	return []bucket.Command{{Slot: bucket.Slot(f % 3), Seq: uint32(f), Frame: f, Payload: []byte{byte(f), byte(f >> 8), 1, 2, 3}}}
}

// TestCatchupResumes: the first server holds frames 0 to 59 and no
// checkpoint of frame 99; the second holds everything. The joiner's
// checkpoint range for the first is refused and taken from the second,
// and its bucket window from the first breaks after frame 59 and resumes
// from frame 60 on the second; what it gets equals what was kept.
func TestCatchupResumes(t *testing.T) {
	r := newCatchupRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sim := &snapTally{}
	var want []byte
	for f := range bucket.Frame(100) {
		cmds := frameCmds(f)
		sim.Step(f, cmds)
		if f < 60 {
			r.archives[0].keep(f, cmds, sim.Hash(), sim)
		}
		r.archives[1].keep(f, cmds, sim.Hash(), sim)
		if f == 99 {
			want = sim.AppendSnapshot(nil)
		}
	}
	r.archives[0].close()
	f := r.fetcher(t, r.joiner)
	ids := []peer.ID{r.servers[0].ID(), r.servers[1].ID()}
	in, err := f.info(ctx, ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if in.ID != r.sess.ID || in.Stepped != 99 || len(in.Checkpoints) != 2 || in.Checkpoints[1].Frame != 99 {
		t.Fatalf("info %+v", in)
	}
	got, err := f.checkpoint(ctx, in.Checkpoints[1], ids)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("checkpoint: %d bytes, equal %v, err %v", len(got), bytes.Equal(got, want), err)
	}
	var stepped []bucket.Frame
	err = f.buckets(ctx, 0, 99, ids, func(b lockstep.Bucket) error {
		if !slices.EqualFunc(b.Commands, frameCmds(b.Frame), func(a, b bucket.Command) bool {
			return a.Slot == b.Slot && a.Seq == b.Seq && a.Frame == b.Frame && bytes.Equal(a.Payload, b.Payload)
		}) {
			t.Errorf("frame %d: %+v", b.Frame, b.Commands)
		}
		stepped = append(stepped, b.Frame)
		return nil
	})
	if err != nil || len(stepped) != 100 || stepped[0] != 0 || stepped[99] != 99 {
		t.Fatalf("buckets: %d frames, err %v", len(stepped), err)
	}
	// The first server sent the frames it held (and nothing of the
	// checkpoint it does not hold): the window resumed on the second.
	var held int64
	for f := range bucket.Frame(60) {
		enc := appendBucket(nil, f, frameCmds(f))
		held += int64(len(enc)) + 2 // type and a one-byte length
	}
	if sent := r.servers[0].catchup.Load().sent.Load(); sent != held {
		t.Errorf("the first server sent %d bytes, want the %d of frames 0 to 59", sent, held)
	}
}

// TestCatchupRefusesStrangers: a peer that is no member of the session
// gets a refusal, not the session.
func TestCatchupRefusesStrangers(t *testing.T) {
	r := newCatchupRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := r.fetcher(t, r.stranger)
	_, err := f.info(ctx, r.servers[0].ID())
	if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "not a member") {
		t.Fatalf("a stranger's info: %v", err)
	}
}

func TestWatcherPlaces(t *testing.T) {
	var w watcherSet
	now := time.Unix(1000, 0)
	a, b, c := peer.ID("a"), peer.ID("b"), peer.ID("c")
	admit := func(p peer.ID, at time.Time, wantOK, wantFresh bool) {
		t.Helper()
		if ok, fresh := w.admit(p, at, 2); ok != wantOK || fresh != wantFresh {
			t.Fatalf("%s at %v: admitted %v, fresh %v; want %v, %v", p, at.Sub(now), ok, fresh, wantOK, wantFresh)
		}
	}
	admit(a, now, true, true)
	admit(b, now, true, true)
	admit(a, now.Add(time.Second), true, false) // a again: its place, not a new spectator
	admit(c, now.Add(2*time.Second), false, false)
	// b made no request for longer than watcherIdle: its place is free.
	admit(c, now.Add(watcherIdle+500*time.Millisecond), true, true)
}

// A member vouches for a checkpoint once, however often it lists it: one
// member's two entries are not two members' word.
func TestVouchedCountsMembers(t *testing.T) {
	cp := cpInfo{Frame: 199, Hash: 7, Size: 10}
	evil := &catchupInfo{Checkpoints: []cpInfo{cp, cp}}
	other := &catchupInfo{Checkpoints: []cpInfo{{Frame: 199, Hash: 8, Size: 10}}}
	ids := []peer.ID{"evil", "other"}
	if _, holders := vouched([]*catchupInfo{evil, other}, ids, 400); holders != nil {
		t.Fatalf("one member listing a checkpoint twice vouched for it: %v", holders)
	}
	honest := &catchupInfo{Checkpoints: []cpInfo{cp}}
	got, holders := vouched([]*catchupInfo{evil, honest}, ids, 400)
	if got != cp || !slices.Equal(holders, ids) {
		t.Fatalf("two members' word: %+v from %v", got, holders)
	}
}

// A joiner whose only server is gone gives up with ErrCatchup, soon and
// without spinning, rather than trying until its context ends.
func TestCatchupGivesUpOnGoneMembers(t *testing.T) {
	r := newCatchupRig(t)
	f := r.fetcher(t, r.joiner)
	gone := r.servers[0].ID()
	r.servers[0].Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := f.buckets(ctx, 0, 1000, []peer.ID{gone}, func(lockstep.Bucket) error { return nil })
	if !errors.Is(err, ErrCatchup) {
		t.Fatalf("buckets from a closed member: %v, want ErrCatchup", err)
	}
	if ctx.Err() != nil {
		t.Fatal("it gave up only when its context ended")
	}
}

// TestCatchupRefusesFarAhead: a request for buckets from a frame more
// than maxAhead past what the member stepped, or past the session's last
// frame, is refused at once rather than held open waiting.
func TestCatchupRefusesFarAhead(t *testing.T) {
	r := newCatchupRig(t, func(srv *catchupServer) { srv.sess.Params.Frames = 9 + maxAhead })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sim := &snapTally{}
	f := r.fetcher(t, r.joiner)
	kept := bucket.Frame(0)
	for _, c := range []struct {
		stepped bucket.Frame
		from    int64
		why     string
	}{
		{9, 9 + maxAhead + 1, "too far ahead"},
		{99, 9 + maxAhead, "past the session's last frame"}, // not too far ahead of 99
	} {
		for ; kept <= c.stepped; kept++ {
			r.archives[0].keep(kept, frameCmds(kept), sim.Hash(), sim)
		}
		s, rd, err := f.request(ctx, r.servers[0].ID(), catchupRequest{Kind: "buckets", From: c.from, To: c.from + 10})
		if err != nil {
			t.Fatal(err)
		}
		typ, _, err := readMsg(rd, nil, maxBucketMessage(3))
		s.Close()
		if typ != msgRefusal || !strings.Contains(fmt.Sprint(err), c.why) {
			t.Errorf("buckets from %d: message %d, %v; want a refusal %q", c.from, typ, err, c.why)
		}
	}
}
