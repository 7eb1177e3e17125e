package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// fetcher is the joiner's side of the catch-up protocol: it asks live
// members for what it needs, splits each transfer among them and, when a
// stream breaks, asks the next member from where it stopped.
type fetcher struct {
	h        *Host
	session  string
	endpoint string // our datagram address, told with every info request ("" none)
	claim    int    // the open slot a late joiner takes, claimed with every info request (0 none)
	join     bool   // a member's fetcher (coming back or joining late), not a spectator's: its info requests say so
	log      *slog.Logger
	bytes    atomic.Int64 // bytes of checkpoints and buckets received
	// members is the session's member count once known (0: not yet, and
	// a bucket may be as large as one of bucket.MaxMembers members).
	members int
	// A spectator's: follow says it follows redirects to spectators that
	// serve; serves, once set, are its addresses, as one that serves
	// (watchserve.go). Both go with every request.
	follow bool
	serves atomic.Pointer[[]string]
}

// request opens a stream to id and sends req.
func (f *fetcher) request(ctx context.Context, id peer.ID, req catchupRequest) (network.Stream, *bufio.Reader, error) {
	req.Session = f.session
	req.Follow = f.follow
	if s := f.serves.Load(); s != nil {
		req.Serves = *s
	}
	octx, cancel := context.WithTimeout(ctx, catchupRead)
	s, err := f.h.h.NewStream(octx, id, CatchupProtocol)
	cancel()
	if err != nil {
		return nil, nil, err
	}
	_ = s.SetDeadline(time.Now().Add(catchupRead))
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	b, _ := json.Marshal(req)
	if err := writeMsg(s, msgRequest, b); err != nil {
		stop()
		_ = s.Reset()
		return nil, nil, err
	}
	// The write side stays open: closing the stream once we have read
	// what we asked for (Close) tells the server it may end (it holds the
	// stream until then, catchupserve.go).
	return &stoppingStream{Stream: s, stop: stop}, bufio.NewReader(s), nil
}

// stoppingStream is a stream whose Close also drops its context hook.
type stoppingStream struct {
	network.Stream
	stop func() bool
}

func (s *stoppingStream) Close() error {
	s.stop()
	return s.Stream.Reset() // nothing more to read or write
}

// info asks member id for its view of the session.
func (f *fetcher) info(ctx context.Context, id peer.ID) (*catchupInfo, error) {
	s, r, err := f.request(ctx, id, catchupRequest{Kind: "info", Endpoint: f.endpoint, Join: f.join, Claim: f.claim})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	typ, body, err := readMsg(r, nil, maxInfoMessage)
	if err != nil {
		return nil, err
	}
	if typ == msgRedirect {
		var rd redirect
		if json.Unmarshal(body, &rd) != nil || len(rd.Spectators) == 0 {
			return nil, errors.New("peer: a malformed redirect")
		}
		return nil, &redirectError{addrs: rd.Spectators[:min(len(rd.Spectators), maxRedirect*maxRelayAddrs)]}
	}
	var in catchupInfo
	if typ != msgInfo || json.Unmarshal(body, &in) != nil {
		return nil, errors.New("peer: a malformed catch-up info")
	}
	return &in, nil
}

