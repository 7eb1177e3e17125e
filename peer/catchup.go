package peer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Catching up: a member that comes back into a running session (see
// MemberConfig.Rejoin) is admitted by the live members' cores at a frame A
// they agree on (lockstep's admission agreement), and must step every frame
// before A before it steps A. The live members serve it what it needs over
// the libp2p stream protocol CatchupProtocol (catchupserve.go; the joiner's
// side is catchupfetch.go):
//
//   - every member keeps an archive of the buckets it stepped and, when its
//     simulation is a lockstep.Snapshotter, a checkpoint (its saved state
//     and its state hash) every MemberConfig.CheckpointEvery frames; it
//     keeps its two newest checkpoints and the buckets since the older, or
//     every bucket from frame 0 without checkpoints;
//   - the joiner asks every live member it reaches for its checkpoints,
//     takes the newest before A whose state hash two of them report alike
//     (the one it reaches, if only one), fetches its bytes in ranges split
//     among the members, restores it and checks its state hash before it
//     steps anything, then fetches the buckets after it in windows split
//     among the members, and steps them.
//
// docs/network.md describes the messages byte by byte.

// CatchupProtocol is the libp2p protocol by which live members serve a
// returning member the checkpoint and buckets it catches up from.
const CatchupProtocol protocol.ID = "/phalanx/catchup/1.0.0"

// Defaults and bounds of the catch-up transfer.
const (
	// DefaultCheckpointEvery is how often, in frames, a member saves its
	// simulation for joiners when MemberConfig.CheckpointEvery is 0.
	DefaultCheckpointEvery = 200
	// DefaultCatchupRate is how many bytes per second one member sends
	// one catch-up stream when MemberConfig.CatchupRate is 0.
	DefaultCatchupRate = 1 << 20
	// MaxCatchupServers is how many live members a joiner fetches from at
	// once.
	MaxCatchupServers = 3
	// catchupChunk is the largest piece of a checkpoint in one message.
	catchupChunk = 16 << 10
	// catchupRead is how long the joiner waits for a member's next
	// message before it asks another member.
	catchupRead = 10 * time.Second
	// catchupWindow is how many frames of buckets one request asks for.
	catchupWindow = 256
	// maxSnapshotBytes bounds a checkpoint a joiner accepts.
	maxSnapshotBytes = 64 << 20
	// keptCheckpoints is how many checkpoints a member keeps.
	keptCheckpoints = 2
	// archiveLimit bounds the encoded buckets a member keeps for joiners
	// (4 bytes of index a frame included). With snapshots it holds the
	// buckets since the older of two checkpoints, far less; without, the
	// buckets from frame 0 until it is reached (an empty frame costs about
	// 8 bytes: some 58 hours of 20 Hz frames with no command), then the
	// oldest quarter goes, and a member coming back without snapshots can
	// no longer be served.
	archiveLimit = 32 << 20
)

// Errors of the catch-up.
var (
	// ErrCatchup is the error of a joiner that could not catch up: no
	// member served what it needed, or what they served did not check.
	ErrCatchup = errors.New("peer: catching up failed")
)

// checkpoint is a member's saved simulation after stepping a frame.
type checkpoint struct {
	frame bucket.Frame
	hash  uint64
	data  []byte // never changed once stored: streams read it unlocked
}

// archive is what a member keeps for joiners. keep is called from the
// goroutine that steps the simulation; the serving streams read it. It is
// safe for concurrent use.
type archive struct {
	every bucket.Frame // checkpoint interval; 0: none
	limit int          // archiveLimit, lower in tests

	mu      sync.Mutex
	from    bucket.Frame // the first frame held
	log     []byte       // its bucket and the next ones, encoded (appendBucket) back to back
	ends    []uint32     // ends[i]: where frame from+i's bucket ends in log
	cps     []checkpoint // at most keptCheckpoints, oldest first
	changed chan struct{}
	closed  bool
}

func newArchive(every int) *archive {
	return &archive{every: bucket.Frame(max(every, 0)), limit: archiveLimit, changed: make(chan struct{})}
}

// next returns the first frame the archive does not hold; mu held.
func (a *archive) next() bucket.Frame { return a.from + bucket.Frame(len(a.ends)) }

// dropFrames forgets the n oldest frames held; mu held.
func (a *archive) dropFrames(n int) {
	n = min(n, len(a.ends))
	if n <= 0 {
		return
	}
	cut := a.ends[n-1]
	a.log = a.log[:copy(a.log, a.log[cut:])]
	a.ends = a.ends[:copy(a.ends, a.ends[n:])]
	for i := range a.ends {
		a.ends[i] -= cut
	}
	a.from += bucket.Frame(n)
}

// keep records the bucket of frame f, stepped into a state of hash hash,
// and at checkpoint frames the snapshot of snap (nil: none). Frames must
// come in order from 0; others are ignored.
func (a *archive) keep(f bucket.Frame, cmds []bucket.Command, hash uint64, snap lockstep.Snapshotter) {
	a.mu.Lock()
	ok := f == a.next() && !a.closed
	a.mu.Unlock()
	if !ok {
		return
	}
	var cp *checkpoint
	if snap != nil && a.every > 0 && f%a.every == a.every-1 {
		cp = &checkpoint{frame: f, hash: hash, data: snap.AppendSnapshot(nil)}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if f != a.next() || a.closed { // closed meanwhile (a game stepping on its own goroutine)
		return
	}
	a.log = appendBucket(a.log, f, cmds)
	a.ends = append(a.ends, uint32(len(a.log)))
	if cp != nil {
		a.cps = append(a.cps, *cp)
		if len(a.cps) > keptCheckpoints {
			a.cps = slices.Delete(a.cps, 0, 1)
			// Buckets up to the oldest checkpoint are served no more.
			a.dropFrames(int(a.cps[0].frame + 1 - a.from))
		}
	}
	if len(a.log)+4*len(a.ends) > a.limit {
		a.dropFrames(len(a.ends) / 4)
	}
	close(a.changed)
	a.changed = make(chan struct{})
}

// seed makes an empty archive start from checkpoint cp: the buckets it
// keeps start after it.
func (a *archive) seed(cp checkpoint) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.from, a.cps = cp.frame+1, []checkpoint{cp}
}

// checkpointFrame reports whether the state after frame f is saved.
func (a *archive) checkpointFrame(f bucket.Frame) bool {
	return a.every > 0 && f%a.every == a.every-1
}

// close wakes every stream waiting for a frame: no more will come.
func (a *archive) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed {
		a.closed = true
		close(a.changed)
	}
}

