package delay

import (
	"slices"
	"time"
)

// Samples is a sliding window of the most recent duration measurements (for
// example one-way delays), from which a percentile is read. It keeps a fixed
// number of samples and allocates only when created and on the first
// Percentile (its sorting space, which a window never read that way does not
// hold).
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
		panic("delay: NewSamples with size < 1")
	}
	return &Samples{ring: make([]time.Duration, size)}
}

// NewSamplesIn is NewSamples keeping its window in ring, whose length is
// the window's size: a caller that keeps many windows can lay them out
// together. It panics if ring is empty.
func NewSamplesIn(ring []time.Duration) *Samples {
	if len(ring) < 1 {
		panic("delay: NewSamplesIn with an empty ring")
	}
	return &Samples{ring: ring}
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
	if s.scratch == nil {
		s.scratch = make([]time.Duration, 0, len(s.ring))
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

// LeadPolicy chooses a member's lead: how long before a frame's time comes
// the member seals it, that is stops stamping its commands with that frame.
//
// A command submitted when the member's frame clock reads t is stamped with
// the first frame g whose time g·frame is at least t+lead (and never the
// current frame or one already sealed), and the member's seal passes g when
// its clock passes g·frame−lead. So the seal of frame g has lead to reach
// every other member before they step g, and a command waits between lead
// and lead+frame to execute: the lead need not be a whole number of frames,
// and a lead shorter than a frame still lets a command run on the next frame
// when submitted early enough in this one.
//
// The policy asks for
//
//	lead = late + wait + Margin
//
// where late is a high percentile of how long the member's datagrams take to
// bring their news to the member farthest away (as measured there and
// reported back: one-way delay, jitter, loss repaired by later datagrams and
// frame-clock misalignment) and wait is how long a seal change may wait for
// its send. It raises the lead at once when the network gets worse, and
// lowers it only after ShrinkAfter consecutive updates all asked for less,
// then to the largest of those requests: hysteresis, so it does not flap,
// yet a lead that started high (before anything was measured) comes down in
// one step.
//
// With Step set, a lead longer than two Steps is a whole number of Steps
// (the target rounded up), and a lower one is asked for only when the target
// is below it by half a Step more: the lead then moves in whole steps and
// seldom. Every move costs twice: the latency tail follows the highest lead
// of a session, the stalls its lowest. A shorter lead is any duration.
//
// With Hold set, Update leaves the lead where it is while late + wait +
// Margin (before rounding to a Step) exceeds it by at most Hold: on a
// steady network the measurement wanders over a level's edge, and a lead
// that climbs a step for every burst and comes down seconds later pays the
// higher step's latency for those seconds without removing the stalls that
// happen at the lower one. Raise still meets any rise at once (a changed
// network, or paths not yet measured).
type LeadPolicy struct {
	Min, Max    time.Duration // bounds on the lead; 0 <= Min <= Max
	Margin      time.Duration // added to the measurement (processing, timer slack)
	ShrinkAfter int           // consecutive lower targets before shrinking to the largest of them
	Step        time.Duration // leads above two of it are whole multiples of it (0: any lead)
	Hold        time.Duration // Update keeps the lead while the measurement asks for at most this more (0: rise for any)
}

// Lead is the state of a LeadPolicy: the current lead and how long a lower
// one has been asked for.
type Lead struct {
	Policy   LeadPolicy
	current  time.Duration
	measured bool          // Update has been called
	below    int           // consecutive updates that asked for less
	highest  time.Duration // the largest of those requests
}

// NewLead returns a lead starting at initial, clamped to the bounds.
func NewLead(p LeadPolicy, initial time.Duration) *Lead {
	return &Lead{Policy: p, current: max(p.Min, min(initial, p.Max))}
}

// Duration returns the current lead.
func (l *Lead) Duration() time.Duration { return l.current }

// Target returns the lead the policy asks for given the measured lateness
// (high percentile) and the longest wait of a seal change for its send.
func (p LeadPolicy) Target(late, wait time.Duration) time.Duration {
	return p.level(late + wait + p.Margin)
}

// level clamps a lead to the bounds and, past two Steps, rounds it up to a
// whole Step.
func (p LeadPolicy) level(d time.Duration) time.Duration {
	if p.Step > 0 && d > 2*p.Step {
		d = (d + p.Step - 1) / p.Step * p.Step
	}
	return max(p.Min, min(d, p.Max))
}

// lower returns the lead a target asks for when it is below the current
// lead: with Step, the level of the target plus half a step, so that a
// measurement wandering around a level's edge does not move the lead.
func (p LeadPolicy) lower(late, wait time.Duration) time.Duration {
	d := late + wait + p.Margin
	if p.Step > 0 && d > 2*p.Step {
		d += p.Step / 2
	}
	return p.level(d)
}

// Update feeds one measurement and returns the lead to use from now on.
//
// The first update sets the lead to its target at once, up or down: the
// initial lead was a guess made before anything was measured.
func (l *Lead) Update(late, wait time.Duration) time.Duration {
	target := l.Policy.Target(late, wait)
	if !l.measured {
		l.measured = true
		l.current, l.below = target, 0
		return l.current
	}
	switch {
	case target > l.current && late+wait+l.Policy.Margin <= l.current+l.Policy.Hold:
		l.below = 0 // within the band held above the lead
	case target > l.current:
		l.current, l.below = target, 0
	case target < l.current:
		if target = min(l.current, l.Policy.lower(late, wait)); target == l.current {
			l.below = 0
			break
		}
		if l.below == 0 || target > l.highest {
			l.highest = target
		}
		l.below++
		if l.below >= l.Policy.ShrinkAfter {
			l.current = l.highest
			l.below = 0
		}
	default:
		l.below = 0
	}
	return l.current
}

// Raise feeds a partial measurement, one that may miss the worst paths,
// and returns the lead to use from now on: the target if that is higher,
// else the lead unchanged. It does not count as an update.
func (l *Lead) Raise(late, wait time.Duration) time.Duration {
	if target := l.Policy.Target(late, wait); target > l.current {
		l.current, l.below = target, 0
	}
	return l.current
}

// StampFrame returns the first frame whose time, at frame length frame, is
// at least pos+lead, and at least frame 0: the frame a command submitted at
// frame-clock position pos is stamped with under that lead (before the
// caller's other bounds).
func StampFrame(pos, lead, frame time.Duration) Frame {
	if pos+lead <= 0 {
		return 0
	}
	return Frame((pos + lead + frame - 1) / frame)
}
