package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/peer"
)

// TestRelayPrintsAddress: phalanx relay prints its full /p2p/ address on a
// line of its own, and with --json one JSON line with "addr"; its key file
// keeps its identity.
func TestRelayPrintsAddress(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "relay.key")
	first := func(args ...string) string {
		cmd := exec.Command(exe, append([]string{"relay", "--listen", "/ip4/127.0.0.1/udp/0/quic-v1", "--key", key}, args...)...)
		cmd.Env = append(os.Environ(), "PHALANX_TEST_MEMBER=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}()
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("reading the relay's output: %v", err)
		}
		return strings.TrimSpace(line)
	}
	plain := first()
	infos, err := peer.ParseAddrs(plain)
	if err != nil || !strings.Contains(plain, "/p2p/") {
		t.Fatalf("relay printed %q: %v", plain, err)
	}
	var js struct {
		Addr string `json:"addr"`
	}
	line := first("--json")
	if err := json.Unmarshal([]byte(line), &js); err != nil {
		t.Fatalf("relay --json printed %q: %v", line, err)
	}
	again, err := peer.ParseAddrs(js.Addr)
	if err != nil || again[0].ID != infos[0].ID {
		t.Fatalf("relay --json addr %q (%v), want the same identity as %q", js.Addr, err, plain)
	}
}

// TestPeerRelayFlags: --relay and --lobby go together, and --relay wants
// the relay's /p2p/ address.
func TestPeerRelayFlags(t *testing.T) {
	for _, args := range [][]string{
		{"peer", "--lobby", "x"},
		{"peer", "--relay", "/ip4/127.0.0.1/udp/1/quic-v1/p2p/12D3KooWLJ4GVD6LoYNfM6wrSKvGpDzy2dtT5WQHcjSmB1S8TfNj"},
		{"peer", "--relay", "/ip4/127.0.0.1/udp/1/quic-v1", "--lobby", "x"},
		{"relay", "--public-cidr", "not-a-cidr"},
	} {
		usageError(t, "", args...)
	}
}
