package peer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// snapTally is a tally that saves and restores its state, padded to
// several chunks of the catch-up protocol so a checkpoint is split among
// members.
type snapTally struct{ tally }

const snapPad = 3*catchupChunk + 123

func (s *snapTally) AppendSnapshot(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, s.state)
	for i := range snapPad {
		dst = append(dst, byte(s.state>>(i%8*8))^byte(i))
	}
	return dst
}

func (s *snapTally) Restore(data []byte) error {
	if len(data) != 8+snapPad {
		return errors.New("snapTally: wrong size")
	}
	s.state = binary.LittleEndian.Uint64(data)
	for i := range snapPad {
		if data[8+i] != byte(s.state>>(i%8*8))^byte(i) {
			return errors.New("snapTally: damaged")
		}
	}
	return nil
}

// TestMemberRejoins runs three members over QUIC on loopback, crashes the
// middle one (no leave: the others drop it), and brings it back as a new
// host with the same key: it must be admitted at a frame every member
// reports, catch up from the survivors (from a vouched checkpoint, or from
// frame 0 without the snapshot interface) and end on the same final hash.
func TestMemberRejoins(t *testing.T) {
	for _, snapshot := range []bool{true, false} {
		t.Run(fmt.Sprintf("snapshot=%v", snapshot), func(t *testing.T) { testMemberRejoins(t, snapshot) })
	}
}

func testMemberRejoins(t *testing.T, snapshot bool) {
	// Frames enough that a loaded machine brings the member back before
	// the end.
	const frames = 500
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hosts := newHosts(t, 3)
	// Slots follow the peer IDs: index i is then slot i.
	slices.SortFunc(hosts, func(a, b *Host) int { return strings.Compare(string(a.ID()), string(b.ID())) })
	params := SessionParams{SessionID: "rejoin-test", Members: 3, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: frames}
	newSim := func(*Agreement) lockstep.Simulation {
		if snapshot {
			return &snapTally{}
		}
		return &tally{}
	}
	cfg := func(h *Host, join []AddrInfo) MemberConfig {
		return MemberConfig{
			Host: h, Params: params, Join: join, NewSim: newSim,
			Input:           func(f bucket.Frame) [][]byte { return [][]byte{{byte(f), byte(f >> 8)}} },
			Configure:       func(c *lockstep.Config) { c.DropTimeout = 2 * time.Second },
			CheckpointEvery: 50,
			Logger:          testLogger(),
		}
	}
	members := make([]*Member, 3)
	crashCtx, crash := context.WithCancel(ctx)
	defer crash()
	for i, h := range hosts {
		c := ctx
		if i == 1 {
			c = crashCtx
		}
		m, err := Start(c, cfg(h, othersOf(hosts, i)))
		if err != nil {
			t.Fatal(err)
		}
		members[i] = m
	}
	// The member of slot 1 crashes: one survivor has a lower peer ID (it
	// dials the member again), the other a higher one.
	waitFrame(ctx, t, members[1], 80)
	if s := members[1].Status().Slot; s != 1 {
		t.Fatalf("the host of index 1 has slot %d", s)
	}
	crash()
	<-members[1].Done()
	key := hosts[1].key
	hosts[1].Close()
	survivors := []*Member{members[0], members[2]}
	for _, m := range survivors {
		waitFrame(ctx, t, m, 130) // the drop (two seconds) may still be agreed on: the member asks again
	}
	back := newHostWithKey(t, key)
	join := []AddrInfo{hosts[0].AddrInfo(), hosts[2].AddrInfo()}
	if !snapshot {
		// Given one live member, it finds the other at the address the
		// lobby agreed.
		join = join[:1]
	}
	bc := cfg(back, join)
	bc.Rejoin = true
	rejoined, err := Start(ctx, bc)
	if err != nil {
		t.Fatal(err)
	}
	// Once it plays, it serves catch-ups too: from the checkpoint it
	// loaded, or from frame 0.
	for {
		if _, ok := rejoined.Admission(); ok {
			break
		}
		select {
		case <-rejoined.Done():
			t.Fatalf("the member that came back ended: %v", rejoined.Status())
		case <-time.After(10 * time.Millisecond):
		}
	}
	f := &fetcher{h: hosts[0], session: params.SessionID, log: slog.New(slog.DiscardHandler)}
	in, err := f.info(ctx, back.ID())
	if err != nil || (len(in.Checkpoints) > 0) != snapshot || in.Stepped < 0 || (in.From == 0) == snapshot {
		t.Errorf("the member that came back serves %+v, %v", in, err)
	}
	sameFinalHash(t, append(survivors, rejoined)...)
	adm, ok := rejoined.Admission()
	if !ok {
		t.Fatal("the member that came back reports no admission")
	}
	t.Logf("admitted at %d: %+v", adm.Frame, adm)
	if snapshot != adm.Verified || snapshot != (adm.CheckpointFrame >= 0) || adm.Bytes == 0 || adm.Servers != 2 {
		t.Fatalf("admission %+v: want a verified checkpoint %v, bytes, 2 servers", adm, snapshot)
	}
	for _, m := range append(survivors, rejoined) {
		found := false
		for _, e := range m.Events() {
			if e.Type == lockstep.EventRejoin && e.Member == 1 {
				found = found || e.Frame == adm.Frame
			}
			if e.Type == lockstep.EventDesync {
				t.Errorf("member %d: %v (the hash reports after the admission must agree)", m.Status().Slot, e)
			}
		}
		if !found {
			t.Errorf("member %d: no rejoin event of slot 1 at frame %d in %v", m.Status().Slot, adm.Frame, m.Events())
		}
	}
}

