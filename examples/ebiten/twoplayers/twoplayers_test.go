// Package twoplayers tests the Squads example as a player would run it: two
// processes, each in a window of its own. It holds only that test, apart
// from the game, so that the test binary needs no display.
package twoplayers

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	libp2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/peer"
)

// TestTwoPlayersUnderXvfb builds the game and plays it as two processes,
// each in its own virtual X display, by script: both must end at the
// agreed last frame with the same hash, and each saves a screenshot of its
// window. It needs xvfb-run (and the X11 and OpenGL libraries Ebitengine
// links against); without it the test is skipped.
func TestTwoPlayersUnderXvfb(t *testing.T) {
	if _, err := exec.LookPath("xvfb-run"); err != nil {
		t.Skip("xvfb-run not found: install xvfb to run the two-player test (.ci/run does)")
	}
	const frames = 200
	dir := t.TempDir()
	bin := filepath.Join(dir, "squads")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Two identities and two loopback ports, so each player can be given
	// the other's address before either starts.
	var addrs, listens, keys [2]string
	for i := range 2 {
		keys[i] = filepath.Join(dir, fmt.Sprintf("p%d.key", i))
		k, err := peer.LoadOrCreateIdentity(keys[i])
		if err != nil {
			t.Fatal(err)
		}
		id, err := libp2ppeer.IDFromPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		listens[i] = fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1", freeUDPPort(t))
		addrs[i] = listens[i] + "/p2p/" + id.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		out []byte
		err error
	}
	results := make([]chan result, 2)
	for i := range 2 {
		results[i] = make(chan result, 1)
		cmd := exec.CommandContext(ctx, "xvfb-run", "-a", "-s", "-screen 0 800x600x24", bin,
			"--key", keys[i], "--listen", listens[i], "--join", addrs[1-i],
			"--peers", "2", "--frames", fmt.Sprint(frames), "--script",
			"--screenshot", filepath.Join(dir, fmt.Sprintf("player-%d.png", i)))
		go func() {
			out, err := cmd.CombinedOutput()
			results[i] <- result{out, err}
		}()
	}
	final := regexp.MustCompile(`player (\d): frame (\d+), final hash ([0-9a-f]{16})`)
	var hashes [2]string
	for i := range 2 {
		r := <-results[i]
		if r.err != nil {
			t.Fatalf("player %d: %v\n%s", i, r.err, r.out)
		}
		m := final.FindSubmatch(r.out)
		if m == nil {
			t.Fatalf("player %d printed no final line:\n%s", i, r.out)
		}
		if string(m[2]) != fmt.Sprint(frames-1) {
			t.Errorf("player %d ended at frame %s, want %d", i, m[2], frames-1)
		}
		hashes[i] = string(m[3])
		if bytes.Contains(r.out, []byte("level=WARN")) {
			t.Errorf("player %d logged a warning:\n%s", i, r.out)
		}
	}
	if hashes[0] != hashes[1] {
		t.Fatalf("final hashes differ: %s and %s", hashes[0], hashes[1])
	}
	for i := range 2 {
		path := filepath.Join(dir, fmt.Sprintf("player-%d.png", i))
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("player %d saved no screenshot: %v", i, err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("screenshot %d: %v", i, err)
		}
		if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 240 {
			t.Errorf("screenshot %d is %v, want 320x240", i, b)
		}
		if out := os.Getenv("SQUADS_SCREENSHOTS"); out != "" {
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(filepath.Join(out, filepath.Base(path)), data, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
	t.Logf("both players ended at frame %d with hash %s", frames-1, hashes[0])
}

// freeUDPPort returns a loopback UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestEmbeddingDocQuotesUpdate keeps docs/embedding.md's copy of the game
// loop's Update true.
func TestEmbeddingDocQuotesUpdate(t *testing.T) {
	code, err := os.ReadFile(filepath.Join("..", "game.go"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(code, []byte("func (g *game) Update() error {"))
	j := bytes.Index(code[i:], []byte("\n}\n"))
	if i < 0 || j < 0 {
		t.Fatal("game.go has no Update method")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, code[i:i+j+3]) {
		t.Error("docs/embedding.md does not quote Update of examples/ebiten/game.go as it is: copy it there again")
	}
}
