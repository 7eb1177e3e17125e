package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// screenshots is where the browser tests also save their screenshots
// (docs/images for the README: go test ./cmd/phalanx -run TestBrowser
// -screenshots ../../docs/images).
var screenshots = flag.String("screenshots", "", "also save the browser tests' screenshots in `DIR`")

// findBrowser returns the path of a Chromium, or skips the test.
func findBrowser(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a browser against a live session")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on this machine (Debian: apt-get install chromium; .ci/run installs it): the browser tests need a real browser")
	return ""
}

// browser starts a headless Chromium for the test.
func browser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1500, 1000))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })
	return ctx
}

// startServing runs this test binary as phalanx with args and returns the
// URL it serves its page on; the process is interrupted at the end of the
// test.
func startServing(t *testing.T, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "PHALANX_TEST_MEMBER=1")
	cmd.Stderr = &testWriter{t: t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "view: "); ok {
				urls <- u
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(time.Minute):
		t.Fatal("no view URL printed within a minute")
	}
	return ""
}

// testWriter logs a process's standard error.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(b []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// poll evaluates js until ok accepts its result, or fails the test after
// limit.
func poll[T any](t *testing.T, ctx context.Context, what, js string, limit time.Duration, ok func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(limit)
	var v T
	for {
		var err error
		v, err = chromedp.Run(ctx, chromedp.Evaluate[T](js))
		if err == nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last %v, error %v)", what, limit, v, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// screenshot saves the page as name in the test's directory and in
// -screenshots.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.TempDir()}
	if *screenshots != "" {
		dirs = append(dirs, *screenshots)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot %s: %d bytes", name, len(png))
}

// TestBrowserLiveMesh: phalanx mesh --ui with four members; in a real
// browser the page shows every member with a frame that advances; a click
// on the map is a command of the member the page draws, executed on every
// member; after the session the page shows the summary.
func TestBrowserLiveMesh(t *testing.T) {
	path := findBrowser(t)
	url := startServing(t, "mesh", "--ui", "--peers", "4", "--frames", "500", "--ui-linger", "3m")
	ctx := browser(t, path)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	const frames = `[...document.querySelectorAll("#members tbody tr")].map(r => +r.querySelector(".frame").textContent)`
	first := poll(t, ctx, "four members playing", frames, time.Minute, func(f []int) bool {
		if len(f) != 4 {
			return false
		}
		for _, v := range f {
			if v <= 0 {
				return false
			}
		}
		return true
	})
	poll(t, ctx, "every member's frame advancing", frames, 30*time.Second, func(f []int) bool {
		for i := range f {
			if f[i] <= first[i]+10 {
				return false
			}
		}
		return len(f) == 4
	})
	poll(t, ctx, "the world drawn", `document.querySelector("#scene-from").textContent`, 30*time.Second,
		func(s string) bool { return strings.Contains(s, "simulation at frame") })

	// The middle of tile (40, 70) of the 128×128 map, in the page.
	at, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const c = document.querySelector("#map"), r = c.getBoundingClientRect(), tile = c.clientWidth / 128;
		return [r.left + c.clientLeft + 40.5 * tile, r.top + c.clientTop + 70.5 * tile];
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.MouseClickXY(at[0], at[1])); err != nil {
		t.Fatal(err)
	}
	const command = `(() => { const li = document.querySelector('#commands li[data-id="1"]'); return li ? li.dataset.executed + " " + li.textContent : ""; })()`
	got := poll(t, ctx, "the click's command executed on every member", command, 30*time.Second,
		// The executions and the frame it ran at reach the page in
		// different members' lines: wait for both.
		func(s string) bool { return strings.HasPrefix(s, "4 ") && strings.Contains(s, " at frame ") })
	if !strings.Contains(got, "units to (40, 70)") || !strings.Contains(got, "executed on 4 of 4 members at frame") {
		t.Errorf("command %q: want the member's units sent to tile (40, 70), executed on 4 of 4", got)
	}
	poll(t, ctx, "frame 250 reached", frames, time.Minute, func(f []int) bool { return len(f) == 4 && f[0] >= 250 })
	screenshot(t, ctx, "live-view.png")

	summary := poll(t, ctx, "the session's end on the page", `document.querySelector("#status").textContent`, 90*time.Second,
		func(s string) bool { return strings.HasPrefix(s, "ended") })
	if !strings.Contains(summary, "identical") || strings.Contains(summary, "NOT") {
		t.Errorf("summary %q, want an identical end", summary)
	}
}

// TestBrowserReplayDiverged: phalanx replay view on two replays of one
// session that diverged opens at the first divergent frame and names the
// first divergent section, with both worlds drawn.
func TestBrowserReplayDiverged(t *testing.T) {
	path := findBrowser(t)
	url := startServing(t, "replay", "view", "--linger", "3m",
		filepath.Join("..", "..", "view", "replayview", "testdata", "diverged-member-0.phx"),
		filepath.Join("..", "..", "view", "replayview", "testdata", "diverged-member-1.phx"))
	ctx := browser(t, path)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	const state = `(() => {
		const t = (s) => { const e = document.querySelector(s); return e ? e.textContent : ""; };
		const sides = [...document.querySelectorAll(".side h3")].map(h => h.textContent);
		return [t("#div-frame"), t("#div-section"), document.querySelector("#frameno").value, sides.join("|")];
	})()`
	got := poll(t, ctx, "the divergence shown", state, 30*time.Second, func(s []string) bool {
		return len(s) == 4 && s[0] != "" && strings.Count(s[3], "at frame") == 2
	})
	if got[0] != "100" || got[1] != "units" || got[2] != "100" || !strings.Contains(got[3], "member-1.phx (member 1) at frame 100") {
		t.Errorf("page shows divergent frame %q, section %q, at frame %q, sides %q; want 100, units, 100", got[0], got[1], got[2], got[3])
	}
	differs, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll(".side .differs td:first-child")].map(e => e.textContent).join(",")`))
	if err != nil {
		t.Fatal(err)
	}
	if differs != "units" {
		t.Errorf("sections marked as differing: %q, want units", differs)
	}
	screenshot(t, ctx, "replay-diverged.png")
}

// TestBrowserDesyncReport: phalanx replay view on the desync report of a
// perturbed member opens at the divergent frame and draws both sides'
// states restored from the report, naming the first divergent section.
func TestBrowserDesyncReport(t *testing.T) {
	path := findBrowser(t)
	dir := t.TempDir()
	if code, _, errs := runCLI(t, "sim", "--perturb", "1@100", "--record", dir, "--frames", "200"); code != 1 {
		t.Fatalf("exit %d, want 1 (diverged): %s", code, errs)
	}
	url := startServing(t, "replay", "view", "--linger", "3m", filepath.Join(dir, "desync-member-1-frame-100.json"))
	ctx := browser(t, path)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	const state = `(() => {
		const r = document.querySelector(".side .restored");
		if (!r || r.hidden) return ["", "", ""];
		const s = r.querySelector(".restored-section");
		return [document.querySelector("#frameno").value, r.querySelector("h2").textContent, s ? s.textContent : ""];
	})()`
	got := poll(t, ctx, "the restored states shown", state, 30*time.Second, func(s []string) bool { return len(s) == 3 && s[1] != "" })
	if got[0] != "100" || !strings.Contains(got[1], "divergent frame (frame 100)") || got[2] != "units" {
		t.Errorf("page at frame %q shows %q, section %q; want frame 100, the divergent frame's states, section units", got[0], got[1], got[2])
	}
	screenshot(t, ctx, "desync-restored.png")
}
