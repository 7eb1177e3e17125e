package peer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Spectators: a peer that is no member watches a running session. It
// never enters the lockstep protocol (it sends no command, counts for no
// seal, and the members' cores never hear of it): it fetches the buckets
// the members step over the catch-up protocol, from members that serve
// spectators (MemberConfig.Spectators), and steps them a configurable delay
// behind the live frame. One that arrives late catches up as a member that
// comes back does: from the newest checkpoint two members vouched for,
// checked before it steps anything, or from frame 0.

// WatchConfig configures Watch.
type WatchConfig struct {
	// Host is the spectator's libp2p host; it stays the caller's.
	Host *Host
	// Join are members that serve spectators; one or more.
	Join []AddrInfo
	// SessionID names the session to watch.
	SessionID string
	// NewSim builds the simulation from the session the members agreed
	// on (Self is 0 and means nothing: a spectator has no slot).
	NewSim func(*Agreement) lockstep.Simulation
	// Delay is how far behind the live frame the spectator steps: a frame
	// is stepped no earlier than Delay after the members' frame clock
	// reached its end.
	Delay time.Duration
	// OnStep, when set, is called after each frame is stepped, from
	// Watch's goroutine.
	OnStep func(frame bucket.Frame, hash uint64)
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// Spectators is how many other spectators this one serves once it has
	// stepped a frame (watchserve.go); 0 serves none. A spectator that
	// serves lets any peer hold a libp2p connection with its host.
	Spectators int
	// BusyWait is how long the spectator asks again (every 250 ms) when
	// every member it asks is busy and names no spectator that serves: a
	// crowd that arrives together waits for the first of it to serve. 0
	// fails at once.
	BusyWait time.Duration
	// CheckpointEvery is how often, in frames, a spectator that serves
	// saves its simulation (a lockstep.Snapshotter) for the spectators it
	// serves (default DefaultCheckpointEvery; negative: never).
	CheckpointEvery int
}

// Watched is how a spectator watched a session.
type Watched struct {
	Agreement       *Agreement
	Frame           bucket.Frame // newest frame stepped, or -1
	Hash            uint64       // state hash after Frame
	From            bucket.Frame // first frame it fetched the bucket of
	CheckpointFrame bucket.Frame // the checkpoint it started from, or -1
	Verified        bool         // that checkpoint restored to its vouched hash
	Bytes           int64        // checkpoint and bucket bytes received
	DelayFrames     int          // Delay in frames
	Followed        int          // spectators it fetched from (0: it fetched from members)
}

