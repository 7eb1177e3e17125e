package reckon

import (
	"math"
	"time"
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
	// read from logarithmic buckets, see errHist), and exact when the
	// percentile's rank is the largest error.
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
// counts the errors in at most errBuckets logarithmic buckets (4 bytes
// each, under 10 KiB). It is not safe for concurrent use.
type Meter[V Vector[V]] struct {
	errs        errHist
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
	switch n := m.n; {
	case n == 0:
		m.first = at
	default:
		step := displayed.Sub(m.prev)
		m.maxJump = max(m.maxJump, step.Len())
		if n >= 2 {
			m.maxKink = max(m.maxKink, dist(step, m.step))
		}
		m.step = step
	}
	e := dist(displayed, truth)
	m.errs.add(e)
	m.n++
	m.sum += e
	m.prev, m.last = displayed, at
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
	r.ErrorP99 = m.errs.quantile(0.99)
	r.MaxJump = m.maxJump
	r.MaxKink = m.maxKink
	return r
}

// Relative accuracy and range of errHist: bucket i holds the errors in
// (errGamma^(i-1), errGamma^i] and reports them by 2·errGamma^i/(errGamma+1),
// within errAlpha of each. Errors below errSmallest count as zero; errors
// above errLargest in the top bucket (the largest error is kept exactly).
const (
	errAlpha    = 0.01
	errGamma    = (1 + errAlpha) / (1 - errAlpha)
	errSmallest = 1e-9
	errLargest  = 1e12
)

var (
	errLnGamma = math.Log(errGamma)
	errMinIdx  = errIndex(errSmallest)
	errMaxIdx  = errIndex(errLargest)
	// errBuckets bounds an errHist's counters: about 2,400 (under 10 KiB).
	errBuckets = errMaxIdx - errMinIdx + 1
)

func errIndex(v float64) int { return int(math.Ceil(math.Log(v) / errLnGamma)) }

// errHist counts non-negative errors in logarithmic buckets, holding only
// the span of buckets reached so far (at most errBuckets). It is the same
// scheme as the module's internal quantile sketch, kept here because this
// package imports nothing else of the module.
type errHist struct {
	zeros  int      // errors below errSmallest
	counts []uint32 // counts[i] is bucket offset+i
	offset int
	n      int
	max    float64
}

func (h *errHist) add(v float64) {
	if !(v > 0) {
		v = 0
	}
	h.n++
	h.max = max(h.max, v)
	if v < errSmallest {
		h.zeros++
		return
	}
	i := min(errIndex(v), errMaxIdx)
	switch {
	case len(h.counts) == 0:
		h.counts, h.offset = make([]uint32, 1, 16), i
	case i < h.offset:
		c := make([]uint32, len(h.counts)+h.offset-i)
		copy(c[h.offset-i:], h.counts)
		h.counts, h.offset = c, i
	case i >= h.offset+len(h.counts):
		h.counts = append(h.counts, make([]uint32, i-h.offset-len(h.counts)+1)...)
	}
	h.counts[i-h.offset]++
}

// quantile returns the nearest-rank q-quantile (q in (0, 1]) of the
// errors added: within errAlpha of the exact one, and exact when it is
// the largest error.
func (h *errHist) quantile(q float64) float64 {
	rank := int(math.Ceil(q * float64(h.n)))
	switch {
	case h.n == 0:
		return 0
	case rank >= h.n:
		return h.max
	case rank <= h.zeros:
		return 0
	}
	seen := h.zeros
	for i, c := range h.counts {
		if seen += int(c); seen >= rank {
			return min(2*math.Pow(errGamma, float64(h.offset+i))/(errGamma+1), h.max)
		}
	}
	return h.max
}
