package peer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// TestMemberJoinsLate runs three members over QUIC on loopback in a
// session of four slots, the fourth open to anyone. A new host joins
// late: it takes slot 3, is admitted at a frame every member reports (a
// join event), catches up from a vouched checkpoint and ends on the
// members' final hash. A stranger that comes after it finds no open slot
// and is refused.
func TestMemberJoinsLate(t *testing.T) {
	const frames = 1000 // 20 s: a loaded machine may take seconds to admit the late joiner
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hosts := newHosts(t, 5)
	starters, late, stranger := hosts[:3], hosts[3], hosts[4]
	params := SessionParams{SessionID: "late-test", Members: 3, Slots: 4,
		FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: frames}
	cfg := lateConfig(params)
	var members []*Member
	var lateCmds atomic.Int64 // the late joiner's commands the first member stepped
	for i, h := range starters {
		c := cfg(h, othersOf(starters, i))
		if i == 0 {
			c.OnStep = func(_ bucket.Frame, cmds []bucket.Command, _ uint64) {
				for _, cmd := range cmds {
					if cmd.Slot == 3 {
						lateCmds.Add(1)
					}
				}
			}
		}
		m, err := Start(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m)
	}
	waitFor(t, time.Minute, "frame 60", func() bool { return members[0].Status().Frame >= 60 })

	lc := cfg(late, []AddrInfo{starters[1].AddrInfo()}) // it finds the others at their agreed addresses
	lc.Rejoin = true
	joined, err := Start(ctx, lc)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the late joiner's admission", func() bool {
		_, ok := joined.Admission()
		return ok || isDone(joined)
	})
	// A stranger now: no open slot left.
	sc := cfg(stranger, []AddrInfo{starters[0].AddrInfo()})
	sc.Rejoin = true
	sm, err := Start(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := sm.Wait(); !errors.Is(err, ErrNoOpenSlot) || st.Slot >= 0 {
		t.Fatalf("a stranger into a session whose open slot is taken: slot %d, err %v", st.Slot, err)
	}
	sameFinalHash(t, append(members, joined)...)
	adm, ok := joined.Admission()
	if !ok || joined.Status().Slot != 3 {
		t.Fatalf("the late joiner: slot %d, admission %v", joined.Status().Slot, ok)
	}
	t.Logf("admitted at %d: %+v", adm.Frame, adm)
	if !adm.Verified || adm.CheckpointFrame < 0 || adm.Servers != 3 {
		t.Fatalf("admission %+v: want a verified checkpoint from 3 members", adm)
	}
	if lateCmds.Load() == 0 {
		t.Error("the late joiner's commands never reached the members: it did not play")
	}
	for _, m := range append(members, joined) {
		found := false
		for _, e := range m.Events() {
			found = found || e.Type == lockstep.EventJoin && e.Member == 3 && e.Frame == adm.Frame
			if e.Type == lockstep.EventDesync {
				t.Errorf("member %d: %v", m.Status().Slot, e)
			}
		}
		if !found {
			t.Errorf("member %d: no join event of slot 3 at frame %d in %v", m.Status().Slot, adm.Frame, m.Events())
		}
	}
}

func isDone(m *Member) bool {
	select {
	case <-m.Done():
		return true
	default:
		return false
	}
}

// The seats of open slots: a slot goes to the first identity that claims
// it, again to the same, never to another; an allowed list keeps others
// out; an identity holds one slot.
func TestSeats(t *testing.T) {
	ids := fuzzIDs(t, 5)
	params := SessionParams{SessionID: "seats", Members: 2, Slots: 4}.withDefaults()
	sess := &Agreement{Params: params, Members: append(ids[:2:2], "", ""), seats: newSeats(params)}
	a, b := ids[2], ids[3]
	if sess.Open() != 0b1100 || sess.freeSlots(a) != 0b1100 {
		t.Fatalf("open %b, free %b", sess.Open(), sess.freeSlots(a))
	}
	if err := sess.claim(2, a); err != nil {
		t.Fatal(err)
	}
	if err := sess.claim(2, a); err != nil {
		t.Fatalf("the same claim again: %v", err)
	}
	for _, c := range []struct {
		slot bucket.Slot
		id   peer.ID
	}{{2, b}, {3, a}, {1, b}, {4, b}} {
		if err := sess.claim(c.slot, c.id); !errors.Is(err, ErrNoOpenSlot) {
			t.Errorf("slot %d for %s: %v", c.slot, c.id, err)
		}
	}
	if s, ok := sess.Slot(a); !ok || s != 2 || sess.Member(2) != a || sess.freeSlots(b) != 0b1000 {
		t.Fatalf("slot of a %d %v, member 2 %s, free %b", s, ok, sess.Member(2), sess.freeSlots(b))
	}
	params.Allowed = []string{b.String()}
	only := &Agreement{Params: params, Members: append(ids[:2:2], "", ""), seats: newSeats(params)}
	if only.freeSlots(a) != 0 || only.claim(3, a) == nil || only.claim(3, b) != nil {
		t.Fatal("an allowed list lets another in, or keeps its own out")
	}
	if helloVersion(params) != LobbyVersion || helloVersion(SessionParams{Members: 2}.withDefaults()) != 0 {
		t.Fatal("the hello's version")
	}
}