// checkpoint fetches the bytes of the checkpoint cp, split in ranges
// among servers.
func (f *fetcher) checkpoint(ctx context.Context, cp cpInfo, servers []peer.ID) ([]byte, error) {
	if cp.Size < 0 || cp.Size > maxSnapshotBytes {
		return nil, fmt.Errorf("%w: a checkpoint of %d bytes", ErrCatchup, cp.Size)
	}
	data := make([]byte, cp.Size)
	k := int64(len(servers))
	part := (cp.Size + k - 1) / max(k, 1)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range k {
		lo, hi := i*part, min((i+1)*part, cp.Size)
		if lo >= hi {
			continue
		}
		wg.Go(func() { errs[i] = f.checkpointRange(ctx, cp.Frame, data, lo, hi, servers, int(i)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return data, nil
}

// checkpointRange fetches data[lo:hi] of the checkpoint of frame, from
// servers[first] and, where a stream breaks, the next server from the
// byte where it stopped.
func (f *fetcher) checkpointRange(ctx context.Context, frame int64, data []byte, lo, hi int64, servers []peer.ID, first int) error {
	off := lo
	done := func() bool { return off >= hi }
	left := func() string { return fmt.Sprintf("checkpoint of frame %d, bytes %d to %d", frame, off, hi) }
	return fromServers(ctx, servers, first, done, left, func(id peer.ID) (bool, error) {
		before := off
		s, r, err := f.request(ctx, id, catchupRequest{Kind: "checkpoint", Frame: frame, Offset: off, To: hi})
		if err != nil {
			return false, err
		}
		var buf []byte
		for off < hi {
			var typ byte
			_ = s.SetReadDeadline(time.Now().Add(catchupRead))
			typ, buf, err = readMsg(r, buf, maxChunkMessage)
			if err != nil {
				break
			}
			if typ == msgEnd {
				err = errors.New("the checkpoint ended early")
				break
			}
			if typ != msgChunk || len(buf) == 0 || off+int64(len(buf)) > hi {
				err = errors.New("a malformed checkpoint chunk")
				break
			}
			copy(data[off:], buf)
			off += int64(len(buf))
			f.bytes.Add(int64(len(buf)))
		}
		s.Close()
		if err != nil {
			f.log.Debug("peer: a checkpoint stream broke; resuming", "member", id, "offset", off, "err", err)
		}
		return off != before, err
	})
}

// window is one request's frames of a bucket transfer: its buckets as
// they arrive, bs closed once err is set.
type window struct {
	bs  chan lockstep.Bucket
	err error
}

// buckets fetches the buckets of frames from to to, inclusive, in windows
// of catchupWindow frames split among servers, at most one window per
// server in flight, and hands them to step in order, each as soon as it
// and those before it are in. It holds at most len(servers) windows of
// buckets.
func (f *fetcher) buckets(ctx context.Context, from, to bucket.Frame, servers []peer.ID, step func(lockstep.Bucket) error) error {
	if from > to {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel() // a producer waiting for a slot stops
		wg.Wait()
	}()
	wins := make(chan *window, len(servers))
	slots := make(chan struct{}, len(servers))
	wg.Go(func() {
		defer close(wins)
		for i, lo := 0, from; lo <= to; i, lo = i+1, lo+catchupWindow {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			hi := min(lo+catchupWindow-1, to)
			w := &window{bs: make(chan lockstep.Bucket, hi-lo+1)}
			wins <- w // never waits: a window in wins holds a place in slots
			wg.Go(func() {
				defer close(w.bs)
				w.err = f.bucketRange(ctx, lo, hi, servers, i, w.bs)
			})
		}
	})
	for w := range wins {
		for b := range w.bs {
			if err := step(b); err != nil {
				return err
			}
		}
		if w.err != nil {
			return w.err
		}
		<-slots
	}
	return ctx.Err()
}

// bucketRange fetches the buckets of frames lo to hi into out (room for
// all of them) from servers[first], and where a stream breaks from the
// next server from the frame where it stopped.
func (f *fetcher) bucketRange(ctx context.Context, lo, hi bucket.Frame, servers []peer.ID, first int, out chan<- lockstep.Bucket) error {
	next := lo
	done := func() bool { return next > hi }
	left := func() string { return fmt.Sprintf("buckets %d to %d", next, hi) }
	return fromServers(ctx, servers, first, done, left, func(id peer.ID) (bool, error) {
		before := next
		s, r, err := f.request(ctx, id, catchupRequest{Kind: "buckets", From: int64(next), To: int64(hi)})
		if err != nil {
			return false, err
		}
		var buf []byte
		waits := 0
		for next <= hi {
			var typ byte
			_ = s.SetReadDeadline(time.Now().Add(catchupRead))
			typ, buf, err = readMsg(r, buf, maxBucketMessage(f.members))
			if err != nil {
				break
			}
			if typ == msgWait {
				// The member has not stepped the frame yet; an honest one
				// gives up after catchupWait.
				if waits++; time.Duration(waits)*catchupKeepalive > catchupWait+catchupRead {
					err = fmt.Errorf("frame %d: waited longer than a member may", next)
					break
				}
				continue
			}
			waits = 0
			var b lockstep.Bucket
			if typ == msgBucket {
				b, err = parseBucket(buf)
			}
			if typ != msgBucket || err != nil || b.Frame != next {
				err = fmt.Errorf("a malformed or misplaced bucket for frame %d", next)
				break
			}
			f.bytes.Add(int64(len(buf)))
			out <- b
			next++
		}
		s.Close()
		if err != nil {
			f.log.Debug("peer: a bucket stream broke; resuming", "member", id, "frame", next, "err", err)
		}
		return next != before, err
	})
}

// fromServers fetches a range by tries until done: the first try asks
// servers[first], each next try the next server, from where the last one
// stopped. try reports whether it brought anything and why its stream
// broke. Only tries that bring nothing count, each followed by a pause;
// after two such per server fromServers gives up with ErrCatchup, naming
// what is left (left) and the last error. It returns ctx's error if ctx
// ends before a try.
func fromServers(ctx context.Context, servers []peer.ID, first int, done func() bool, left func() string, try func(peer.ID) (bool, error)) error {
	var last error
	for n, fails := 0, 0; !done() && fails < 2*len(servers); n++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		brought, err := try(servers[(first+n)%len(servers)])
		if err != nil {
			last = err
		}
		if !brought {
			fails++
			retryPause(ctx)
		}
	}
	if !done() {
		return fmt.Errorf("%w: %s: %v", ErrCatchup, left(), last)
	}
	return nil
}

// catchupPause is how long a joiner waits before it asks again after a
// try that brought nothing (the member could not be reached, or its stream
// broke at once): members that are gone must not make it spin.
const catchupPause = 250 * time.Millisecond

func retryPause(ctx context.Context) {
	t := time.NewTimer(catchupPause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
