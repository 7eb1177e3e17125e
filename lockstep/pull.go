package lockstep

import (
	"errors"
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// Pull mode: a Session without a Simulation hands its buckets to the caller,
// who steps them on its own goroutine (a game loop's Update) and reports
// each frame's hash. The caller's simulation then needs no lock, and Run's
// goroutine keeps the network and the seal timing going whatever the game
// loop does.

// ErrBehind ends a session in pull mode whose caller has not taken its
// buckets (Session.Ready) for Config.HashHistory frames: what waits for it
// is bounded by that, and its hashes would come too late for desync
// detection anyway.
var ErrBehind = errors.New("lockstep: the game has not taken its buckets for too long")

// handOver queues the core's buckets for Ready, copying them: the core's
// slices are only valid until its next call. It returns ErrBehind when
// more than HashHistory buckets are waiting.
func (s *Session) handOver(bs []Bucket) error {
	if len(bs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ready)+len(bs) > s.core.cfg.HashHistory {
		return fmt.Errorf("%w: %d frames waiting", ErrBehind, len(s.ready)+len(bs))
	}
	for _, b := range bs {
		cmds := make([]bucket.Command, len(b.Commands))
		for i, c := range b.Commands {
			c.Payload = append([]byte(nil), c.Payload...)
			cmds[i] = c
		}
		s.ready = append(s.ready, Bucket{Frame: b.Frame, Commands: cmds})
	}
	return nil
}

// Ready returns, in frame order, the buckets made ready since the last call
// (pull mode only; nil otherwise). It never blocks. The caller steps each
// and reports its hash with Stepped, in order; the buckets are the
// caller's to keep. Buckets not taken wait for the next call, and hashes
// reported more than Config.HashHistory frames late are left out of desync
// detection, so call it every frame of the game loop.
func (s *Session) Ready() []Bucket {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs := s.ready
	s.ready = nil
	return bs
}

// Stepped reports the state hash after the caller stepped frame in pull
// mode, with the simulation's section hashes when it has them (nil
// otherwise; see SectionHasher). sections is copied. It never blocks. It
// also records frame and hash as the session's newest (Stats().Stepped and
// Stats().Hash).
func (s *Session) Stepped(frame bucket.Frame, hash uint64, sections []Section) {
	s.mu.Lock()
	s.reports = append(s.reports, steppedReport{frame: frame, hash: hash, sections: append([]Section(nil), sections...)})
	if frame > s.stats.Stepped {
		s.stats.Stepped, s.stats.Hash = frame, hash
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// takeReports hands the caller's reported hashes to the core, on Run's
// goroutine.
func (s *Session) takeReports() {
	s.mu.Lock()
	rs := s.reports
	s.reports = nil
	s.mu.Unlock()
	for _, r := range rs {
		s.core.Stepped(r.frame, r.hash, r.sections)
	}
}

// Alpha returns where the member's frame clock stands between the time of
// the newest stepped frame f and that of frame f+1, from 0 to 1, for
// drawing the state interpolated from the one after frame f-1 (at 0) to the
// one after frame f (at 1). It follows the frame clock the core keeps
// (slewed to the slowest member), not the wall clock since the last step,
// so a late bucket or a catch-up makes it hold at 1 rather than jitter. It
// returns 0 before the first frame is stepped.
func (s *Session) Alpha() float64 {
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return alpha(s.frameAt+(now-s.clockAt), s.stats.Stepped, s.core.cfg.Frame)
}

// alpha places frame-clock position pos after the time of frame stepped,
// in frames, clamped to [0, 1].
func alpha(pos time.Duration, stepped bucket.Frame, frame time.Duration) float64 {
	if stepped < 0 || frame <= 0 {
		return 0
	}
	a := float64(pos-time.Duration(stepped)*frame) / float64(frame)
	return min(max(a, 0), 1)
}