// TestTwoLateJoiners: three members in a session of five slots; a late
// joiner takes slot 3 and plays, then a second one comes and takes slot
// 4. The second finds the first at the datagram address the first told
// the members, claims its slot at the first as at the members, and both
// end on the members' final hash.
func TestTwoLateJoiners(t *testing.T) {
	const frames = 400
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hosts := newHosts(t, 5)
	starters := hosts[:3]
	// Frames of 50 ms: five members under -race on a loaded machine.
	params := SessionParams{SessionID: "two-late", Members: 3, Slots: 5,
		FrameMillis: 50, Sim: "tally", SimVersion: "1", Frames: frames}
	cfg := lateConfig(params)
	members := startEach(ctx, t, starters, cfg)
	waitFor(t, time.Minute, "frame 30", func() bool { return members[0].Status().Frame >= 30 })
	var late []*Member
	for _, h := range hosts[3:] {
		c := cfg(h, []AddrInfo{starters[1].AddrInfo()})
		c.Rejoin = true
		m, err := Start(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		late = append(late, m)
		waitFor(t, 2*time.Minute, "a late joiner's admission", func() bool {
			_, ok := m.Admission()
			return ok || isDone(m)
		})
	}
	sameFinalHash(t, append(members, late...)...)
	for i, m := range late {
		if _, ok := m.Admission(); !ok || m.Status().Slot != 3+i {
			t.Fatalf("late joiner %d: slot %d, admitted %v", i, m.Status().Slot, ok)
		}
	}
}

// TestLateClaimRefused: a late joiner whose claim one live member refuses
// (it gave the slot to another identity) fails at once with ErrNoOpenSlot,
// not after the lobby timeout waiting for that member.
func TestLateClaimRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hosts := newHosts(t, 4)
	starters := hosts[:3]
	params := SessionParams{SessionID: "late-refused", Members: 3, Slots: 4,
		FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: 300}
	cfg := func(h *Host, join []AddrInfo) MemberConfig {
		return MemberConfig{
			Host: h, Params: params, Join: join, NewSim: func(*Agreement) lockstep.Simulation { return &snapTally{} },
			Input:        func(f bucket.Frame) [][]byte { return [][]byte{{byte(f)}} },
			LobbyTimeout: 2 * time.Minute,
			Logger:       testLogger(),
		}
	}
	members := startEach(ctx, t, starters, cfg)
	waitFor(t, time.Minute, "frame 10", func() bool { return members[2].Status().Frame >= 10 })
	// Member 2 gave slot 3 to someone else; member 1, asked first, holds it free.
	members[2].mu.Lock()
	sess := members[2].sess
	members[2].mu.Unlock()
	if err := sess.claim(3, fuzzIDs(t, 1)[0]); err != nil {
		t.Fatal(err)
	}
	lc := cfg(hosts[3], []AddrInfo{starters[1].AddrInfo()})
	lc.Rejoin = true
	lm, err := Start(ctx, lc)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := lm.Wait(); !errors.Is(err, ErrNoOpenSlot) || st.Slot >= 0 {
		t.Fatalf("a late joiner refused by a member: slot %d, err %v", st.Slot, err)
	}
	for _, m := range members {
		if st, err := m.Wait(); err != nil || !st.Completed {
			t.Fatalf("member %d: completed %v, err %v", st.Slot, st.Completed, err)
		}
	}
}

// TestSeatsOneSlotPerIdentity: one identity claiming six open slots at
// once takes one of them, never two.
func TestSeatsOneSlotPerIdentity(t *testing.T) {
	ids := fuzzIDs(t, 3)
	params := SessionParams{SessionID: "seats", Members: 2, Slots: 8}.withDefaults()
	for range 200 {
		sess := &Agreement{Params: params, Members: append(ids[:2:2], "", "", "", "", "", ""), seats: newSeats(params)}
		var ok atomic.Int32
		start := make(chan struct{})
		var wg sync.WaitGroup
		for slot := bucket.Slot(2); slot < 8; slot++ {
			wg.Go(func() {
				<-start
				if sess.claim(slot, ids[2]) == nil {
					ok.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if ok.Load() != 1 {
			t.Fatalf("%d claims of one identity given", ok.Load())
		}
	}
}

// lateConfig returns the configuration of a member of a late-join test
// session: the tally simulation, one command a frame, checkpoints every
// 50 frames.
func lateConfig(params SessionParams) func(h *Host, join []AddrInfo) MemberConfig {
	return func(h *Host, join []AddrInfo) MemberConfig {
		return MemberConfig{
			Host: h, Params: params, Join: join, NewSim: func(*Agreement) lockstep.Simulation { return &snapTally{} },
			Input:           func(f bucket.Frame) [][]byte { return [][]byte{{byte(f), byte(f >> 8)}} },
			CheckpointEvery: 50,
			LobbyTimeout:    time.Minute,
			Logger:          testLogger(),
		}
	}
}
