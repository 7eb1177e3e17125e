package peer

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

func testIDs(t *testing.T, n int) []peer.ID {
	t.Helper()
	ids := make([]peer.ID, n)
	for i := range ids {
		ids[i] = peer.ID(fmt.Sprintf("peer-%04d", i))
	}
	return ids
}

func TestDirectoryLobby(t *testing.T) {
	d := newDirectory(DirectoryLimits{})
	now := time.Unix(1000, 0)
	ids := testIDs(t, 4)
	addr := ma.StringCast("/ip4/198.18.0.7/udp/4001/quic-v1")
	for i, id := range ids[:3] {
		got, err := d.register(now, id, "friday", 3, []ma.Multiaddr{addr})
		if err != nil || len(got) != i+1 {
			t.Fatalf("member %d: %v, %v", i, got, err)
		}
	}
	// Full: a fourth is refused, the three renew.
	if _, err := d.register(now, ids[3], "friday", 3, nil); !errors.Is(err, ErrLobbyFull) {
		t.Fatalf("fourth member: %v, want ErrLobbyFull", err)
	}
	if _, err := d.register(now, ids[3], "friday", 4, nil); !errors.Is(err, ErrLobbySize) {
		t.Fatalf("another size: %v, want ErrLobbySize", err)
	}
	now = now.Add(time.Second)
	got, err := d.register(now, ids[0], "friday", 3, nil)
	if err != nil || len(got) != 3 || got[0].ID != ids[0] || got[1].Addrs[0].String() != addr.String() {
		t.Fatalf("renewal: %v, %v", got, err)
	}
	// Too soon again: busy.
	if _, err := d.register(now, ids[0], "friday", 3, nil); !errors.Is(err, ErrDirectoryBusy) {
		t.Fatalf("registering twice at once: %v, want ErrDirectoryBusy", err)
	}
	// Registrations expire; ids[0] renewed later than the others.
	now = now.Add(DefaultDirectoryLimits().TTL - 500*time.Millisecond)
	if got, err := d.register(now, ids[3], "friday", 3, nil); err != nil || len(got) != 2 {
		t.Fatalf("after the others expired: %v, %v", got, err)
	}
	// Moving to another lobby leaves the first.
	now = now.Add(200 * time.Millisecond)
	if _, err := d.register(now, ids[3], "saturday", 2, nil); err != nil {
		t.Fatal(err)
	}
	if regs, lobbies := d.counts(); regs != 2 || lobbies != 2 {
		t.Fatalf("%d registrations in %d lobbies, want 2 in 2", regs, lobbies)
	}
	for _, bad := range []struct {
		name string
		size int
	}{{"", 2}, {string(make([]byte, MaxLobbyName+1)), 2}, {"x", 0}, {"x", MaxLobbySize + 1}} {
		if _, err := d.register(now, ids[1], bad.name, bad.size, nil); !errors.Is(err, ErrBadRegistration) {
			t.Errorf("lobby %q of %d: %v, want ErrBadRegistration", bad.name, bad.size, err)
		}
	}
}

// A flood of registrations from ever new peers is bounded: past the limits
// they are refused, and the table never holds more.
func TestDirectoryFloodBounded(t *testing.T) {
	limits := DirectoryLimits{MaxRegistrations: 100, MaxLobbies: 10}
	d := newDirectory(limits)
	now := time.Unix(1000, 0)
	refused := 0
	for i := range 10_000 {
		id := peer.ID(fmt.Sprintf("flood-%05d", i))
		if _, err := d.register(now, id, fmt.Sprintf("lobby-%d", i%50), 64, nil); err != nil {
			if !errors.Is(err, ErrDirectoryBusy) {
				t.Fatal(err)
			}
			refused++
		}
		if regs, lobbies := d.counts(); regs > 100 || lobbies > 10 {
			t.Fatalf("after %d: %d registrations in %d lobbies", i, regs, lobbies)
		}
	}
	if refused != 10_000-100 {
		t.Fatalf("%d refused, want %d", refused, 10_000-100)
	}
	// Once they expire, there is room again.
	now = now.Add(DefaultDirectoryLimits().TTL)
	if _, err := d.register(now, "late", "lobby-x", 2, nil); err != nil {
		t.Fatalf("after the flood expired: %v", err)
	}
	if regs, lobbies := d.counts(); regs != 1 || lobbies != 1 {
		t.Fatalf("%d registrations in %d lobbies, want 1 in 1", regs, lobbies)
	}
}