// checkpoints returns the checkpoints held, oldest first, the first frame
// whose bucket is held and the first frame not stepped yet.
func (a *archive) state() (cps []checkpoint, from, next bucket.Frame) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.cps), a.from, a.next()
}

// checkpointAt returns the checkpoint of frame f, if held.
func (a *archive) checkpointAt(f bucket.Frame) (checkpoint, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, cp := range a.cps {
		if cp.frame == f {
			return cp, true
		}
	}
	return checkpoint{}, false
}

// errGone: the frames asked for are no longer (or never were) held.
var errGone = errors.New("frames no longer held")

// bucketAt appends the encoded bucket of frame f to dst, waiting until f
// is stepped, ctx ends or the archive closes.
func (a *archive) bucketAt(ctx context.Context, dst []byte, f bucket.Frame) ([]byte, error) {
	for {
		a.mu.Lock()
		switch {
		case f < a.from:
			a.mu.Unlock()
			return dst, fmt.Errorf("%w: frame %d, the oldest held is %d", errGone, f, a.from)
		case f < a.next():
			i, start := int(f-a.from), uint32(0)
			if i > 0 {
				start = a.ends[i-1]
			}
			dst = append(dst, a.log[start:a.ends[i]]...)
			a.mu.Unlock()
			return dst, nil
		case a.closed:
			a.mu.Unlock()
			return dst, fmt.Errorf("%w: frame %d, the session ended at %d", errGone, f, a.next())
		}
		wait := a.changed
		a.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
}

// appendBucket encodes a bucket: its frame and command count as uvarints,
// then per command its slot (one byte), sequence number and payload length
// as uvarints, and the payload.
func appendBucket(dst []byte, f bucket.Frame, cmds []bucket.Command) []byte {
	dst = binary.AppendUvarint(dst, uint64(f))
	dst = binary.AppendUvarint(dst, uint64(len(cmds)))
	for _, c := range cmds {
		dst = append(dst, byte(c.Slot))
		dst = binary.AppendUvarint(dst, uint64(c.Seq))
		dst = binary.AppendUvarint(dst, uint64(len(c.Payload)))
		dst = append(dst, c.Payload...)
	}
	return dst
}

// errBadBucket: an encoded bucket does not parse.
var errBadBucket = errors.New("malformed bucket")

// parseBucket decodes one bucket appendBucket encoded; the payloads are
// copies.
func parseBucket(b []byte) (lockstep.Bucket, error) {
	var out lockstep.Bucket
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	f, ok1 := uv()
	n, ok2 := uv()
	if !ok1 || !ok2 || f >= 1<<40 || n > uint64(len(b)) {
		return out, errBadBucket
	}
	out.Frame = bucket.Frame(f)
	out.Commands = make([]bucket.Command, 0, n)
	for range n {
		if len(b) < 1 {
			return out, errBadBucket
		}
		slot := b[0]
		b = b[1:]
		seq, ok1 := uv()
		size, ok2 := uv()
		if !ok1 || !ok2 || slot >= bucket.MaxMembers || seq >= 1<<32 || size > uint64(len(b)) {
			return out, errBadBucket
		}
		out.Commands = append(out.Commands, bucket.Command{Slot: bucket.Slot(slot), Seq: uint32(seq), Frame: out.Frame, Payload: slices.Clone(b[:size])})
		b = b[size:]
	}
	if len(b) != 0 {
		return out, errBadBucket
	}
	return out, nil
}
