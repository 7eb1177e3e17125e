package peer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/net/swarm"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// newNATHosts starts n hosts ready for Meet, on loopback.
func newNATHosts(t *testing.T, n int) []*Host {
	t.Helper()
	hosts := make([]*Host, n)
	for i := range hosts {
		h, err := NewHost(context.Background(), HostConfig{NAT: true, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		hosts[i] = h
	}
	return hosts
}

// meetAndPlay runs members that meet at a relay's lobby and play frames of
// the tally simulation, and returns their statuses and paths.
func meetAndPlay(t *testing.T, n int, meet MeetConfig, frames int, noDirect bool) ([]Status, [][]PairPath) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newTestRelay(t, ctx, RelayConfig{})
	meet.Relay = peer.AddrInfo{ID: r.ID(), Addrs: r.h.Addrs()}
	hosts := newNATHosts(t, n)
	if noDirect {
		// As if every member's NAT dropped what it did not ask for: the
		// members dial nothing but the relay.
		onlyRelay := func(p peer.ID, a ma.Multiaddr) bool { return p == r.ID() || isCircuit(a) }
		for _, h := range hosts {
			h.gate.testDial.Store(&onlyRelay)
		}
	}
	params := SessionParams{SessionID: "meet", Members: n, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: frames}
	members := make([]*Member, n)
	for i, h := range hosts {
		m, err := Start(ctx, MemberConfig{
			Host: h, Params: params, Meet: &meet, LobbyTimeout: 40 * time.Second,
			NewSim: func(*Agreement) lockstep.Simulation { return &tally{} },
			Input:  func(f bucket.Frame) [][]byte { return [][]byte{{byte(i), byte(f)}} },
			Logger: testLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		members[i] = m
	}
	sts := make([]Status, n)
	paths := make([][]PairPath, n)
	for i, m := range members {
		st, err := m.Wait()
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		sts[i], paths[i] = st, m.Paths()
	}
	for i, st := range sts {
		if !st.Completed || st.Frame != bucket.Frame(frames-1) || st.Hash != sts[0].Hash {
			t.Errorf("member %d: completed %v at frame %d, hash %x (member 0: %x)", i, st.Completed, st.Frame, st.Hash, sts[0].Hash)
		}
	}
	return sts, paths
}

// Members on one network meet at the relay and connect directly.
func TestMeetDirect(t *testing.T) {
	_, paths := meetAndPlay(t, 3, MeetConfig{Lobby: "direct"}, 40, false)
	wantPaths(t, paths, PathDirect)
}

// Members that cannot reach each other directly (and cannot punch: on
// loopback no address is public) play through the relay, their packets on
// streams over the relayed connections.
func TestMeetRelayed(t *testing.T) {
	_, paths := meetAndPlay(t, 3, MeetConfig{Lobby: "relayed", DirectTimeout: 500 * time.Millisecond, PunchWait: 500 * time.Millisecond}, 40, true)
	wantPaths(t, paths, PathRelayed)
}

// wantPaths checks that each of three members has a path of kind want,
// with a round trip, to each of the other two.
func wantPaths(t *testing.T, paths [][]PairPath, want Path) {
	t.Helper()
	for i, ps := range paths {
		if len(ps) != 2 {
			t.Fatalf("member %d: paths %v", i, ps)
		}
		for _, p := range ps {
			if p.Path != want || p.RTT <= 0 {
				t.Errorf("member %d: %+v, want %s with an RTT", i, p, want)
			}
		}
	}
}

// Meet needs a host made for it.
func TestMeetNeedsNATHost(t *testing.T) {
	h := newHosts(t, 1)[0]
	if _, _, err := Meet(context.Background(), h, MeetConfig{Lobby: "x"}, 2); !errors.Is(err, ErrMeet) {
		t.Fatalf("Meet on a host without NAT: %v", err)
	}
}

// A pair that starts relayed switches to a direct path that appears
// mid-session (as hole punching would give one), and plays on to the end.
func TestMeetUpgradesMidSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := newTestRelay(t, ctx, RelayConfig{})
	hosts := newNATHosts(t, 2)
	onlyRelay := func(p peer.ID, a ma.Multiaddr) bool { return p == r.ID() || isCircuit(a) }
	for _, h := range hosts {
		h.gate.testDial.Store(&onlyRelay)
	}
	meet := MeetConfig{Relay: peer.AddrInfo{ID: r.ID(), Addrs: r.h.Addrs()}, Lobby: "upgrade", DirectTimeout: 300 * time.Millisecond, PunchWait: 300 * time.Millisecond}
	params := SessionParams{SessionID: "upgrade", Members: 2, FrameMillis: 20, Sim: "tally", SimVersion: "1", Frames: 250}
	members := make([]*Member, 2)
	var err error
	for i, h := range hosts {
		if members[i], err = Start(ctx, MemberConfig{
			Host: h, Params: params, Meet: &meet,
			NewSim: func(*Agreement) lockstep.Simulation { return &tally{} },
			Input:  func(f bucket.Frame) [][]byte { return [][]byte{{byte(i), byte(f)}} },
			Logger: testLogger(),
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Once both play relayed, a direct path appears.
	waitFor(t, 30*time.Second, "both members play relayed, frame 50", func() bool {
		return members[0].Phase() == PhasePlaying && members[1].Phase() == PhasePlaying && members[0].Status().Frame >= 50
	})
	if ts := members[0].TransportStats(); !ts.Members[1-members[0].Status().Slot].Relayed {
		t.Fatalf("not relayed at first: %+v", ts.Members)
	}
	before := [2]int64{members[0].Status().Stats.Core.Stalls, members[1].Status().Stats.Core.Stalls}
	for _, h := range hosts {
		h.gate.testDial.Store(nil)
	}
	if sw, ok := hosts[0].LibP2P().Network().(*swarm.Swarm); ok {
		sw.Backoff().Clear(hosts[1].ID()) // the refused dials of the start
	}
	if err := hosts[0].LibP2P().Connect(network.WithForceDirectDial(ctx, "test"), hosts[1].AddrInfo()); err != nil {
		t.Fatal(err)
	}
	var sts [2]Status
	for i, m := range members {
		if sts[i], err = m.Wait(); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		for _, p := range m.Paths() {
			if p.Path != PathPunched {
				t.Errorf("member %d: %+v, want the relayed path upgraded (punched)", i, p)
			}
		}
	}
	if !sts[0].Completed || !sts[1].Completed || sts[0].Hash != sts[1].Hash {
		t.Fatalf("statuses %v / %v", sts[0], sts[1])
	}
	t.Logf("stalls before the switch %v, at the end %d and %d", before, sts[0].Stats.Core.Stalls, sts[1].Stats.Core.Stalls)
}
