package peer

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// The catch-up protocol's messages: a type byte, the payload's length as a
// uvarint (bounded per kind: maxRequestMessage, maxInfoMessage,
// maxChunkMessage, maxBucketMessage) and the payload. The joiner opens a
// stream per request and sends one request message; the member answers
// with info, or with chunks or buckets and an end, or with an error, and
// closes the stream.
const (
	msgRequest = 1 // JSON catchupRequest
	msgInfo    = 2 // JSON catchupInfo
	msgChunk   = 3 // bytes of a checkpoint, from the offset asked for on
	msgBucket  = 4 // one bucket, appendBucket's encoding
	msgEnd     = 5 // empty: all asked for was sent
	msgRefusal = 6 // text: why the request is refused
	msgWait    = 7 // empty: the member waits to step a frame asked for
	// msgRedirect is JSON redirect: spectators that serve spectators,
	// instead of a refusal, to a spectator the member has no room for.
	msgRedirect = 8
	// catchupIdle is how long a member waits for a request, and for each
	// message it sends to leave: a deadline per message, not per stream.
	catchupIdle = 30 * time.Second
	// catchupKeepalive is how often a member that waits to step a frame
	// asked for says so; catchupWait bounds that wait.
	catchupKeepalive = 2 * time.Second
	catchupWait      = 2 * time.Minute
	// maxAhead is how far past the newest frame a member stepped a
	// request's first frame may be: one window per member an asker
	// fetches from.
	maxAhead = MaxCatchupServers * catchupWindow
)

// catchupRequest is a joiner's request.
type catchupRequest struct {
	Session string `json:"session"`
	Kind    string `json:"kind"` // "info", "checkpoint" or "buckets"
	// info: the joiner's new datagram address, for the members that dial
	// it; Join, set by a member coming back or joining late (not by a
	// spectator); and the open slot a late joiner takes (0: none; seats.go)
	Endpoint string `json:"endpoint,omitempty"`
	Join     bool   `json:"join,omitempty"`
	Claim    int    `json:"claim,omitempty"`
	// Any request of a spectator: Follow says it follows the spectators a
	// member with no room for it names (a redirect message); Serves, the
	// addresses of a spectator that serves other spectators
	// (watchserve.go).
	Follow bool     `json:"follow,omitempty"`
	Serves []string `json:"serves,omitempty"`
	// checkpoint: its frame, the byte offset to send from and the one to
	// stop before (To; 0: the end)
	Frame  int64 `json:"frame,omitempty"`
	Offset int64 `json:"offset,omitempty"`
	// buckets: the frames From to To, inclusive
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
}

// catchupServer is a playing member's side of the protocol.
type catchupServer struct {
	sess   *Agreement
	arch   *archive
	rate   int           // bytes per second per stream
	live   func() uint64 // slots this member counts live
	redial func(bucket.Slot, netip.AddrPort)
	log    *slog.Logger
	busy   streamBudget // the streams served at once (catchupbudget.go)
	sent   atomic.Int64 // bytes sent on catch-up streams
	// idle is how long a stream may wait for its next message to go out
	// (0: catchupIdle); tests shorten it.
	idle time.Duration
	// spectators bounds the peers that are no members it serves (0: none),
	// watchers are those it serves.
	spectators int
	watchers   watcherSet
	// onSpectator, when set, hears of each spectator it begins serving.
	onSpectator func(peer.ID)
	// relays are spectators that serve spectators, named to those it has
	// no room for; spectatorOnly: this is a spectator serving spectators,
	// which serves no member (watchserve.go).
	relays        relaySet
	spectatorOnly bool
	ctx           context.Context // ends when the member stops serving
}

