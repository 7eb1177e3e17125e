package netsim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidProfile is wrapped by every error that reports a profile, a phase
// or a set of conditions that cannot be used: a bad line in a profile file, a
// negative delay, a probability above 100%.
var ErrInvalidProfile = errors.New("netsim: invalid profile")

// PPM is a probability in parts per million: 0 is never, [Always]
// (1,000,000) is every time. Probabilities are integers so that every draw
// compares integers and gives the same answer on every architecture.
//
// In profile files a PPM is written as a percentage with at most four
// decimal places ("2%", "0.5%", "0.0001%"); see [ParsePPM] and [PPM.String].
type PPM uint32

// Always is the probability 1 (100%).
const Always PPM = 1_000_000

// String formats p as a percentage with the fewest decimal places that
// represent it exactly, for example "2%", "0.5%" or "0.0001%". [ParsePPM]
// reads it back to the same value.
func (p PPM) String() string {
	whole, frac := uint32(p)/10_000, uint32(p)%10_000
	if frac == 0 {
		return strconv.FormatUint(uint64(whole), 10) + "%"
	}
	f := fmt.Sprintf("%04d", frac)
	f = strings.TrimRight(f, "0")
	return strconv.FormatUint(uint64(whole), 10) + "." + f + "%"
}

// ParsePPM parses a percentage such as "2%", "0.5%" or "100%": decimal
// digits, an optional point followed by at most four digits, and a '%'. It
// returns an error wrapping [ErrInvalidProfile] for anything else, including
// values above 100%. It uses no floating point.
func ParsePPM(s string) (PPM, error) {
	p, problem := parsePercent(s)
	if problem != "" {
		return 0, fmt.Errorf("%w: %s", ErrInvalidProfile, problem)
	}
	return p, nil
}