// TestStrangerCannotRejoin: a host whose identity is no member of a
// running session gets nothing from its members: the connection or the
// catch-up stream is refused, and the member fails.
func TestStrangerCannotRejoin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := newHosts(t, 3)
	params := SessionParams{SessionID: "stranger-test", Members: 2, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: 150}
	var members []*Member
	for i, h := range hosts[:2] {
		m, err := Start(ctx, MemberConfig{Host: h, Params: params, Join: othersOf(hosts[:2], i),
			NewSim: func(*Agreement) lockstep.Simulation { return &tally{} }, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
	}
	waitFrame(ctx, t, members[0], 10)
	stranger, err := Start(ctx, MemberConfig{Host: hosts[2], Params: params, Join: []AddrInfo{hosts[0].AddrInfo(), hosts[1].AddrInfo()},
		NewSim: func(*Agreement) lockstep.Simulation { return &tally{} }, Rejoin: true, LobbyTimeout: 20 * time.Second, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := stranger.Wait()
	if err == nil || st.Slot >= 0 {
		t.Fatalf("a stranger came in: slot %d, err %v", st.Slot, err)
	}
	t.Logf("refused: %v", err)
	for _, m := range members {
		if st, err := m.Wait(); err != nil || !st.Completed {
			t.Fatalf("member: %v, %v", st, err)
		}
	}
}

// TestWatch: two members serve spectators; one arrives mid-session, starts
// from a checkpoint both vouched for, steps a little behind the live frame
// and ends on the members' final hash. A member that serves one spectator
// refuses a second. Both members record their replays: each names the
// spectator it served at the frame it began serving it, and each verifies.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := newHosts(t, 4)
	dir := t.TempDir()
	// 12 s of play: a loaded machine (or the race detector) may take
	// seconds to bring the spectator in after frame 110.
	params := SessionParams{SessionID: "watch-test", Members: 2, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: 600}
	newSim := func(*Agreement) lockstep.Simulation { return &snapTally{} }
	members := startServingMembers(ctx, t, hosts[:2], params, dir)
	waitFrame(ctx, t, members[1], 110)
	join := []AddrInfo{hosts[0].AddrInfo(), hosts[1].AddrInfo()}
	var frames int
	w, err := Watch(ctx, WatchConfig{Host: hosts[2], Join: join, SessionID: params.SessionID, NewSim: newSim,
		Delay: 100 * time.Millisecond, OnStep: func(bucket.Frame, uint64) {
			frames++
			if frames == 1 {
				// A second spectator finds no room at either member.
				_, err := Watch(ctx, WatchConfig{Host: hosts[3], Join: join, SessionID: params.SessionID, NewSim: newSim})
				if err == nil || !strings.Contains(err.Error(), "busy") {
					t.Errorf("a second spectator: %v, want busy", err)
				}
			}
		}, Logger: testLogger()})
	if err != nil {
		t.Fatalf("watch: %+v, %v", w, err)
	}
	st, err := members[0].Wait()
	if err != nil || !st.Completed {
		t.Fatalf("member: %v, %v", st, err)
	}
	if w.Frame != bucket.Frame(params.Frames-1) || w.Hash != st.Hash || !w.Verified || w.CheckpointFrame < 99 || w.DelayFrames != 5 {
		t.Fatalf("watched %+v, members' final hash %016x", w, st.Hash)
	}
	t.Logf("watched from the checkpoint of frame %d, %d bytes", w.CheckpointFrame, w.Bytes)
	if _, err := members[1].Wait(); err != nil {
		t.Fatal(err)
	}
	for slot := range 2 {
		res, seen := servedSpectators(t, dir, slot)
		if res.FinalHash != st.Hash {
			t.Fatalf("member %d's replay: %+v", slot, res)
		}
		if len(seen) != 1 || seen[0].Detail != hosts[2].ID().String() || int(seen[0].Member) != slot || seen[0].Frame < 110 {
			t.Errorf("member %d's replay names spectators %v, want %s once, past frame 110", slot, seen, hosts[2].ID())
		}
	}
}

// TestWatchSurvivesAServerCrash: a spectator served by two members, the
// first of which crashes mid-session, ends on the survivors' final hash:
// its windows resume on the other member.
func TestWatchSurvivesAServerCrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hosts := newHosts(t, 4)
	params := SessionParams{SessionID: "watch-crash-test", Members: 3, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: 400}
	newSim := func(*Agreement) lockstep.Simulation { return &snapTally{} }
	crashCtx, crash := context.WithCancel(ctx)
	defer crash()
	var members []*Member
	for i, h := range hosts[:3] {
		c := ctx
		if i == 0 {
			c = crashCtx
		}
		m, err := Start(c, MemberConfig{Host: h, Params: params, Join: othersOf(hosts[:3], i), NewSim: newSim,
			Input:      func(f bucket.Frame) [][]byte { return [][]byte{{byte(f)}} },
			Configure:  func(c *lockstep.Config) { c.DropTimeout = 2 * time.Second },
			Spectators: 2, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
	}
	waitFrame(ctx, t, members[0], 1)
	go func() {
		for members[0].Status().Frame < 100 {
			select {
			case <-members[0].Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		crash()
		<-members[0].Done()
		hosts[0].Close()
	}()
	w, err := Watch(ctx, WatchConfig{Host: hosts[3], Join: []AddrInfo{hosts[0].AddrInfo(), hosts[1].AddrInfo()},
		SessionID: params.SessionID, NewSim: newSim, Logger: testLogger()})
	if err != nil {
		t.Fatalf("watch: %+v, %v", w, err)
	}
	st, err := members[1].Wait()
	if err != nil || !st.Completed || w.Frame != 399 || w.Hash != st.Hash {
		t.Fatalf("watched %+v; member %v, %v", w, st, err)
	}
}
