package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/view"
	"github.com/phalanx-net/phalanx/view/replayview"
	"github.com/phalanx-net/phalanx/view/web"
)

// replayView is phalanx replay view: the page over replays, opened at the
// first divergent frame when they diverged.
func replayView(args []string, stdout, stderr io.Writer) int {
	var addr string
	var linger time.Duration
	files, code := parseFiles("view", "[--addr ADDR] FILE|REPORT...", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&addr, "addr", "127.0.0.1:0", "serve the page on `ADDR`")
		fs.DurationVar(&linger, "linger", 0, "stop serving after this long (0: when interrupted)")
	})
	if code >= 0 {
		return code
	}
	start := time.Now()
	files, names, reports, worlds, from, cleanup, err := openReports(files)
	defer cleanup()
	if err != nil {
		fmt.Fprintln(stderr, "phalanx replay view:", err)
		return 1
	}
	rs, err := replayview.OpenReplays(replayview.ReplayConfig{
		Files: files, Names: names, Reports: reports, Worlds: worlds, FromReports: from,
		Sim: replaySim,
		Clone: func(s lockstep.Simulation) lockstep.Simulation {
			if r, ok := s.(*rts.Sim); ok {
				return r.Clone()
			}
			return nil
		},
		Describe: describeCommand,
	})
	if err != nil {
		fmt.Fprintln(stderr, "phalanx replay view:", err)
		return 1
	}
	stdout = &syncWriter{w: stdout} // the check below reports from its own goroutine
	info := rs.Info()
	fmt.Fprintf(stdout, "%d replay(s), %d frames, read in %.1f s; each is re-run to check its hashes while the page is served\n", len(info.Files), info.Frames, time.Since(start).Seconds())
	if d := info.Divergence; d != nil {
		fmt.Fprintf(stdout, "diverged: first divergent frame %d", d.Frame)
		if d.Section != "" {
			fmt.Fprintf(stdout, ", section %q", d.Section)
		}
		fmt.Fprintf(stdout, ": %s\n", d.Text)
	}
	shown := make([]string, len(info.Files))
	for i, f := range info.Files {
		shown[i] = f.Name
	}
	// The check starts before the page is served, so that the first
	// seeks already share what it re-runs; it reports after the URL.
	ctx, cancel := context.WithCancel(context.Background())
	checked, served := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(checked)
		start := time.Now()
		rs.Check(ctx)
		select {
		case <-served:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return
		}
		fmt.Fprintf(stdout, "re-run in %.1f s\n", time.Since(start).Seconds())
		for _, f := range rs.Info().Files {
			if !f.Reproduces && f.Error == "" {
				fmt.Fprintf(stdout, "  %s: re-running its buckets does not reproduce its hashes from frame %d (section %q)\n", f.Name, f.RerunFrame, f.RerunSection)
			}
		}
	}()
	defer func() { cancel(); <-checked }()
	srv := web.NewServer(web.Config{Title: strings.Join(shown, ", "), Replays: rs})
	url, stop, err := serveView(addr, srv, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "phalanx replay view:", err)
		return 1
	}
	defer stop()
	close(served)
	waitView(url, linger, stdout)
	return 0
}

// syncWriter serializes writes to w from several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// openReports replaces every desync report among files by the replay it
// holds, written to a temporary directory that cleanup removes, and
// returns the names to show, what the reports say, and by file the world
// and the report it came from (nil for a replay given as one).
func openReports(files []string) (out, names []string, reports []view.DesyncReport, worlds []*view.Scene, from []*replay.Report, cleanup func(), err error) {
	dir := ""
	cleanup = func() {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	for _, name := range files {
		head := make([]byte, 16)
		if f, err := os.Open(name); err == nil {
			n, _ := f.Read(head)
			head = head[:n]
			f.Close()
		}
		if !replay.IsReport(head) {
			out, names, worlds, from = append(out, name), append(names, filepath.Base(name)), append(worlds, nil), append(from, nil)
			continue
		}
		r, err := replay.ReadReport(name)
		if err != nil {
			return nil, nil, nil, nil, nil, cleanup, err
		}
		reports = append(reports, reportView(filepath.Base(name), r))
		if len(r.Replay) == 0 {
			continue // the member recorded no replay: the report alone
		}
		if dir == "" {
			if dir, err = os.MkdirTemp("", "phalanx-report-"); err != nil {
				return nil, nil, nil, nil, nil, cleanup, err
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("%d.phx", len(out)))
		if err := os.WriteFile(p, r.Replay, 0o600); err != nil {
			return nil, nil, nil, nil, nil, cleanup, err
		}
		out = append(out, p)
		names = append(names, fmt.Sprintf("member %d's replay (%s)", r.Self, filepath.Base(name)))
		var world *view.Scene
		if len(r.World) > 0 {
			world = new(view.Scene)
			if json.Unmarshal(r.World, world) != nil {
				world = nil // shown without it
			}
		}
		worlds, from = append(worlds, world), append(from, &r)
	}
	if len(out) == 0 {
		return nil, nil, nil, nil, nil, cleanup, fmt.Errorf("the reports hold no replay to show")
	}
	return out, names, reports, worlds, from, cleanup, nil
}

// reportView is what the page shows of a desync report.
func reportView(file string, r replay.Report) view.DesyncReport {
	d := view.DesyncReport{File: file, Engine: r.Engine, Build: r.Build, Sim: r.SimName + " " + r.SimVersion, Self: r.Self, Member: r.Member,
		With: r.With, Frame: r.Frame, Agreed: r.Agreed, Section: r.Section, Detail: r.Detail, Ours: []view.SectionHash{}, Theirs: []view.SectionHash{}}
	for _, s := range r.Ours {
		d.Ours = append(d.Ours, view.SectionHash{Name: s.Name, Hash: s.Hash})
	}
	for _, s := range r.Theirs {
		d.Theirs = append(d.Theirs, view.SectionHash{Name: s.Name, Hash: s.Hash})
	}
	return d
}