// handleCatchup serves one catch-up stream, on libp2p's goroutine for it:
// nothing here waits for the member's session, which only appends to the
// archive.
func (h *Host) handleCatchup(s network.Stream) {
	srv := h.catchup.Load()
	from := s.Conn().RemotePeer()
	if srv == nil {
		_ = s.Reset()
		return
	}
	defer s.Close()
	slot, member := srv.sess.Slot(from)
	if member && (slot == srv.sess.Self || srv.spectatorOnly) {
		writeRefusal(s, "not a member of this session")
		return
	}
	idle := cmp.Or(srv.idle, catchupIdle)
	_ = s.SetReadDeadline(time.Now().Add(idle))
	r := bufio.NewReader(s)
	typ, body, err := readMsg(r, nil, maxRequestMessage)
	var req catchupRequest
	if err == nil && (typ != msgRequest || json.Unmarshal(body, &req) != nil) {
		err = errors.New("malformed request")
	}
	if err != nil {
		writeRefusal(s, err.Error())
		return
	}
	if req.Session != srv.sess.ID {
		writeRefusal(s, "another session")
		return
	}
	// A peer that may take an open slot asks as a joiner (Join) for the
	// session, then claims a slot (seats.go); it is served as a member. Any
	// other request of a peer that is not a member is a spectator's.
	candidate := !member && req.Join && !srv.spectatorOnly && srv.sess.seats.mayTake(from)
	switch {
	case !member && req.Join && (!candidate || req.Kind != "info"):
		why := "no slot taken"
		if !candidate {
			why = "no open slot for it"
		}
		h.refusals.refused("peer: refused a catch-up stream", "from", from, "why", why)
		writeRefusal(s, "not a member of this session")
		return
	case !member && !candidate && srv.spectators == 0:
		h.refusals.refused("peer: refused a catch-up stream", "from", from, "why", "not a member of this session")
		writeRefusal(s, "not a member of this session")
		return
	}
	spectator := !member && !candidate
	release, why := srv.busy.acquire(from, spectator, spectatorStreams(srv.spectators))
	if release == nil {
		writeRefusal(s, why)
		return
	}
	defer release()
	if spectator && !srv.admitSpectator(s, from, req) {
		return
	}
	if candidate && req.Kind == "info" && req.Claim > 0 {
		if err := srv.sess.claim(bucket.Slot(req.Claim), from); err != nil {
			writeRefusal(s, err.Error())
			return
		}
		srv.log.Info("peer: a late joiner took an open slot", "slot", req.Claim, "id", from)
		slot, member, candidate = bucket.Slot(req.Claim), true, false
	}
	ctx, cancel := context.WithCancel(srv.ctx)
	defer cancel()
	w := &pacedWriter{w: s, rate: srv.rate, start: time.Now(), stream: s, idle: idle, total: &srv.sent}
	switch req.Kind {
	case "info":
		if ap, err := netip.ParseAddrPort(req.Endpoint); err == nil && member {
			// Told to whoever asks after it (a later joiner finds the
			// member of an open slot there), and dialled.
			srv.sess.noteEndpoint(slot, from, ap)
			if srv.redial != nil {
				srv.redial(slot, ap)
			}
		}
		b, _ := json.Marshal(srv.info(from))
		err = writeMsg(w, msgInfo, b)
	case "checkpoint":
		err = srv.serveCheckpoint(w, req)
	case "buckets":
		err = srv.serveBuckets(ctx, w, req)
	default:
		err = fmt.Errorf("unknown request %q", req.Kind)
	}
	if err != nil {
		srv.log.Debug("peer: catch-up stream ended", "member", slot, "kind", req.Kind, "err", err)
		writeRefusal(s, err.Error())
		return
	}
	awaitClose(ctx, s, r, idle)
}

// awaitClose holds a stream whose answer is written until its asker
// closes or resets it, which it does once it has read the answer, or for
// idle at most, or until ctx ends. Until then the stream holds its place in the budget: a
// server that ends once its streams are done (a spectator at the session's
// end, watchserve.go) ends only after its askers have what they asked for.
// Closing the connection earlier would discard what they had not read yet.
// An asker that closed its side at once (an older one) is not waited for.
func awaitClose(ctx context.Context, s network.Stream, r *bufio.Reader, idle time.Duration) {
	_ = s.SetReadDeadline(time.Now().Add(idle))
	defer context.AfterFunc(ctx, func() { _ = s.SetReadDeadline(time.Now()) })()
	_, _ = io.Copy(io.Discard, io.LimitReader(r, maxRequestMessage))
}