// parsePercent is ParsePPM returning a description of the problem instead
// of an error, for the profile parser to put after a line number.
func parsePercent(s string) (PPM, string) {
	num, ok := strings.CutSuffix(s, "%")
	if !ok {
		return 0, fmt.Sprintf("%q is not a percentage (missing %%)", s)
	}
	whole, frac, hasPoint := strings.Cut(num, ".")
	if whole == "" || !allDigits(whole) || (hasPoint && (frac == "" || !allDigits(frac))) {
		return 0, fmt.Sprintf("%q is not a percentage", s)
	}
	if len(frac) > 4 {
		return 0, fmt.Sprintf("%q has more than 4 decimal places", s)
	}
	if len(whole) > 3 {
		return 0, fmt.Sprintf("%q is above 100%%", s)
	}
	w, _ := strconv.ParseUint(whole, 10, 32)
	var f uint64
	if frac != "" {
		f, _ = strconv.ParseUint(frac+strings.Repeat("0", 4-len(frac)), 10, 32)
	}
	v := w*10_000 + f
	if v > uint64(Always) {
		return 0, fmt.Sprintf("%q is above 100%%", s)
	}
	return PPM(v), ""
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Burst is a Gilbert-Elliott loss model: a two-state Markov chain, good and
// bad, that moves once per datagram sent on a [Link]. For each datagram the
// chain first takes its step (good→bad with probability Enter, bad→good with
// probability Leave), then the datagram is lost with probability LossGood or
// LossBad of the state it is now in. A link starts in the good state and keeps
// its state across phase changes.
//
// In the long run the chain is bad for a share Enter/(Enter+Leave) of the
// datagrams, a bad spell lasts 1/Leave datagrams on average, and the loss
// rate of the model alone is (Leave·LossGood + Enter·LossBad)/(Enter+Leave).
// The zero Burst never loses anything.
type Burst struct {
	Enter    PPM // P(good→bad) per datagram
	Leave    PPM // P(bad→good) per datagram
	LossGood PPM // loss probability in the good state
	LossBad  PPM // loss probability in the bad state
}

// IsZero reports whether b is the zero Burst, which never loses a datagram.
func (b Burst) IsZero() bool { return b == Burst{} }

// Rate returns the long-run loss rate of the burst model alone, in parts per
// million, rounded down. A chain that never leaves its state (Enter and Leave
// both 0) stays good, so its rate is LossGood.
func (b Burst) Rate() PPM {
	den := uint64(b.Enter) + uint64(b.Leave)
	if den == 0 {
		return b.LossGood
	}
	return PPM((uint64(b.Leave)*uint64(b.LossGood) + uint64(b.Enter)*uint64(b.LossBad)) / den)
}

// MaxDelay bounds every delay in [Conditions] (Latency, Jitter,
// ReorderDelay, Queue): an hour is beyond any network worth simulating and
// keeps all time arithmetic far from overflow.
const MaxDelay = time.Hour

// MaxDatagram is the largest datagram size [Link.Send] and [Uplink.Admit]
// accept (1 GiB); they panic above it. Real datagrams are below 64 KiB.
const MaxDatagram = 1 << 30

// Conditions describe one direction of a network path, and the sender's
// uplink, for the length of one [Phase]. The zero value is a perfect network:
// no delay, no loss, unlimited bandwidth.
//
// A [Link] uses Latency, Jitter, Loss, Burst, Reorder, ReorderDelay and
// Duplicate; an [Uplink] uses Bandwidth and Queue. The model, per datagram
// handed to [Link.Send] at time now:
//
//   - Loss: the datagram is lost if an independent draw with probability Loss
//     says so, or if the [Burst] model says so (both are always drawn).
//   - Delay: it arrives at now + Latency + j, where j ≥ 0 is a jitter sample
//     (see Jitter), but never before a datagram sent earlier on the same link
//     and not reordered: jitter alone does not reorder, as on a real path
//     where the variation comes from FIFO queues. When datagrams are sent
//     closer together than the jitter, this makes some of them later than
//     Latency + j.
//   - Reorder: with probability Reorder a delivered datagram is held back by
//     a further ReorderDelay and does not hold back later datagrams, which
//     may therefore overtake it.
//   - Duplicate: with probability Duplicate a delivered datagram arrives
//     twice; the copy arrives after the original by a uniform draw in
//     [0, Jitter].
type Conditions struct {
	// Latency is the base one-way delay: propagation plus fixed processing.
	// No datagram arrives sooner.
	Latency time.Duration

	// Jitter is the mean extra delay above Latency. The extra delay j is the
	// sum of a uniform part on [0, Jitter) (mean Jitter/2) and an
	// exponential-like tail with mean Jitter/2: with w = Jitter/3, the tail is
	// w·(k+u), where k is a geometric count (P(k) = 2^-(k+1), capped at 15)
	// and u is uniform on [0, 1). So j is never negative, never above
	// 19·Jitter/3, and has a median near 0.93·Jitter, a 95th percentile near
	// 2·Jitter, a 99th near 2.8·Jitter and a 99.9th near 3.9·Jitter, all from
	// integer draws.
	Jitter time.Duration

	// Loss is the probability that a datagram is lost at random,
	// independently of every other datagram.
	Loss PPM

	// Burst is the correlated (Gilbert-Elliott) loss, on top of Loss.
	Burst Burst

	// Reorder is the probability that a delivered datagram is held back by a
	// further ReorderDelay, letting later datagrams overtake it.
	Reorder PPM

	// ReorderDelay is how long a reordered datagram is held back. It must be
	// positive when Reorder is.
	ReorderDelay time.Duration

	// Duplicate is the probability that a delivered datagram arrives twice.
	Duplicate PPM

	// Bandwidth is the sender's uplink capacity in bytes per second, shared
	// by all of its links; 0 is unlimited. A datagram of n bytes takes
	// ceil(n·1e9/Bandwidth) nanoseconds to serialize.
	Bandwidth int64

	// Queue is the drop-tail limit of the uplink queue, as time: a datagram
	// that would wait longer than Queue before its first byte goes out is
	// dropped. In bytes, the queue holds Bandwidth·Queue. With a Bandwidth,
	// Queue 0 means no queue: a datagram is accepted only when the uplink is
	// idle. It must be 0 when Bandwidth is 0.
	Queue time.Duration
}

// Validate returns an error wrapping [ErrInvalidProfile] that names the
// first field of c that is out of range, or nil.
func (c Conditions) Validate() error {
	if problem := c.problem(); problem != "" {
		return fmt.Errorf("%w: %s", ErrInvalidProfile, problem)
	}
	return nil
}

// problem describes the first field of c that is out of range, or is "".
func (c Conditions) problem() string {
	delays := []struct {
		name string
		d    time.Duration
	}{
		{"latency", c.Latency},
		{"jitter", c.Jitter},
		{"reorder delay", c.ReorderDelay},
		{"queue", c.Queue},
	}
	for _, d := range delays {
		if d.d < 0 {
			return fmt.Sprintf("%s %v is negative", d.name, d.d)
		}
		if d.d > MaxDelay {
			return fmt.Sprintf("%s %v is above %v", d.name, d.d, MaxDelay)
		}
	}
	probs := []struct {
		name string
		p    PPM
	}{
		{"loss", c.Loss},
		{"burst good→bad", c.Burst.Enter},
		{"burst bad→good", c.Burst.Leave},
		{"burst loss in good", c.Burst.LossGood},
		{"burst loss in bad", c.Burst.LossBad},
		{"reorder", c.Reorder},
		{"dup", c.Duplicate},
	}
	for _, p := range probs {
		if p.p > Always {
			return fmt.Sprintf("%s %d ppm is above 100%%", p.name, uint32(p.p))
		}
	}
	if c.Reorder > 0 && c.ReorderDelay == 0 {
		return fmt.Sprintf("reorder %v needs a positive delay", c.Reorder)
	}
	if c.Bandwidth < 0 {
		return fmt.Sprintf("bandwidth %d is negative", c.Bandwidth)
	}
	if c.Bandwidth == 0 && c.Queue != 0 {
		return fmt.Sprintf("queue %v set without a bandwidth", c.Queue)
	}
	return ""
}
