package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/view"
)

func bigSnapshot(i int) *view.Snapshot {
	s := &view.Snapshot{Title: "t", Seconds: float64(i), Members: []view.Member{{Slot: 0, Frame: int64(i), BytesSent: int64(i) * 100}}}
	s.Scene = &view.Scene{Width: 128, Height: 128, Blocked: make([]byte, 2048)}
	for u := range 800 {
		s.Scene.Units = append(s.Scene.Units, view.Unit{ID: uint32(u), X: float32(u % 128), Y: float32(u / 128)})
	}
	return s
}

// TestPublishNeverWaitsForAPage: a page that opened the feed and reads
// nothing does not slow Publish; a page that reads gets the history, then
// snapshots coalesced to at most one per interval, the newest last.
func TestPublishNeverWaitsForAPage(t *testing.T) {
	s := NewServer(Config{Interval: 50 * time.Millisecond})
	s.Publish(bigSnapshot(0))
	ts := httptest.NewServer(s)
	defer ts.Close()

	// A stuck page: it sends its request and never reads.
	stuck, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	if _, err := stuck.Write([]byte("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// A reading page.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}

	// 2,000 snapshots of ~40 kB each (80 MB of JSON if every page got
	// each) while the stuck page's socket buffers fill up.
	const n = 2000
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= n; i++ {
			s.Publish(bigSnapshot(i))
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Publish waited for a page")
	}
	publishing := time.Since(start)

	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	var events []string
	last := -1
	for sc.Scan() && last != n {
		line := sc.Text()
		if strings.HasPrefix(line, "event: ") {
			events = append(events, strings.TrimPrefix(line, "event: "))
		}
		if strings.HasPrefix(line, "data: ") && len(events) > 0 && events[len(events)-1] == "history" {
			events = append(events, "history-data")
			continue
		}
		if strings.HasPrefix(line, "data: ") {
			var snap view.Snapshot
			if err := json.Unmarshal([]byte(line[6:]), &snap); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			events = append(events, "snapshot")
			last = int(snap.Seconds)
		}
	}
	if len(events) < 3 || events[0] != "history" {
		t.Fatalf("the page got %v, want the history first", events[:min(len(events), 5)])
	}
	if last != n {
		t.Fatalf("the newest snapshot the page got is %d, want %d", last, n)
	}
	// At most one snapshot per interval while publishing, plus the first
	// and the last.
	snaps := 0
	for _, e := range events {
		if e == "snapshot" {
			snaps++
		}
	}
	if limit := int(publishing/(50*time.Millisecond)) + 3; snaps > limit {
		t.Errorf("the page got %d snapshots in %v, want at most %d (coalesced)", snaps, publishing, limit)
	}
}

// TestHistoryBounded: the history keeps at most maxHistory samples,
// spread over the whole session.
func TestHistoryBounded(t *testing.T) {
	var h history
	for i := range 5 * maxHistory {
		h.add(&view.Snapshot{Seconds: float64(i), Members: []view.Member{{Stalls: int64(i)}}})
	}
	if len(h.list) > maxHistory {
		t.Fatalf("%d samples kept, want at most %d", len(h.list), maxHistory)
	}
	if first, last := h.list[0].Seconds, h.list[len(h.list)-1].Seconds; first != 0 || last < 5*maxHistory-8 {
		t.Errorf("samples span %v to %v, want 0 to about %d", first, last, 5*maxHistory-1)
	}
}

// TestCommand: a click reaches Config.Command with its tile; without a
// Command the page is told so.
func TestCommand(t *testing.T) {
	var gotX, gotY int
	s := NewServer(Config{Command: func(x, y int) (string, error) {
		gotX, gotY = x, y
		return "move", nil
	}})
	ts := httptest.NewServer(s)
	defer ts.Close()
	resp, err := http.PostForm(ts.URL+"/api/command", url.Values{"x": {"12"}, "y": {"34"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || gotX != 12 || gotY != 34 {
		t.Errorf("status %d, tile (%d, %d); want 200 and (12, 34)", resp.StatusCode, gotX, gotY)
	}
	resp, err = http.Post(ts.URL+"/api/command?x=a", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad tile: status %d, want 400", resp.StatusCode)
	}
	ts2 := httptest.NewServer(NewServer(Config{}))
	defer ts2.Close()
	resp, err = http.Post(ts2.URL+"/api/command?x=1&y=1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("no Command: status %d, want 404", resp.StatusCode)
	}
}

// TestPageSelfContained: the page is served from the binary and refers to
// nothing outside it.
func TestPageSelfContained(t *testing.T) {
	ts := httptest.NewServer(NewServer(Config{}))
	defer ts.Close()
	for _, p := range []string{"/", "/app.js", "/style.css"} {
		resp, err := http.Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: status %d", p, resp.StatusCode)
		}
	}
	outside := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|@import|src="http`)
	err := fs.WalkDir(page, "page", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := page.ReadFile(path)
		if err != nil {
			return err
		}
		if m := outside.Find(b); m != nil {
			t.Errorf("%s refers to %q outside the binary", path, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCommandRefusesCrossSite: a post from another site's page is refused
// before it reaches the member; the page's own post goes through.
func TestCommandRefusesCrossSite(t *testing.T) {
	var got int
	s := NewServer(Config{Command: func(x, y int) (string, error) { got++; return "ok", nil }})
	post := func(site string) int {
		req := httptest.NewRequest("POST", "/api/command", strings.NewReader("x=1&y=2"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", site)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := post("cross-site"); code != http.StatusForbidden {
		t.Errorf("cross-site post: status %d, want %d", code, http.StatusForbidden)
	}
	if got != 0 {
		t.Fatalf("a cross-site post issued %d commands", got)
	}
	if code := post("same-origin"); code != http.StatusOK || got != 1 {
		t.Errorf("same-origin post: status %d, %d commands; want 200 and 1", code, got)
	}
}
