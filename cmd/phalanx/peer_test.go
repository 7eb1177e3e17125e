package main

import (
	"encoding/json"
	"strings"
	"testing"

	ma "github.com/multiformats/go-multiaddr"
)

// TestPeerMalformedJoin: a --join that is no member address fails at flag
// checking, exit 2, before the host starts (nothing is listening, nothing
// is printed on stdout).
func TestPeerMalformedJoin(t *testing.T) {
	for _, join := range []string{"/ip4/1.2.3.4/udp/1", "not an address", "/ip4/127.0.0.1/udp/1/quic-v1/p2p/notanid"} {
		code, out, errs := runCLI(t, "peer", "--join", join)
		if code != 2 || out != "" || !strings.Contains(errs, "--join") || strings.Contains(errs, "member -1") {
			t.Errorf("--join %q: exit %d, stdout %q, stderr %q", join, code, out, errs)
		}
	}
}

// TestPeerShowAddr: --show-addr prints every listen address, each a
// multiaddr another member can --join; with --json, one JSON object.
func TestPeerShowAddr(t *testing.T) {
	code, out, errs := runCLI(t, "peer", "--show-addr")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if _, err := ma.NewMultiaddr(l); err != nil || !strings.Contains(l, "/p2p/") {
			t.Errorf("line %q is not a member address: %v", l, err)
		}
	}
	code, out, _ = runCLI(t, "peer", "--show-addr", "--json")
	var shown struct {
		ID    string   `json:"id"`
		Addrs []string `json:"addrs"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || shown.ID == "" || len(shown.Addrs) == 0 {
		t.Errorf("--json: exit %d, %q: %v", code, out, err)
	}
}

// TestPeerLobbyTimeout: a well-formed --join that nobody answers makes the
// lobby give up after --lobby-timeout, saying why; no summary of a session
// it never had.
func TestPeerLobbyTimeout(t *testing.T) {
	// A fresh identity on a loopback port where nothing listens.
	code, out, _ := runCLI(t, "peer", "--show-addr", "--json")
	var shown struct {
		Addrs []string `json:"addrs"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil {
		t.Fatalf("exit %d, %q", code, out)
	}
	code, out, errs := runCLI(t, "peer", "--join", shown.Addrs[0], "--lobby-timeout", "1s")
	if code != 1 || !strings.Contains(errs, "gave up after --lobby-timeout 1s") || !strings.Contains(errs, "did not answer") || strings.Contains(out, "member -1") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
}

// TestPeersLimit: --peers takes what the simulation takes, and says so.
func TestPeersLimit(t *testing.T) {
	usageError(t, "1..16", "sim", "--peers", "17", "--frames", "1")
	if code, out, errs := runCLI(t, "sim", "--peers", "17", "--frames", "5", "--sim", "null"); code != 0 {
		t.Errorf("null with 17 members: exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, "sim", "-h"); code != 0 || !strings.Contains(errs, "1 to 64 (--sim rts: 1 to 16)") {
		t.Errorf("help: %q", errs)
	}
}
