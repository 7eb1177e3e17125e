package reckon

import (
	"time"

	"github.com/phalanx-net/phalanx/internal/quantile"
)

// Metrics sums up how well a receiver showed an entity. The JSON names are
// those of the `reckon` object in `phalanx sim --json`.
type Metrics struct {
	// UpdatesPerS is the owner's updates per second of the measured span.
	UpdatesPerS float64 `json:"updates_per_s"`
	// ErrorMean and ErrorP99 are the mean and 99th percentile (nearest
	// rank) over frames of the distance between the displayed position and
	// the owner's true position at the same time. ErrorMean is exact;
	// ErrorP99 is within 1 % of the exact nearest-rank percentile (it is
	// read from a quantile sketch of logarithmic buckets), and exact when
	// the percentile's rank is the largest error.
	ErrorMean float64 `json:"error_mean"`
	ErrorP99  float64 `json:"error_p99"`
	// MaxJump is the largest distance the displayed position moved between
	// two consecutive frames.
	MaxJump float64 `json:"max_jump"`
	// MaxKink is the largest change between consecutive frames of the
	// displayed movement per frame: a sudden change of velocity (times
	// the frame time), which shows as a jerk or a sharp turn even where
	// MaxJump is small.
	MaxKink float64 `json:"max_kink"`
}

// A Meter accumulates Metrics from one receiver's frames. Its zero value is
// ready to use. Its memory is bounded however many frames it is given: it
// counts the errors in a quantile.Sketch (at most quantile.MaxBuckets
// logarithmic buckets). It is not safe for concurrent use.
type Meter[V Vector[V]] struct {
	errs quantile.Sketch
	// The newest errors, counted in errs a batch at a time (flush): a
	// batch's errors lie close together, in a few of the sketch's buckets,
	// where one at a time each reaches for its bucket anew (with thousands
	// of meters, their buckets are not in the caches).
	pending     [meterBatch]float64
	npending    int
	n           int
	sum         float64
	maxJump     float64
	maxKink     float64
	first, last time.Duration
	prev        V
	step        V // the last movement between frames
	updates     int
}

// Frame records one displayed frame at time at: the displayed position and
// the owner's true position then. Frames come in time order.
func (m *Meter[V]) Frame(at time.Duration, displayed, truth V) {
	m.FrameError(at, displayed, displayed.Sub(truth).Len())
}

// FrameError is Frame with the error already measured: err is the
// distance from displayed to the true position, displayed.Sub(truth).Len()
// (a caller that shows one position under several meters measures it
// once).
func (m *Meter[V]) FrameError(at time.Duration, displayed V, err float64) {
	switch n := m.n; {
	case n == 0:
		m.first = at
	default:
		step := displayed.Sub(m.prev)
		if !shorter(step, m.maxJump) {
			m.maxJump = max(m.maxJump, step.Len())
		}
		if kink := step.Sub(m.step); n >= 2 && !shorter(kink, m.maxKink) {
			m.maxKink = max(m.maxKink, kink.Len())
		}
		m.step = step
	}
	m.pending[m.npending] = err
	if m.npending++; m.npending == meterBatch {
		m.flush()
	}
	m.n++
	m.sum += err
	m.prev, m.last = displayed, at
}

// meterBatch is how many errors a Meter holds before it counts them.
const meterBatch = 16

// flush counts the pending errors, in the order they came.
func (m *Meter[V]) flush() {
	m.errs.AddAll(m.pending[:m.npending])
	m.npending = 0
}

// Update counts one update sent by the owner.
func (m *Meter[V]) Update() { m.updates++ }

// Metrics returns the figures so far: zeros before the first frame, and an
// UpdatesPerS of zero until two frames span some time.
func (m *Meter[V]) Metrics() Metrics {
	n := m.n
	if n == 0 {
		return Metrics{}
	}
	var r Metrics
	if span := (m.last - m.first).Seconds(); span > 0 {
		r.UpdatesPerS = float64(m.updates) / span
	}
	r.ErrorMean = m.sum / float64(n)
	m.flush()
	r.ErrorP99 = m.errs.Quantile(99)
	r.MaxJump = m.maxJump
	r.MaxKink = m.maxKink
	return r
}

// shorter reports, without taking a square root, that v is certainly
// shorter than l, so that max(l, v.Len()) is l: v·v falls short of l² by
// a relative margin (10⁻⁹) far wider than the rounding errors of v·v, l²
// and Len (a few units in the last place each). It reports false when it
// cannot tell, and for an l outside (10⁻¹⁰⁰, 10¹⁰⁰), where l² or v·v could
// leave the range of normal floating-point numbers.
func shorter[V Vector[V]](v V, l float64) bool {
	return l > 1e-100 && l < 1e100 && v.Dot(v) < l*l*(1-1e-9)
}
