package web

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/view"
)

//go:embed page
var page embed.FS

// DefaultInterval is the shortest time between two snapshots sent to one
// page when Config.Interval is 0.
const DefaultInterval = 250 * time.Millisecond

// Config configures a Server.
type Config struct {
	// Title names the session or the replays on the page.
	Title string
	// Interval is the shortest time between two snapshots sent to one page
	// (default DefaultInterval). Snapshots published meanwhile are
	// coalesced: the page gets the newest.
	Interval time.Duration
	// Command, when set, is called with the tile (x, y) a person clicked
	// on the map; it issues a command and returns what it ordered, or why
	// it could not. It is called from an HTTP handler's goroutine and must
	// not block for long. Nil: clicks on the map do nothing.
	Command func(x, y int) (string, error)
	// Replays, when set, serves replays instead of a live session (see
	// replayview.OpenReplays).
	Replays view.Replays
}

// Server serves the page and feeds it. Publish, ServeHTTP and Serve are
// safe for concurrent use.
type Server struct {
	cfg Config
	mux *http.ServeMux

	mu      sync.Mutex
	cur     *view.Snapshot
	version uint64
	wake    chan struct{} // closed and replaced by every Publish
	hist    history

	jsonMu  sync.Mutex // serialises marshalling; never held with mu
	jsonVer uint64
	json    []byte
}

// NewServer returns a server of cfg.
func NewServer(cfg Config) *Server {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	s := &Server{cfg: cfg, wake: make(chan struct{}), mux: http.NewServeMux()}
	s.mux.Handle("GET /", http.FileServerFS(mustSub(page, "page")))
	s.mux.HandleFunc("GET /api/mode", s.serveMode)
	s.mux.HandleFunc("GET /api/state", s.serveState)
	s.mux.HandleFunc("GET /events", s.serveEvents)
	// Commands come from this page only: a cross-site post from another
	// page the browser has open is refused (Sec-Fetch-Site, Origin).
	s.mux.Handle("POST /api/command", http.NewCrossOriginProtection().Handler(http.HandlerFunc(s.serveCommand)))
	s.mux.HandleFunc("GET /api/replay", s.serveReplayInfo)
	s.mux.HandleFunc("GET /api/replay/frame", s.serveReplayFrame)
	return s
}

// Publish makes snap the newest snapshot; every open page receives it
// within Config.Interval, or a newer one. It never waits for a page: it
// only swaps a pointer and notes a sample of the history the charts
// draw. snap must not be modified afterwards.
func (s *Server) Publish(snap *view.Snapshot) {
	s.mu.Lock()
	s.cur = snap
	s.version++
	s.hist.add(snap)
	close(s.wake)
	s.wake = make(chan struct{})
	s.mu.Unlock()
}

// ServeHTTP serves the page and its feed.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Serve serves HTTP on ln until ctx ends, then closes ln and every open
// page's connection and returns nil; or it returns the error that ended
// serving first.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Idle keep-alive connections are closed: an event stream is never idle.
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		_ = srv.Close()
		<-errc
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}

// current returns the newest snapshot's JSON and its version, marshalled
// once per version, outside the lock Publish takes.
func (s *Server) current() ([]byte, uint64, <-chan struct{}) {
	s.mu.Lock()
	snap, ver, wake := s.cur, s.version, s.wake
	s.mu.Unlock()
	s.jsonMu.Lock()
	defer s.jsonMu.Unlock()
	if s.jsonVer != ver || s.json == nil {
		b, err := json.Marshal(snap)
		if err != nil {
			b = []byte("null")
		}
		s.json, s.jsonVer = b, ver
	}
	return s.json, ver, wake
}

func (s *Server) serveMode(w http.ResponseWriter, _ *http.Request) {
	mode := "live"
	if s.cfg.Replays != nil {
		mode = "replay"
	}
	writeJSON(w, map[string]any{"mode": mode, "title": s.cfg.Title, "command": s.cfg.Command != nil})
}

func (s *Server) serveState(w http.ResponseWriter, _ *http.Request) {
	b, _, _ := s.current()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// serveEvents feeds one page over Server-Sent Events: first the history
// ("history" event), then the newest snapshot at most once per Interval
// (default events), until the page goes or the server closes.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	s.mu.Lock()
	samples := append([]Sample{}, s.hist.list...)
	s.mu.Unlock()
	hist, err := json.Marshal(samples)
	if err != nil {
		return
	}
	if _, err := fmt.Fprintf(w, "event: history\ndata: %s\n\n", hist); err != nil {
		return
	}
	fl.Flush()
	var sent uint64
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		b, ver, wake := s.current()
		if ver != sent {
			sent = ver
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
			// Coalesce: wait out the interval before looking again.
			t.Reset(s.cfg.Interval)
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
			continue
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) serveCommand(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Command == nil {
		http.Error(w, "this view issues no commands", http.StatusNotFound)
		return
	}
	x, err1 := strconv.Atoi(r.FormValue("x"))
	y, err2 := strconv.Atoi(r.FormValue("y"))
	if err1 != nil || err2 != nil {
		http.Error(w, "want x and y, whole tiles", http.StatusBadRequest)
		return
	}
	what, err := s.cfg.Command(x, y)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	writeJSON(w, map[string]string{"ordered": what})
}

func (s *Server) serveReplayInfo(w http.ResponseWriter, _ *http.Request) {
	if s.cfg.Replays == nil {
		http.Error(w, "no replays", http.StatusNotFound)
		return
	}
	writeJSON(w, s.cfg.Replays.Info())
}

func (s *Server) serveReplayFrame(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Replays == nil {
		http.Error(w, "no replays", http.StatusNotFound)
		return
	}
	f, err := strconv.ParseInt(r.FormValue("f"), 10, 64)
	if err != nil {
		http.Error(w, "want f, a frame", http.StatusBadRequest)
		return
	}
	fr, err := s.cfg.Replays.Frame(f)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, fr)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