func TestPublicFilter(t *testing.T) {
	lab := []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}
	for _, c := range []struct {
		addr      string
		internet  bool
		withRange bool
	}{
		{"/ip4/1.2.3.4/udp/1/quic-v1", true, true},
		{"/ip4/198.18.0.1/udp/1/quic-v1", false, true},
		{"/ip4/198.19.3.2/udp/1/quic-v1", false, true},
		{"/ip4/192.168.1.2/udp/1/quic-v1", false, false},
		{"/ip4/127.0.0.1/udp/1/quic-v1", false, false},
	} {
		a := ma.StringCast(c.addr)
		if got := PublicFilter(nil)(a); got != c.internet {
			t.Errorf("%s without ranges: %v", c.addr, got)
		}
		if got := PublicFilter(lab)(a); got != c.withRange {
			t.Errorf("%s with 198.18.0.0/15: %v", c.addr, got)
		}
	}
}

// Members register at a relay over libp2p and learn each other; a member
// past the lobby's size is refused.
func TestRelayDirectory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := newTestRelay(t, ctx, RelayConfig{})
	hosts := newHosts(t, 3)
	info := peer.AddrInfo{ID: r.ID(), Addrs: r.h.Addrs()}
	var last *LobbyAnswer
	var err error
	for i, h := range hosts[:2] {
		if err := h.LibP2P().Connect(ctx, info); err != nil {
			t.Fatal(err)
		}
		if last, err = h.Register(ctx, r.ID(), "game", 2); err != nil || len(last.Members) != i+1 {
			t.Fatalf("member %d: %+v, %v", i, last, err)
		}
	}
	if last.Observed == nil || len(last.Members[0].Addrs) == 0 {
		t.Fatalf("answer %+v", last)
	}
	if err := hosts[2].LibP2P().Connect(ctx, info); err != nil {
		t.Fatal(err)
	}
	if _, err := hosts[2].Register(ctx, r.ID(), "game", 2); !errors.Is(err, ErrLobbyFull) {
		t.Fatalf("third member: %v, want ErrLobbyFull", err)
	}
	if regs, lobbies := r.Registrations(); regs != 2 || lobbies != 1 {
		t.Fatalf("relay holds %d registrations in %d lobbies", regs, lobbies)
	}
}

// BenchmarkDirectoryFull fills a directory to its default bound with the
// largest registrations it keeps (MaxEntryAddrs addresses of the longest
// kind a member can name) and reports the heap it holds.
func BenchmarkDirectoryFull(b *testing.B) {
	limits := DefaultDirectoryLimits()
	// The longest a member can name, 256 bytes of text each, parsed anew
	// for every registration as the relay does.
	addrs := func() []ma.Multiaddr {
		out := make([]ma.Multiaddr, MaxEntryAddrs)
		for i := range out {
			out[i] = ma.StringCast(fmt.Sprintf("/dns4/%s%d.example/udp/4001/quic-v1", strings.Repeat("a", 256-30), i))
		}
		return out
	}
	var held float64
	for b.Loop() {
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		d := newDirectory(limits)
		now := time.Unix(1000, 0)
		for i := range limits.MaxRegistrations {
			id := peer.ID(fmt.Sprintf("12D3KooW-member-%06d-%s", i, strings.Repeat("x", 14)))
			lobby := fmt.Sprintf("%s-%04d", strings.Repeat("l", MaxLobbyName-5), i%limits.MaxLobbies)
			if _, err := d.register(now, id, lobby, 4, addrs()); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&m1)
		held = float64(m1.HeapAlloc - m0.HeapAlloc)
		runtime.KeepAlive(d)
	}
	b.ReportMetric(held/1e6, "MB-held")
	b.ReportMetric(held/float64(limits.MaxRegistrations), "B/registration")
}
