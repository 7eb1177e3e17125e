package peer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
)

func TestJoinFourMembersAgree(t *testing.T) {
	hosts := newHosts(t, 4)
	before := time.Now()
	sessions := mustJoin(t, hosts)

	want := sessions[0]
	for i, s := range sessions {
		if s.ID != want.ID || s.Seed != want.Seed || !slices.Equal(s.Members, want.Members) ||
			!slices.Equal(s.Endpoints, want.Endpoints) || !sameParams(s.Params, want.Params) || s.Tag() != want.Tag() {
			t.Fatalf("member %d disagrees:\n%+v\nvs member 0:\n%+v", i, s, want)
		}
		if s.Members[s.Self] != hosts[i].ID() {
			t.Errorf("member %d: slot %d is %s, not itself", i, s.Self, s.Members[s.Self])
		}
		if s.Endpoints[s.Self] != hosts[i].DatagramAddr() {
			t.Errorf("member %d: endpoint %v, want its datagram address %v", i, s.Endpoints[s.Self], hosts[i].DatagramAddr())
		}
		if d := s.Start.Sub(want.Start); d < -5*time.Millisecond || d > 5*time.Millisecond {
			t.Errorf("member %d: start differs from member 0's by %v", i, d)
		}
	}
	if !slices.IsSorted(want.Members) || len(want.Members) != 4 {
		t.Fatalf("members %v: want 4, sorted", want.Members)
	}
	if want.Coordinator() != want.Members[0] {
		t.Errorf("coordinator %s, want the lowest ID %s", want.Coordinator(), want.Members[0])
	}
	if want.Start.Before(before) || want.Start.After(time.Now().Add(StartDelay)) {
		t.Errorf("start %v is not a little in the future", time.Until(want.Start))
	}
	if want.Seed == ([32]byte{}) {
		t.Error("zero seed")
	}
	if want.Params.ProtocolVersion != ProtocolVersion || want.Params.FrameMillis != DefaultFrameMillis {
		t.Errorf("defaults not applied: %+v", want.Params)
	}

	// A second session on the same hosts has another seed. (Under another
	// ID: a host that remembers running a session refuses its members'
	// hellos for that ID until its own Join of it begins, which on a loaded
	// machine may come after a faster member's hello.)
	again, errs := joinAll(t, hosts, func(int) SessionParams {
		p := testParams(len(hosts))
		p.SessionID += "-again"
		return p
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: the second Join: %v", i, err)
		}
	}
	if again[0].Seed == want.Seed {
		t.Error("two sessions drew the same seed")
	}
}

// A peer that is not in the member list cannot join; the member it dialled
// refuses it, as a host without the session would, closes its connection
// and carries on.
func TestJoinRefusesStranger(t *testing.T) {
	hosts := newHosts(t, 2)
	// The stranger needs an ID below the member it dials, since the lower
	// ID opens the lobby stream.
	target := hosts[0]
	if hosts[1].ID() < target.ID() {
		target = hosts[1]
	}
	var key crypto.PrivKey
	for {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := peer.IDFromPrivateKey(k); id < target.ID() {
			key = k
			break
		}
	}
	stranger := newHostWithKey(t, key)

	// The members join; the one that is not the target waits until the
	// stranger has been turned away, so the target's Join is in progress
	// when the stranger knocks.
	turnedAway := make(chan struct{})
	var strangerErr error
	go func() {
		defer close(turnedAway)
		if !until(10*time.Second, func() bool { return target.joining(testParams(2).SessionID) }) {
			return // strangerErr stays nil: the test fails
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, strangerErr = Join(ctx, stranger, testParams(2), []peer.AddrInfo{target.AddrInfo()})
	}()
	sessions, errs := joinAll(t, hosts, func(i int) SessionParams {
		if hosts[i] != target {
			<-turnedAway
		}
		return testParams(2)
	})
	// It learnt nothing: not that the session exists, nor its members.
	if strangerErr == nil || errors.Is(strangerErr, ErrNotMember) || strings.Contains(strangerErr.Error(), "members of session") {
		t.Fatalf("stranger's Join: %v", strangerErr)
	}
	if c := stranger.LibP2P().Network().Connectedness(target.ID()); c == network.Connected {
		t.Error("the stranger is still connected")
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		if slices.Contains(sessions[i].Members, stranger.ID()) {
			t.Fatal("the stranger became a member")
		}
	}
}

// joining reports whether a Join of session id is in progress on h.
func (h *Host) joining(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lobbies[id] != nil
}

func TestJoinInvalidParams(t *testing.T) {
	hosts := newHosts(t, 2)
	ctx := context.Background()
	tests := []struct {
		name   string
		params SessionParams
		peers  []peer.AddrInfo
	}{
		{"no session ID", SessionParams{Members: 2}, othersOf(hosts, 0)},
		{"count", testParams(3), othersOf(hosts, 0)},
		{"self among peers", testParams(2), []peer.AddrInfo{hosts[0].AddrInfo()}},
		{"twice", testParams(3), []peer.AddrInfo{hosts[1].AddrInfo(), hosts[1].AddrInfo()}},
		{"too many", SessionParams{SessionID: "x", Members: 65}, othersOf(hosts, 0)},
	}
	for _, tt := range tests {
		if _, err := Join(ctx, hosts[0], tt.params, tt.peers); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%s: Join error %v, want ErrInvalidParams", tt.name, err)
		}
	}
}

