package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/peer"
)

// phalanx watch --join ADDRESS: a spectator over real QUIC. It asks the
// members at the addresses (members that serve spectators: phalanx peer
// --spectators N) for the session, catches up and steps the session's
// buckets a delay behind the live frame, printing the frame now and then
// and, at the end, the final hash.

// watchResult is what phalanx watch --json prints, and what it reports to
// phalanx mesh --spectators.
type watchResult struct {
	FinalHash   string  `json:"final_hash"`
	DelayFrames int     `json:"delay_frames"`
	Stepped     int64   `json:"stepped"`
	From        int64   `json:"from_frame"`
	Snapshot    int64   `json:"snapshot_frame"`
	Verified    bool    `json:"snapshot_verified"`
	Bytes       int64   `json:"bytes_received"`
	Seconds     float64 `json:"seconds"`
	Followed    int     `json:"followed"` // spectators it fetched from (0: members)
	Error       string  `json:"error,omitempty"`
}

func runWatch(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("phalanx watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var join []string
	fs.Func("join", "a member's multiaddr, /ip4/.../udp/PORT/quic-v1/p2p/ID, that serves spectators (repeatable)", func(v string) error {
		join = append(join, v)
		return nil
	})
	session := fs.String("session", "phalanx", "the session ID")
	delay := fs.Duration("delay", 0, "step this `DURATION` behind the live frame (like 2m)")
	listen := fs.String("listen", peer.DefaultListenAddr, "libp2p listen multiaddr")
	jsonOut := fs.Bool("json", false, "print one JSON object as the last line")
	mesh := fs.Bool("mesh", false, "(phalanx mesh) print progress and the result as JSON lines")
	timeout := fs.Duration("timeout", 0, "give up after this long (0: never)")
	serve := fs.Int("spectators", 0, "serve at most `N` other spectators once caught up (0: none); members with no room send spectators to those that serve")
	busyWait := fs.Duration("busy-wait", 30*time.Second, "when every member is busy and names no spectator that serves, ask again for this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: phalanx watch --join ADDRESS [flags]")
		fmt.Fprintln(stderr, "\nWatches a running session as a spectator over real QUIC: steps its buckets a delay")
		fmt.Fprintln(stderr, "behind the live frame, prints the frame, and at the end the final hash.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	check := func() error {
		if len(join) == 0 {
			return errors.New("--join: want a member's address")
		}
		if _, err := peer.ParseAddrs(join...); err != nil {
			return err
		}
		if *delay < 0 {
			return errors.New("--delay: want 0 or more")
		}
		if *serve < 0 || *serve > 64 {
			return errors.New("--spectators: want 0 to 64")
		}
		return nil
	}
	if code := parseFlags(fs, args, check); code >= 0 {
		return code
	}
	others, _ := peer.ParseAddrs(join...)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	host, err := peer.NewHost(ctx, peer.HostConfig{ListenAddrs: []string{*listen}, Logger: logger})
	if err != nil {
		fmt.Fprintln(stderr, "phalanx watch:", err)
		return 1
	}
	defer host.Close()
	start := time.Now()
	var last time.Time
	var gameErr error
	w, err := peer.Watch(ctx, peer.WatchConfig{
		Host: host, Join: others, SessionID: *session, Delay: *delay, Logger: logger, Spectators: *serve, BusyWait: *busyWait,
		NewSim: func(s *peer.Agreement) lockstep.Simulation {
			g, err := newGame(s.Params.Sim, max(s.Params.Members, s.Params.Slots), s.Seed.Uint64())
			if err != nil {
				gameErr = err
				return noSim{}
			}
			return g.newSim(0)
		},
		OnStep: func(f bucket.Frame, hash uint64) {
			if time.Since(last) < 500*time.Millisecond {
				return
			}
			last = time.Now()
			if *mesh {
				b, _ := json.Marshal(memberMsg{Type: "progress", Slot: -1, Frame: int64(f)})
				fmt.Fprintln(stdout, string(b))
			} else if !*jsonOut {
				fmt.Fprintf(stdout, "frame %d, hash %016x\n", f, hash)
			}
		},
	})
	if err == nil && gameErr != nil {
		err = gameErr
	}
	res := watchResult{DelayFrames: w.DelayFrames, Stepped: int64(w.Frame), From: int64(w.From), Snapshot: int64(w.CheckpointFrame),
		Verified: w.Verified, Bytes: w.Bytes, Seconds: time.Since(start).Seconds(), Followed: w.Followed}
	if w.Frame >= 0 {
		res.FinalHash = fmt.Sprintf("%016x", w.Hash)
	}
	if err != nil {
		res.Error = err.Error()
	}
	switch {
	case *mesh:
		b, _ := json.Marshal(struct {
			Type  string      `json:"type"`
			Watch watchResult `json:"watch"`
		}{"watch", res})
		fmt.Fprintln(stdout, string(b))
	case *jsonOut:
		b, _ := json.Marshal(res)
		fmt.Fprintln(stdout, string(b))
	default:
		fmt.Fprintf(stdout, "watched frames %d to %d, %d frames behind the live frame; final hash %s\n", w.From, w.Frame, w.DelayFrames, res.FinalHash)
	}
	if err != nil {
		fmt.Fprintln(stderr, "phalanx watch:", err)
		return 1
	}
	return 0
}

// noSim stands in for a game phalanx watch cannot build; the watch then
// fails with the reason.
type noSim struct{}

func (noSim) Step(bucket.Frame, []bucket.Command) {}
func (noSim) Hash() uint64                        { return 0 }
