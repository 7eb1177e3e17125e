package reckon

import "time"

// A Receiver shows one remote entity: it takes the entity's updates as they
// arrive, keeps only those newer than the newest it has (sequenced
// unreliable delivery: late, duplicated and reordered updates are dropped)
// and feeds them to a [Smoother]. It is not safe for concurrent use.
//
// Newer is judged by sequence number in 16-bit serial arithmetic: s is newer
// than n when s−n, taken modulo 2^16, lies in [1, 2^15). So 0x0001 is newer
// than 0xFFFE, and an update 2^15 or more behind counts as older. An owner
// would have to send 32768 updates that all fail to arrive for a receiver to
// be misled; at the owner's busiest, one update per 50 ms, that is 27
// minutes of silence. The Receiver does not check Update.Entity; the caller
// routes updates to the Receiver of their entity.
type Receiver[V Vector[V]] struct {
	smoother Smoother[V]
	newest   uint16
	dropped  int
}

// NewReceiver returns a Receiver that shows the entity as cfg says.
// It panics if cfg names an unknown predictor or method.
func NewReceiver[V Vector[V]](cfg Smoothing) *Receiver[V] {
	return &Receiver[V]{smoother: *NewSmoother[V](cfg)}
}

// Receive takes an update that arrived at time now. It reports whether the
// update was used; an update not newer than the newest one is dropped.
func (r *Receiver[V]) Receive(now time.Duration, u Update[V]) bool {
	if r.smoother.Started() && !newer(u.Seq, r.newest) {
		r.dropped++
		return false
	}
	r.newest = u.Seq
	r.smoother.Correct(now, u.State)
	return true
}

// At returns the state to display at time now (see [Smoother.At]).
func (r *Receiver[V]) At(now time.Duration) State[V] { return r.smoother.At(now) }

// Pos returns At(now).Pos (see [Smoother.Pos]).
func (r *Receiver[V]) Pos(now time.Duration) V { return r.smoother.Pos(now) }

// Converging reports whether At(now) depends on the method (see
// [Smoother.Converging]).
func (r *Receiver[V]) Converging(now time.Duration) bool { return r.smoother.Converging(now) }

// Until returns when the current correction ends (see [Smoother.Until]).
func (r *Receiver[V]) Until() time.Duration { return r.smoother.Until() }

// Started reports whether an update has been received.
func (r *Receiver[V]) Started() bool { return r.smoother.Started() }

// Dropped returns how many updates were dropped as old.
func (r *Receiver[V]) Dropped() int { return r.dropped }

// newer reports whether sequence number s is newer than n.
func newer(s, n uint16) bool {
	d := s - n
	return d != 0 && d < 1<<15
}