// Watch watches a session until its last frame (SessionParams.Frames) is
// stepped, ctx ends, or the members stop serving it. It returns what it
// watched; the error says why it ended early.
func Watch(ctx context.Context, cfg WatchConfig) (Watched, error) {
	w := Watched{Frame: -1, CheckpointFrame: -1}
	if cfg.Host == nil || cfg.NewSim == nil || len(cfg.Join) == 0 {
		return w, fmt.Errorf("%w: a spectator needs a host, NewSim and a member to join", ErrInvalidMember)
	}
	log := orDiscard(cfg.Logger)
	f := &fetcher{h: cfg.Host, session: cfg.SessionID, log: log, follow: true}
	answered, servers, hops, err := findServers(ctx, f, cfg.Join)
	// Members with no room and no spectator to name yet (spectators that
	// arrive together, before any serves): ask again, a while.
	for until := time.Now().Add(cfg.BusyWait); errors.Is(err, errAllBusy) && time.Now().Before(until) && ctx.Err() == nil; {
		retryPause(ctx)
		answered, servers, hops, err = findServers(ctx, f, cfg.Join)
	}
	if err != nil {
		return w, err
	}
	if hops > 0 {
		w.Followed = len(servers)
	}
	sess, err := answered[0].session()
	if err != nil {
		return w, err
	}
	w.Agreement = sess
	f.members = len(sess.Members)
	sim := cfg.NewSim(sess)
	frame := sess.Frame()
	w.DelayFrames = int((cfg.Delay + frame - 1) / frame)
	// Start from the newest checkpoint two of them vouch for, if any.
	var loaded checkpoint
	if snap, ok := sim.(lockstep.Snapshotter); ok {
		stepped := bucket.Frame(answered[0].Stepped)
		if cp, holders := vouched(answered, servers, stepped+1); holders != nil {
			data, err := f.checkpoint(ctx, cp, holders[:min(len(holders), MaxCatchupServers)])
			if err != nil {
				return w, err
			}
			if err := snap.Restore(data); err != nil || sim.Hash() != cp.Hash {
				return w, fmt.Errorf("%w: the checkpoint of frame %d does not restore to its vouched hash (%v)", ErrCatchup, cp.Frame, err)
			}
			w.CheckpointFrame, w.Verified = bucket.Frame(cp.Frame), true
			w.Frame, w.Hash = bucket.Frame(cp.Frame), cp.Hash
			loaded = checkpoint{frame: bucket.Frame(cp.Frame), hash: cp.Hash, data: data}
		}
	}
	w.From = w.Frame + 1
	end := bucket.Frame(1<<40 - 1)
	if sess.Params.Frames > 0 {
		end = bucket.Frame(sess.Params.Frames)
	}
	servers = servers[:min(len(servers), MaxCatchupServers)]
	var ws *watchServer
	if cfg.Spectators > 0 {
		ws = newWatchServer(ctx, cfg, f, sess, loaded)
	}
	// The fetch runs ahead; the buckets wait in due until their time:
	// at most the delay's frames and the fetch's windows.
	due := make(chan lockstep.Bucket, w.DelayFrames+(MaxCatchupServers+1)*catchupWindow)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fetchErr error
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		defer close(due)
		span := bucket.Frame(len(servers) * catchupWindow) // a window per member at a time
		for next := w.From; next < end && fetchErr == nil; next += span {
			fetchErr = f.buckets(fctx, next, min(next+span, end)-1, servers, func(b lockstep.Bucket) error {
				select {
				case due <- b:
					return nil
				case <-fctx.Done():
					return fctx.Err()
				}
			})
		}
	}()
	var stepErr error
	for b := range due {
		at := sess.Start.Add(time.Duration(b.Frame+1)*frame + cfg.Delay)
		if d := time.Until(at); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				stepErr = ctx.Err()
			}
		}
		if stepErr != nil {
			break
		}
		sim.Step(b.Frame, b.Commands)
		w.Frame, w.Hash = b.Frame, sim.Hash()
		if ws != nil {
			ws.stepped(ctx, b.Frame, b.Commands, w.Hash, sim, servers)
		}
		if cfg.OnStep != nil {
			cfg.OnStep(w.Frame, w.Hash)
		}
	}
	cancel()
	for range due {
		// The fetch ends once cancelled; drain what it sent.
	}
	<-fetched
	w.Bytes = f.bytes.Load()
	if ws != nil {
		ws.stop(w.Frame == end-1)
	}
	switch {
	case w.Frame == end-1:
		return w, nil
	case stepErr != nil:
		return w, stepErr
	case fetchErr != nil:
		return w, fetchErr
	}
	return w, ctx.Err()
}

// errAllBusy: every member asked had no room for another spectator, and
// named none that serves.
var errAllBusy = errors.New("peer: every member asked is busy")

// findServers asks the members at join for the session and, where they
// have no room and name spectators that serve, those spectators, following
// at most maxFollowHops redirects. It returns the answers, who gave them,
// and how many redirects it followed.
func findServers(ctx context.Context, f *fetcher, join []AddrInfo) ([]*catchupInfo, []peer.ID, int, error) {
	var errs []error
	tried := map[peer.ID]bool{}
	for hop := 0; ; hop++ {
		infos := make([]*catchupInfo, len(join))
		ierrs := make([]error, len(join))
		var wg sync.WaitGroup
		for i, ai := range join {
			tried[ai.ID] = true
			wg.Go(func() {
				ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				if ierrs[i] = f.h.h.Connect(ictx, ai); ierrs[i] == nil {
					infos[i], ierrs[i] = f.info(ictx, ai.ID)
				}
			})
		}
		wg.Wait()
		var answered []*catchupInfo
		var servers []peer.ID
		var next []AddrInfo
		for i, in := range infos {
			if in != nil {
				answered, servers = append(answered, in), append(servers, join[i].ID)
				continue
			}
			errs = append(errs, fmt.Errorf("%s: %w", join[i].ID, ierrs[i]))
			var rd *redirectError
			if !errors.As(ierrs[i], &rd) {
				continue
			}
			for _, a := range rd.addrs {
				if ais, err := ParseAddrs(a); err == nil && !tried[ais[0].ID] {
					if j := slices.IndexFunc(next, func(n AddrInfo) bool { return n.ID == ais[0].ID }); j >= 0 {
						next[j].Addrs = append(next[j].Addrs, ais[0].Addrs...)
					} else {
						next = append(next, ais[0])
					}
				}
			}
		}
		busy := true
		for _, err := range ierrs {
			busy = busy && errors.Is(err, errRefused) && strings.Contains(err.Error(), "busy")
		}
		switch {
		case len(answered) > 0:
			return answered, servers, hop, nil
		case len(next) == 0 && busy:
			return nil, nil, hop, fmt.Errorf("%w: %w", errAllBusy, errors.Join(errs...))
		case len(next) == 0 || hop == maxFollowHops:
			return nil, nil, hop, fmt.Errorf("peer: no member serves this spectator: %w", errors.Join(errs...))
		}
		f.log.Info("peer: members have no room; following spectators that serve", "spectators", len(next))
		join = next
	}
}
