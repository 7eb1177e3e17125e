package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/view"
)

// getJSON fetches url into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// TestReplayViewFindsDivergence: phalanx replay view on the two diverged
// fixtures serves their divergence: frame 100, section units.
func TestReplayViewFindsDivergence(t *testing.T) {
	url := startServing(t, "replay", "view", "--linger", "1m",
		filepath.Join("..", "..", "view", "replayview", "testdata", "diverged-member-0.phx"),
		filepath.Join("..", "..", "view", "replayview", "testdata", "diverged-member-1.phx"))
	var info view.ReplaysInfo
	getJSON(t, url+"api/replay", &info)
	d := info.Divergence
	if d == nil || d.Frame != 100 || d.Section != "units" || info.Frames != 300 || len(info.Files) != 2 {
		t.Fatalf("info %+v, divergence %+v; want 300 frames of 2 files diverging at frame 100 in units", info, d)
	}
	var fr view.ReplayFrame
	getJSON(t, url+"api/replay/frame?f=100", &fr)
	if len(fr.Sides) != 2 || fr.Sides[0].Scene == nil || fr.Sides[1].Checkpoint == nil || fr.Sides[1].Checkpoint.Frame != 100 {
		t.Fatalf("frame 100: %+v", fr)
	}
}

// freeUDPPort returns a loopback UDP port nothing listens on now.
func freeUDPPort(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return strings.TrimPrefix(c.LocalAddr().String(), "127.0.0.1:")
}

// TestPeerUI: phalanx peer --ui serves its member's view: its frame
// advancing, a click on the map executed as its command, and the end.
func TestPeerUI(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a 10 s session of two member processes")
	}
	dir := t.TempDir()
	listen := func(port string) string { return "/ip4/127.0.0.1/udp/" + port + "/quic-v1" }
	addr := func(key, port string) string {
		code, out, errs := runCLI(t, "peer", "--key", key, "--listen", listen(port), "--show-addr")
		if code != 0 {
			t.Fatalf("--show-addr: exit %d: %s", code, errs)
		}
		return strings.TrimSpace(strings.Split(out, "\n")[0])
	}
	ka, kb := filepath.Join(dir, "a.key"), filepath.Join(dir, "b.key")
	pa, pb := freeUDPPort(t), freeUDPPort(t)
	aa, ab := addr(ka, pa), addr(kb, pb)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b := exec.Command(exe, "peer", "--peers", "2", "--frames", "200", "--key", kb, "--listen", listen(pb), "--join", aa)
	b.Env = append(os.Environ(), "PHALANX_TEST_MEMBER=1")
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Process.Kill(); _ = b.Wait() }()
	url := startServing(t, "peer", "--peers", "2", "--frames", "200", "--key", ka, "--listen", listen(pa), "--join", ab,
		"--ui", "127.0.0.1:0", "--ui-linger", "1m")

	var snap view.Snapshot
	deadline := time.Now().Add(time.Minute)
	for {
		getJSON(t, url+"api/state", &snap)
		if len(snap.Members) == 1 && snap.Members[0].Frame > 20 && snap.Scene != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the member's view did not start playing: %+v", snap.Members)
		}
		time.Sleep(200 * time.Millisecond)
	}
	resp, err := http.Post(url+"api/command?x=10&y=20", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("command: status %d", resp.StatusCode)
	}
	for {
		getJSON(t, url+"api/state", &snap)
		if snap.Done && len(snap.Commands) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session did not end on the page: %+v", snap)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c := snap.Commands[0]
	if c.Seq < 0 || c.Frame < 0 || len(c.Executed) != 1 || !strings.Contains(c.Text, "(10, 20)") {
		t.Errorf("command %+v: want it executed here", c)
	}
	if !strings.Contains(snap.Summary, "final hash") {
		t.Errorf("summary %q", snap.Summary)
	}
}
