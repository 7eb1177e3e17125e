package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/view"
	"github.com/phalanx-net/phalanx/view/replayview"
)

// replayView is phalanx replay view: the page over replays, opened at the
// first divergent frame when they diverged.
func replayView(args []string, stdout, stderr io.Writer) int {
	var addr string
	var linger time.Duration
	files, code := parseFiles("view", "[--addr ADDR] FILE...", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&addr, "addr", "127.0.0.1:0", "serve the page on `ADDR`")
		fs.DurationVar(&linger, "linger", 0, "stop serving after this long (0: when interrupted)")
	})
	if code >= 0 {
		return code
	}
	start := time.Now()
	rs, err := replayview.OpenReplays(replayview.ReplayConfig{
		Files: files,
		Sim:   replaySim,
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
	info := rs.Info()
	fmt.Fprintf(stdout, "%d replay(s), %d frames, read and re-run in %.1f s\n", len(info.Files), info.Frames, time.Since(start).Seconds())
	for _, f := range info.Files {
		if !f.Reproduces && f.Error == "" {
			fmt.Fprintf(stdout, "  %s: re-running its buckets does not reproduce its hashes from frame %d (section %q)\n", f.Name, f.RerunFrame, f.RerunSection)
		}
	}
	if d := info.Divergence; d != nil {
		fmt.Fprintf(stdout, "diverged: first divergent frame %d", d.Frame)
		if d.Section != "" {
			fmt.Fprintf(stdout, ", section %q", d.Section)
		}
		fmt.Fprintf(stdout, ": %s\n", d.Text)
	}
	names := make([]string, len(info.Files))
	for i, f := range info.Files {
		names[i] = f.Name
	}
	srv := view.NewServer(view.Config{Title: strings.Join(names, ", "), Replays: rs})
	url, stop, err := serveView(addr, srv, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "phalanx replay view:", err)
		return 1
	}
	defer stop()
	waitView(url, linger, stdout)
	return 0
}