// serveCheckpoint sends a checkpoint's bytes from req.Offset on, in chunks.
func (srv *catchupServer) serveCheckpoint(w *pacedWriter, req catchupRequest) error {
	cp, ok := srv.arch.checkpointAt(bucket.Frame(req.Frame))
	if !ok {
		return fmt.Errorf("%w: no checkpoint of frame %d", errGone, req.Frame)
	}
	end := int64(len(cp.data))
	if req.To > 0 {
		end = min(end, req.To)
	}
	if req.Offset < 0 || req.Offset > end {
		return fmt.Errorf("offset %d outside the checkpoint's %d bytes", req.Offset, end)
	}
	for off := int(req.Offset); off < int(end); off += catchupChunk {
		if err := writeMsg(w, msgChunk, cp.data[off:min(off+catchupChunk, int(end))]); err != nil {
			return err
		}
	}
	return writeMsg(w, msgEnd, nil)
}

// serveBuckets sends the buckets of frames req.From to req.To, each as soon
// as this member has stepped it.
func (srv *catchupServer) serveBuckets(ctx context.Context, w *pacedWriter, req catchupRequest) error {
	if req.From < 0 || req.To < req.From || req.To-req.From >= catchupWindow {
		return fmt.Errorf("frames %d to %d: want at most %d from 0 on", req.From, req.To, catchupWindow)
	}
	// Frames far ahead would hold the stream for minutes, waiting. An
	// asker at the live frame has a window per member it fetches from in
	// flight (fetcher.buckets): its last starts that many windows ahead.
	if _, _, next := srv.arch.state(); req.From > int64(next)-1+maxAhead {
		return fmt.Errorf("frames from %d: too far ahead, this member has stepped frame %d and serves at most %d frames past it", req.From, int64(next)-1, maxAhead)
	}
	if last := srv.sess.Params.Frames; last > 0 && req.From >= int64(last) {
		return fmt.Errorf("frames from %d: past the session's last frame %d", req.From, last-1)
	}
	var buf []byte
	for f := req.From; f <= req.To; f++ {
		// A frame not stepped yet is waited for (a joiner asks for frames
		// up to the admission frame, a spectator for the live ones), with
		// a wait message every catchupKeepalive: the asker tells a member
		// that waits from one that is gone.
		for waited := time.Duration(0); ; waited += catchupKeepalive {
			wctx, cancel := context.WithTimeout(ctx, catchupKeepalive)
			var err error
			buf, err = srv.arch.bucketAt(wctx, buf[:0], bucket.Frame(f))
			cancel()
			if err == nil {
				break
			}
			if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				return err
			}
			if waited >= catchupWait {
				return fmt.Errorf("frame %d not stepped in %v", f, catchupWait)
			}
			if err := writeMsg(w, msgWait, nil); err != nil {
				return err
			}
		}
		if err := writeMsg(w, msgBucket, buf); err != nil {
			return err
		}
	}
	return writeMsg(w, msgEnd, nil)
}

// pacedWriter writes no faster than rate bytes per second on average: a
// catch-up never takes more of the member's uplink than that. Each write
// may take up to idle: a stream is cut when its asker stops reading, not
// when a long transfer outlasts a fixed deadline.
type pacedWriter struct {
	w      io.Writer
	stream network.Stream
	rate   int
	idle   time.Duration
	start  time.Time
	sent   int64
	total  *atomic.Int64 // the server's count, updated as it goes
}

func (p *pacedWriter) Write(b []byte) (int, error) {
	_ = p.stream.SetWriteDeadline(time.Now().Add(p.idle))
	n, err := p.w.Write(b)
	p.sent += int64(n)
	p.total.Add(int64(n))
	if p.rate > 0 {
		due := p.start.Add(time.Duration(p.sent * int64(time.Second) / int64(p.rate)))
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
	}
	return n, err
}

// writeMsg writes one message.
func writeMsg(w io.Writer, typ byte, body []byte) error {
	hdr := binary.AppendUvarint([]byte{typ}, uint64(len(body)))
	if _, err := w.Write(append(hdr, body...)); err != nil {
		return err
	}
	return nil
}

func writeRefusal(s network.Stream, why string) {
	_ = s.SetWriteDeadline(time.Now().Add(time.Second))
	_ = writeMsg(s, msgRefusal, []byte(why))
}

// errRefused wraps a member's refusal of a request.
var errRefused = errors.New("refused")

