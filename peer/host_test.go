package peer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	ma "github.com/multiformats/go-multiaddr"
)

func TestLoadOrCreateIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "member.key")
	key, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if key.Type() != crypto.Ed25519 {
		t.Errorf("key type %v, want Ed25519", key.Type())
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode %v, want 0600", perm)
	}
	again, err := LoadOrCreateIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if !key.Equals(again) {
		t.Fatal("reloaded key differs")
	}
	data, _ := os.ReadFile(path)
	if back, err := crypto.UnmarshalPrivateKey(data); err != nil || !back.Equals(key) {
		t.Fatalf("file is not libp2p's marshalled key: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key", len(entries))
	}

	for _, corrupt := range [][]byte{nil, []byte("not a key"), data[:len(data)/2]} {
		if err := os.WriteFile(path, corrupt, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadOrCreateIdentity(path)
		if !errors.Is(err, ErrBadIdentity) || !strings.Contains(err.Error(), path) {
			t.Errorf("corrupt file (%d bytes): error %v, want ErrBadIdentity naming the file", len(corrupt), err)
		}
	}

	// Files larger than a key are refused without being read to their end:
	// a big one, and one without end.
	big := filepath.Join(t.TempDir(), "big.key")
	if err := os.WriteFile(big, make([]byte, MaxIdentityFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{big, "/dev/zero"} {
		if _, err := LoadOrCreateIdentity(p); !errors.Is(err, ErrBadIdentity) || !strings.Contains(err.Error(), "more than 16384 bytes") {
			t.Errorf("%s: error %v, want ErrBadIdentity for its size", p, err)
		}
	}
}

func TestNewHostIdentityFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "member.key")
	ctx := context.Background()
	h1, err := NewHost(ctx, HostConfig{IdentityFile: path})
	if err != nil {
		t.Fatal(err)
	}
	id := h1.ID()
	h1.Close()
	h2, err := NewHost(ctx, HostConfig{IdentityFile: path})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close()
	if h2.ID() != id {
		t.Fatalf("identity not kept: %s then %s", id, h2.ID())
	}

	os.WriteFile(path, []byte("garbage"), 0o600)
	if _, err := NewHost(ctx, HostConfig{IdentityFile: path}); !errors.Is(err, ErrBadIdentity) {
		t.Fatalf("NewHost with a corrupt key file: %v, want ErrBadIdentity", err)
	}
}

func TestHostAddrs(t *testing.T) {
	h := newHosts(t, 1)[0]
	addrs := h.Addrs()
	if len(addrs) == 0 {
		t.Fatal("no addresses")
	}
	for _, a := range addrs {
		ip, _ := a.ValueForProtocol(ma.P_IP4)
		id, _ := a.ValueForProtocol(ma.P_P2P)
		_, quicErr := a.ValueForProtocol(ma.P_QUIC_V1)
		if ip != "127.0.0.1" || id != h.ID().String() || quicErr != nil {
			t.Errorf("address %v: want /ip4/127.0.0.1/udp/PORT/quic-v1/p2p/%s", a, h.ID())
		}
	}
	if d := h.DatagramAddr(); !d.Addr().IsLoopback() || d.Port() == 0 {
		t.Errorf("datagram address %v: want loopback with a port", d)
	}

	// IPv6 loopback, where the system has it.
	h6, err := NewHost(context.Background(), HostConfig{ListenAddrs: []string{"/ip6/::1/udp/0/quic-v1"}})
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer h6.Close()
	if d := h6.DatagramAddr(); d.Addr().String() != "::1" {
		t.Errorf("IPv6 host's datagram address %v, want [::1]:PORT", d)
	}
}

func TestHostClosed(t *testing.T) {
	h := newHosts(t, 1)[0]
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := Join(context.Background(), h, testParams(1), nil); !errors.Is(err, ErrHostClosed) {
		t.Fatalf("Join on a closed host: %v, want ErrHostClosed", err)
	}
}

// A session of one member needs nobody: it still runs the commit and
// derives a seed.
func TestJoinAlone(t *testing.T) {
	h := newHosts(t, 1)[0]
	s, err := Join(context.Background(), h, testParams(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Members) != 1 || s.Self != 0 || s.Seed == ([32]byte{}) {
		t.Fatalf("session %+v", s)
	}
}
