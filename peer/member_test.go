package peer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
)

// TestMembersPushAndPullAgree runs two members over QUIC on loopback to an
// agreed end: member A steps its simulation on the member's goroutine, B
// in pull mode from a game loop of its own. Both must stop at the last
// frame with the same hash, and A's replay must verify.
func TestMembersPushAndPullAgree(t *testing.T) {
	const frames = 60
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hosts := newHosts(t, 2)
	dir := t.TempDir()
	params := SessionParams{SessionID: "member-test", Members: 2, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: frames}
	var input int
	push, err := Start(ctx, MemberConfig{
		Host: hosts[0], Params: params, Join: othersOf(hosts, 0),
		NewSim: func(*Agreement) lockstep.Simulation { return &tally{} },
		Input: func(f bucket.Frame) [][]byte {
			input++
			return [][]byte{{byte(f)}}
		},
		Record: &Recording{Dir: dir},
		Logger: testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	pull, err := Start(ctx, MemberConfig{Host: hosts[1], Params: params, Join: othersOf(hosts, 1), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := pull.Submit([]byte{1}); !errors.Is(err, ErrNotPlaying) && pull.Phase() == PhaseLobby {
		t.Fatalf("Submit in the lobby: %v, want ErrNotPlaying", err)
	}
	// B's game loop: step what is ready, submit now and then, until done.
	world := &tally{}
	loop := time.NewTicker(time.Second / 60)
	defer loop.Stop()
	for i := 0; ; i++ {
		select {
		case <-pull.Done():
		case <-loop.C:
			for _, b := range pull.Ready() {
				world.Step(b.Frame, b.Commands)
				pull.Stepped(b.Frame, world.Hash(), nil)
			}
			if i%5 == 0 {
				_ = pull.Submit([]byte{2, byte(i)}) // refused outside the session
			}
			continue
		}
		break
	}
	pst, err := pull.Wait()
	if err != nil {
		t.Fatalf("pull member: %v", err)
	}
	ast, err := push.Wait()
	if err != nil {
		t.Fatalf("push member: %v", err)
	}
	for _, st := range []Status{ast, pst} {
		if st.Phase != PhaseEnded || !st.Completed || st.Frame != frames-1 {
			t.Errorf("member %d: %s at frame %d, completed %v; want ended at %d", st.Slot, st.Phase, st.Frame, st.Completed, frames-1)
		}
	}
	if ast.Hash != pst.Hash || ast.Hash != world.Hash() {
		t.Errorf("final hashes: push %016x, pull %016x, pull's world %016x", ast.Hash, pst.Hash, world.Hash())
	}
	if ts := push.TransportStats(); len(ts.Members) != 2 || ts.Members[1-ast.Slot].BytesSent == 0 {
		t.Errorf("transport figures after the end: %+v", ts)
	}
	if input == 0 || ast.Stats.Core.Commands == 0 {
		t.Errorf("input called %d times, %d commands stepped", input, ast.Stats.Core.Commands)
	}
	f, err := os.Open(filepath.Join(dir, fmt.Sprintf("member-%d.phx", ast.Slot)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := replay.Verify(f, func(replay.Header) (lockstep.Simulation, error) { return &tally{}, nil }, nil)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if res.Frames != frames {
		t.Errorf("replay holds %d frames, want %d", res.Frames, frames)
	}
	// The members signed their streams with their identities and checked
	// each other's; the replay's statements hold under the keys of the
	// peer IDs in its header.
	for _, st := range []Status{ast, pst} {
		if c := st.Stats.Core; c.StatementsSigned == 0 || c.StatementsVerified == 0 || c.StatementsFailed != 0 {
			t.Errorf("member %d: %d statements signed, %d verified, %d failed", st.Slot, c.StatementsSigned, c.StatementsVerified, c.StatementsFailed)
		}
	}
	v, err := StatementVerifier(res.Header.Members)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	sigs, err := replay.CheckSignatures(f, v)
	if err != nil || sigs.Checked == 0 {
		t.Errorf("signatures of the replay: %+v, %v", sigs, err)
	}
}

func TestMemberConfigIsChecked(t *testing.T) {
	h := newHosts(t, 1)[0]
	ok := SessionParams{SessionID: "x", Members: 2}
	for name, cfg := range map[string]MemberConfig{
		"no host":       {Params: ok, Join: make([]AddrInfo, 1)},
		"missing joins": {Host: h, Params: ok},
		"bad params":    {Host: h, Params: SessionParams{Members: 2}, Join: make([]AddrInfo, 1)},
		"negative end":  {Host: h, Params: SessionParams{SessionID: "x", Members: 2, Frames: -1}, Join: make([]AddrInfo, 1)},
	} {
		if _, err := Start(context.Background(), cfg); err == nil {
			t.Errorf("%s: Start accepted it", name)
		}
	}
}

// TestCloseInTheLobby ends a member whose others never come: Close returns
// promptly and the member ends without error, having played nothing.
func TestCloseInTheLobby(t *testing.T) {
	hosts := newHosts(t, 2)
	m, err := Start(context.Background(), MemberConfig{
		Host: hosts[0], Params: SessionParams{SessionID: "alone", Members: 2}, Join: othersOf(hosts, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.Phase() != PhaseLobby || m.Status().Slot != -1 {
		t.Fatalf("status %v", m.Status())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := m.Wait(); err != nil || st.Phase != PhaseEnded || st.Completed {
		t.Fatalf("after Close: %v, %v", st, err)
	}
}

func TestParseAddrs(t *testing.T) {
	h := newHosts(t, 1)[0]
	got, err := ParseAddrs(h.Addrs()[0].String())
	if err != nil || len(got) != 1 || got[0].ID != h.ID() {
		t.Fatalf("ParseAddrs(own address) = %v, %v", got, err)
	}
	if _, err := ParseAddrs("/ip4/127.0.0.1/udp/1/quic-v1"); !errors.Is(err, ErrInvalidAddr) {
		t.Fatalf("an address without /p2p/: %v", err)
	}
}

// TestLobbyTimeout ends a member whose others never come, with
// ErrLobbyTimeout.
func TestLobbyTimeout(t *testing.T) {
	hosts := newHosts(t, 2)
	_, err := Run(context.Background(), MemberConfig{
		Host: hosts[0], Params: SessionParams{SessionID: "alone", Members: 2}, Join: othersOf(hosts, 0),
		LobbyTimeout: 300 * time.Millisecond,
	})
	if !errors.Is(err, ErrLobbyTimeout) {
		t.Fatalf("err = %v, want ErrLobbyTimeout", err)
	}
}

// TestFrameStart: the Input hook's driver sleeps until the next frame
// begins on the session clock (so that it wakes with the session), and
// not at all for a frame that has begun.
func TestFrameStart(t *testing.T) {
	sess := &Agreement{Params: SessionParams{FrameMillis: 50}, Start: time.Now().Add(time.Hour)}
	if d := frameStart(sess, 2); d <= time.Hour || d > time.Hour+100*time.Millisecond {
		t.Fatalf("frame 2 of a session an hour away begins in %v, want an hour and 100ms", d)
	}
	sess.Start = time.Now().Add(-time.Hour)
	if d := frameStart(sess, 5); d != 0 {
		t.Fatalf("frame 5 of a session an hour old begins in %v, want 0", d)
	}
	if d := frameStart(sess, bucket.Frame(time.Hour/(50*time.Millisecond))+2); d <= 50*time.Millisecond || d > 100*time.Millisecond {
		t.Fatalf("the frame after next begins in %v, want between one and two frames", d)
	}
}