// Bounds of the messages a side reads: a request, an info (64 members' peer IDs and addresses, a few
// checkpoints), a checkpoint chunk.
const (
	maxRequestMessage = 4 << 10
	maxInfoMessage    = 64 << 10
	maxChunkMessage   = catchupChunk
)

// maxBucketMessage is the largest bucket of a session of members members
// (a member's sessions use lockstep's default bounds per member and
// frame): per member DefaultMaxFrameCommands commands of 8 bytes of
// header at most (slot, sequence number, payload length) and
// DefaultMaxFrameBytes of payload, and the frame number and command count
// (8 bytes at most). Anything longer is no bucket of it.
func maxBucketMessage(members int) int {
	if members < 1 || members > bucket.MaxMembers {
		members = bucket.MaxMembers
	}
	return members*(lockstep.DefaultMaxFrameBytes+8*lockstep.DefaultMaxFrameCommands) + 8
}

// readMsg reads one message into buf's storage; a message longer than
// limit bytes is refused before it is read.
func readMsg(r *bufio.Reader, buf []byte, limit int) (byte, []byte, error) {
	typ, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return 0, nil, err
	}
	if n > uint64(limit) {
		return 0, nil, fmt.Errorf("a message of %d bytes, past the bound of %d", n, limit)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	if typ == msgRefusal {
		return typ, buf, fmt.Errorf("%w: %s", errRefused, buf)
	}
	return typ, buf, nil
}

// checkpointEvery is the member's checkpoint interval (negative: none).
func (m *Member) checkpointEvery() int {
	if m.cfg.CheckpointEvery == 0 {
		return DefaultCheckpointEvery
	}
	return m.cfg.CheckpointEvery
}

// serveCatchup makes the member serve members that come back and
// spectators, from archive a (nil: a new one from frame 0), until the
// returned function is called; once the member completed the session,
// that function first lets the streams open end (linger).
func (m *Member) serveCatchup(ctx context.Context, sess *Agreement, tr *Transport, a *archive) (stop func()) {
	rate := m.cfg.CatchupRate
	if rate <= 0 {
		rate = DefaultCatchupRate
	}
	if a == nil {
		a = newArchive(m.checkpointEvery())
	}
	ctx, cancel := context.WithCancel(ctx)
	all := uint64(1)<<len(sess.Members) - 1
	if len(sess.Members) == 64 {
		all = ^uint64(0)
	}
	srv := &catchupServer{
		sess: sess, arch: a, rate: rate, log: m.log, ctx: ctx, spectators: max(m.cfg.Spectators, 0),
		live:        func() uint64 { return all &^ m.gone.Load() },
		redial:      tr.redial,
		onSpectator: m.onSpectator,
	}
	m.arch.Store(a)
	m.cfg.Host.catchup.Store(srv)
	return func() {
		a.close()
		if m.Status().Completed {
			// Spectators fetching the last frames get them first.
			srv.linger()
		}
		m.cfg.Host.catchup.CompareAndSwap(srv, nil)
		cancel()
	}
}

// linger waits, at most relayLinger, until no stream is served: once the
// session is over, its askers still read the last frames (each stream is
// held until its asker closes it, awaitClose). The archive is closed
// first, so that no stream waits for a frame that will never come.
func (srv *catchupServer) linger() {
	deadline := time.Now().Add(relayLinger)
	for srv.busy.active() > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

// watcherIdle is how long a spectator keeps its place at a member after
// its last request.
const watcherIdle = 30 * time.Second

// watcherSet is the spectators a member serves: each holds a place until
// it has made no request for watcherIdle. It is safe for concurrent use.
type watcherSet struct {
	mu   sync.Mutex
	last map[peer.ID]time.Time
}

// admit reports whether spectator p may be served at now, with at most
// max served at once, and notes its request; fresh says p held no place
// before.
func (w *watcherSet) admit(p peer.ID, now time.Time, max int) (ok, fresh bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = make(map[peer.ID]time.Time)
	}
	for id, t := range w.last {
		if now.Sub(t) > watcherIdle {
			delete(w.last, id)
		}
	}
	_, held := w.last[p]
	if !held && len(w.last) >= max {
		return false, false
	}
	w.last[p] = now
	return true, !held
}