// Without the other member, Join gives up when ctx ends and names who is
// missing.
func TestJoinTimeout(t *testing.T) {
	hosts := newHosts(t, 2)
	lower, higher := hosts[0], hosts[1]
	if higher.ID() < lower.ID() {
		lower, higher = higher, lower
	}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err := Join(ctx, lower, testParams(2), []peer.AddrInfo{higher.AddrInfo()})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrNoSession) {
		t.Fatalf("Join error %v, want DeadlineExceeded and ErrNoSession", err)
	}
	errorContains(t, "lower", err, higher.ID().String())
}

// TestLobbyReadAllocatesAsBytesArrive: a message that claims the largest
// length but brings a few bytes makes the reader allocate about what
// arrived, not the 64 KiB claimed.
func TestLobbyReadAllocatesAsBytesArrive(t *testing.T) {
	claim := binary.AppendUvarint(nil, maxLobbyMessage)
	data := append(claim, `{"type":"hello"`...) // and then the stream ends
	var before, after runtime.MemStats
	var m lobbyMsg
	runtime.ReadMemStats(&before)
	err := (&lobbyConn{r: bufio.NewReaderSize(bytes.NewReader(data), 4096)}).read(&m)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read = %v, want io.ErrUnexpectedEOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got >= 16<<10 {
		t.Errorf("reading a message of %d bytes that claims %d allocated %d bytes", len(data), maxLobbyMessage, got)
	}
}

// TestJoinRestartedMember: a member restarted with its old key after the
// session began is told that the session runs without it, whether it
// dials the others (a lower ID) or waits for them to dial (a higher one,
// which asks them after LobbyWaitReport).
func TestJoinRestartedMember(t *testing.T) {
	keys := make([]crypto.PrivKey, 2)
	for i := range keys {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = k
	}
	for _, restart := range []string{"lower", "higher"} {
		t.Run(restart, func(t *testing.T) {
			hosts := []*Host{newHostWithKey(t, keys[0]), newHostWithKey(t, keys[1])}
			mustJoin(t, hosts)
			r := 0 // the member to restart
			if (hosts[1].ID() < hosts[0].ID()) == (restart == "lower") {
				r = 1
			}
			hosts[r].Close()
			again := newHostWithKey(t, keys[r])
			ctx, cancel := context.WithTimeout(context.Background(), 3*LobbyWaitReport)
			defer cancel()
			_, err := Join(ctx, again, testParams(2), []peer.AddrInfo{hosts[1-r].AddrInfo()})
			if !errors.Is(err, ErrSessionRunning) {
				t.Fatalf("restarted member's Join: %v, want ErrSessionRunning", err)
			}
		})
	}
}
