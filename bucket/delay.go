package bucket

import (
	"slices"
	"time"
)

// Samples is a sliding window of the most recent duration measurements (for
// example one-way delays), from which a percentile is read. It keeps a fixed
// number of samples and allocates only when created.
//
// A Samples is not safe for concurrent use.
type Samples struct {
	ring    []time.Duration
	next    int
	full    bool
	scratch []time.Duration
}

// NewSamples returns a window holding the last size samples. It panics if
// size < 1.
func NewSamples(size int) *Samples {
	if size < 1 {
		panic("bucket: NewSamples with size < 1")
	}
	return &Samples{ring: make([]time.Duration, size), scratch: make([]time.Duration, 0, size)}
}

// Add records one sample, replacing the oldest when the window is full.
func (s *Samples) Add(d time.Duration) {
	s.ring[s.next] = d
	s.next++
	if s.next == len(s.ring) {
		s.next, s.full = 0, true
	}
}

// Len returns the number of samples held.
func (s *Samples) Len() int {
	if s.full {
		return len(s.ring)
	}
	return s.next
}

// Percentile returns the nearest-rank p-th percentile (0 < p <= 100) of the
// samples held, or 0 when there are none.
func (s *Samples) Percentile(p float64) time.Duration {
	n := s.Len()
	if n == 0 {
		return 0
	}
	s.scratch = append(s.scratch[:0], s.ring[:n]...)
	slices.Sort(s.scratch)
	rank := int(p/100*float64(n)+0.999999) - 1
	rank = max(0, min(rank, n-1))
	return s.scratch[rank]
}

// Min returns the smallest sample held, or 0 when there are none.
func (s *Samples) Min() time.Duration {
	n := s.Len()
	if n == 0 {
		return 0
	}
	return slices.Min(s.ring[:n])
}

// DelayPolicy chooses how many frames ahead a member stamps its commands.
//
// A command stamped d frames ahead is sealed when the member's clock reaches
// its frame minus d-1, so its seal has d-1 frames to reach every other member
// before they need it. The policy therefore asks for
//
//	d = 1 + ceil((oneWay + wait + Margin) / frame)
//
// where oneWay is a high percentile of the one-way delay to the farthest
// member and wait is how long a seal change may wait for the next send.
// It raises d at once when the network gets worse, and lowers it only after
// ShrinkAfter consecutive updates all asked for less, then to the largest of
// those requests: hysteresis, so it does not flap, yet a delay that started
// high (before anything was measured) comes down in one step.
type DelayPolicy struct {
	Frame       time.Duration // frame length; must be positive
	Min, Max    int           // bounds on the delay in frames; 1 <= Min <= Max
	Margin      time.Duration // added to the measured delay (clock error, processing)
	ShrinkAfter int           // consecutive lower targets before shrinking to the largest of them
}

// Delay is the state of a DelayPolicy: the current delay and how long a
// lower one has been asked for.
type Delay struct {
	Policy   DelayPolicy
	current  int
	measured bool // an update has been made
	below    int  // consecutive updates that asked for less
	highest  int  // the largest of those requests
}

// NewDelay returns a delay starting at initial frames, clamped to the bounds.
func NewDelay(p DelayPolicy, initial int) *Delay {
	return &Delay{Policy: p, current: max(p.Min, min(initial, p.Max))}
}

// Frames returns the current delay in frames.
func (d *Delay) Frames() int { return d.current }

// Target returns the delay the policy asks for given the measured one-way
// delay (high percentile) and the longest wait of a seal for a send.
func (p DelayPolicy) Target(oneWay, wait time.Duration) int {
	need := oneWay + wait + p.Margin
	frames := 1 + int((need+p.Frame-1)/p.Frame)
	if need <= 0 {
		frames = 1
	}
	return max(p.Min, min(frames, p.Max))
}

// Update feeds one measurement and returns the delay in frames to use from
// now on.
//
// The first update sets the delay to its target at once, up or down: the
// initial delay was a guess made before anything was measured.
func (d *Delay) Update(oneWay, wait time.Duration) int {
	target := d.Policy.Target(oneWay, wait)
	if !d.measured {
		d.measured = true
		d.current, d.below = target, 0
		return d.current
	}
	switch {
	case target > d.current:
		d.current, d.below = target, 0
	case target < d.current:
		if d.below == 0 || target > d.highest {
			d.highest = target
		}
		d.below++
		if d.below >= d.Policy.ShrinkAfter {
			d.current = d.highest
			d.below = 0
		}
	default:
		d.below = 0
	}
	return d.current
}
