package peer

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Spectators serving spectators: a spectator that serves
// (WatchConfig.Spectators) keeps an archive of what it steps, as a member
// does, from the checkpoint it loaded (or frame 0) on, and once it has
// stepped a frame it serves other spectators over the catch-up protocol:
// the session, its checkpoints and the buckets as it steps them, to at most
// WatchConfig.Spectators of them. It serves no member.
//
// It says so in every request it makes (catchupRequest.Serves, its own
// addresses), and the members note it. A member with no room for another
// spectator answers one that follows spectators (catchupRequest.Follow)
// with a redirect, the addresses of up to maxRedirect spectators that serve
// and asked it in the last watcherIdle, instead of a refusal; the spectator
// then asks those, which may redirect it further (at most maxFollowHops
// times). So a crowd of spectators loads the members no more than their
// places: the rest hang from spectators in a tree.
//
// A spectator served by a spectator trusts it: what it vouches for is one
// spectator's word (it checked its own checkpoint against the members' and
// computed the later ones itself). A wrong bucket makes only the spectators
// below it diverge; the members never hear of them.

// Bounds of the spectators that serve.
const (
	maxRelays     = 32 // serving spectators a member remembers
	maxRelayAddrs = 4  // addresses it keeps of each
	maxRedirect   = 8  // named in one redirect
	maxFollowHops = 4  // redirects a spectator follows in a row
	// relayLinger bounds how long a serving spectator (or a member) that
	// stepped the session's last frame goes on serving the streams still
	// open.
	relayLinger = 10 * time.Second
)

// relaySet is the spectators that serve spectators, as a member heard of
// them. It is safe for concurrent use.
type relaySet struct {
	mu sync.Mutex
	by map[peer.ID]relay
}

// relay is one serving spectator: its addresses and when it last asked.
type relay struct {
	addrs []string
	last  time.Time
}

// note records that spectator id serves at addrs (its own addresses only;
// others are ignored) at now.
func (r *relaySet) note(id peer.ID, addrs []string, now time.Time) {
	var own []string
	for _, a := range addrs {
		if ai, err := peer.AddrInfoFromString(a); err == nil && ai.ID == id && len(own) < maxRelayAddrs {
			own = append(own, a)
		}
	}
	if len(own) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = make(map[peer.ID]relay)
	}
	r.expire(now)
	if _, ok := r.by[id]; ok || len(r.by) < maxRelays {
		r.by[id] = relay{addrs: own, last: now}
	}
}

// expire forgets the relays silent for watcherIdle; mu held.
func (r *relaySet) expire(now time.Time) {
	for id, rl := range r.by {
		if now.Sub(rl.last) > watcherIdle {
			delete(r.by, id)
		}
	}
}

// list returns the addresses of up to maxRedirect relays but not, the
// most recently heard first.
func (r *relaySet) list(now time.Time, not peer.ID) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(now)
	ids := make([]peer.ID, 0, len(r.by))
	for id := range r.by {
		if id != not {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b peer.ID) int { return r.by[b].last.Compare(r.by[a].last) })
	var out []string
	for _, id := range ids[:min(len(ids), maxRedirect)] {
		out = append(out, r.by[id].addrs...)
	}
	return out
}

// redirect is the payload of a redirect message.
type redirect struct {
	Spectators []string `json:"spectators"` // multiaddrs with /p2p/ID
}

// errRedirected is the error of a request a member answered with a
// redirect; the addresses are in the redirectError.
var errRedirected = errors.New("redirected to spectators")

type redirectError struct{ addrs []string }

func (e *redirectError) Error() string { return errRedirected.Error() }
func (e *redirectError) Unwrap() error { return errRedirected }

// admitSpectator admits spectator from's request req, noting it if it
// serves; with no room it answers with a redirect (when the spectator
// follows and the member knows spectators that serve) or a refusal, and
// returns false.
func (srv *catchupServer) admitSpectator(s network.Stream, from peer.ID, req catchupRequest) bool {
	now := time.Now()
	if len(req.Serves) > 0 {
		srv.relays.note(from, req.Serves, now)
	}
	ok, fresh := srv.watchers.admit(from, now, srv.spectators)
	if !ok {
		if list := srv.relays.list(now, from); req.Follow && len(list) > 0 {
			b, _ := json.Marshal(redirect{Spectators: list})
			_ = s.SetWriteDeadline(time.Now().Add(time.Second))
			_ = writeMsg(s, msgRedirect, b)
			return false
		}
		writeRefusal(s, "busy: no room for another spectator")
		return false
	}
	if fresh && srv.onSpectator != nil {
		srv.onSpectator(from)
	}
	return true
}

// watchServer is a spectator's serving side: its archive, filled as it
// steps, and the server it registers on its host once it has stepped a
// frame.
type watchServer struct {
	h      *Host
	f      *fetcher
	arch   *archive
	srv    *catchupServer
	cancel context.CancelFunc
	on     bool
	wg     sync.WaitGroup // announcements to the servers
}

// newWatchServer prepares spectator serving for sess: up to places
// spectators, checkpoints every every frames, from checkpoint cp if it
// loaded one (cp.data nil: from frame 0).
func newWatchServer(ctx context.Context, cfg WatchConfig, f *fetcher, sess *Agreement, cp checkpoint) *watchServer {
	every := cfg.CheckpointEvery
	if every == 0 {
		every = DefaultCheckpointEvery
	}
	arch := newArchive(every)
	if cp.data != nil {
		arch.seed(cp)
	}
	ctx, cancel := context.WithCancel(ctx)
	return &watchServer{h: cfg.Host, f: f, arch: arch, cancel: cancel, srv: &catchupServer{
		sess: sess, arch: arch, rate: DefaultCatchupRate, live: func() uint64 { return 0 },
		log: f.log, ctx: ctx, spectators: cfg.Spectators, spectatorOnly: true,
	}}
}

// stepped keeps the bucket of frame f, stepped into a state of hash hash,
// and starts serving after the first: the spectator then tells servers
// that it serves.
func (ws *watchServer) stepped(ctx context.Context, f bucket.Frame, cmds []bucket.Command, hash uint64, sim lockstep.Simulation, servers []peer.ID) {
	snap, _ := sim.(lockstep.Snapshotter)
	ws.arch.keep(f, cmds, hash, snap)
	if ws.on {
		return
	}
	ws.on = true
	ws.h.catchup.Store(ws.srv)
	var addrs []string
	for _, a := range ws.h.Addrs() {
		if len(addrs) < maxRelayAddrs {
			addrs = append(addrs, a.String())
		}
	}
	ws.f.serves.Store(&addrs)
	// Tell the servers now, not at the next window's request.
	for _, id := range servers {
		ws.wg.Go(func() {
			ictx, cancel := context.WithTimeout(ctx, catchupRead)
			defer cancel()
			_, _ = ws.f.info(ictx, id)
		})
	}
	ws.f.log.Info("peer: serving spectators", "places", ws.srv.spectators, "from", f)
}

// stop ends serving: once the streams open end, their askers having read
// what they asked for (at most relayLinger), when the session is over
// (done); at once otherwise.
func (ws *watchServer) stop(done bool) {
	ws.arch.close()
	if ws.on && done {
		ws.srv.linger()
	}
	ws.h.catchup.CompareAndSwap(ws.srv, nil)
	ws.cancel()
	ws.wg.Wait()
}
