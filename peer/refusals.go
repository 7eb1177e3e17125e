package peer

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// RefusalLogInterval is how often a host logs refusals of strangers at
// most: the first refusal is logged at once, the ones after it are counted
// and logged as one line with their count when the next refusal comes after
// the interval, or when the host closes.
const RefusalLogInterval = 10 * time.Second

// refusalLog rate-limits the warnings about refused strangers (lobby
// streams, datagram connections, handshakes), which anyone who can reach a
// host can cause one packet at a time. It is safe for concurrent use.
type refusalLog struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu       sync.Mutex
	last     time.Time // when a line was last logged; zero: never
	count    int       // refusals since, not logged
	lastWhat string    // the latest of them
	lastArgs []any
}

func newRefusalLog(log *slog.Logger, every time.Duration, now func() time.Time) *refusalLog {
	return &refusalLog{log: log, every: every, now: now}
}

// refused records one refusal, described by msg and args as for
// slog.Logger.Warn, and logs it unless a line was logged less than the
// interval ago.
func (r *refusalLog) refused(msg string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.count++
		r.lastWhat, r.lastArgs = msg, args
		return
	}
	if r.count > 0 {
		args = append(args[:len(args):len(args)], "refused_before", r.count, "since", r.last)
	}
	r.log.Warn(msg, args...)
	r.last, r.count = now, 0
	r.lastWhat, r.lastArgs = "", nil
}

// flush logs the refusals counted and not yet logged, if any.
func (r *refusalLog) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.count == 0 {
		return
	}
	r.log.LogAttrs(context.Background(), slog.LevelWarn, "peer: refused more strangers",
		slog.Int("count", r.count), slog.Time("since", r.last), slog.String("latest", r.lastWhat))
	r.last, r.count = r.now(), 0
}
