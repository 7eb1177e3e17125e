package netsim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Phase is a stretch of time with fixed [Conditions].
type Phase struct {
	Duration time.Duration // how long the phase lasts; positive
	Conditions
}

// Profile is a named schedule of network conditions: its phases follow one
// another from time 0, and after the last phase the schedule repeats from
// the first, for ever. A profile with one phase is therefore constant.
//
// Its text form, read by [ParseProfile] and written by [Profile.String], has
// one phase per line:
//
//	# a comment runs from '#' to the end of the line
//	name flaky-wifi
//	10s latency=50ms jitter=10ms loss=2% burst=1%/30%/0%/50% reorder=1%/20ms dup=0.5% bw=3600 queue=200ms
//	2s  latency=50ms loss=100%
//
// A phase line starts with its duration (Go syntax: "10s", "1m30s",
// "250ms") followed by any of these settings, each at most once, in any
// order; a setting left out is zero:
//
//	latency=DURATION           base one-way delay (Conditions.Latency)
//	jitter=DURATION            mean extra delay (Conditions.Jitter)
//	loss=PERCENT               independent loss (Conditions.Loss)
//	burst=P1/P2/P3/P4          Gilbert-Elliott: P(good→bad)/P(bad→good)/loss in good/loss in bad
//	reorder=PERCENT/DURATION   reorder probability/hold-back (Conditions.Reorder, ReorderDelay)
//	dup=PERCENT                duplication (Conditions.Duplicate)
//	bw=BYTES                   uplink bytes per second, 0 unlimited (Conditions.Bandwidth)
//	queue=DURATION             uplink drop-tail queue limit (Conditions.Queue)
//
// PERCENT is a percentage with at most four decimal places ("0.5%"), as
// [ParsePPM] reads. The optional "name NAME" line, at most once, names the
// profile; NAME is letters, digits, '.', '_' and '-'.
type Profile struct {
	Name   string
	Phases []Phase
}

// Validate returns an error wrapping [ErrInvalidProfile] that names the
// first problem with p (no phases, a phase that is not positive, conditions
// out of range, a malformed name, a period that overflows), or nil.
func (p Profile) Validate() error {
	if problem := p.problem(); problem != "" {
		return fmt.Errorf("%w: %s", ErrInvalidProfile, problem)
	}
	return nil
}

func (p Profile) problem() string {
	if p.Name != "" && !validName(p.Name) {
		return fmt.Sprintf("name %q: use only letters, digits, '.', '_' and '-'", p.Name)
	}
	if len(p.Phases) == 0 {
		return "no phases"
	}
	var total time.Duration
	for i, ph := range p.Phases {
		if ph.Duration <= 0 {
			return fmt.Sprintf("phase %d: duration %v is not positive", i+1, ph.Duration)
		}
		if ph.Duration > math.MaxInt64-total {
			return fmt.Sprintf("phase %d: total duration overflows", i+1)
		}
		total += ph.Duration
		if problem := ph.Conditions.problem(); problem != "" {
			return fmt.Sprintf("phase %d: %s", i+1, problem)
		}
	}
	return ""
}

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return s != ""
}

// Period returns the sum of the phases' durations: the profile repeats with
// this period.
func (p Profile) Period() time.Duration {
	var total time.Duration
	for _, ph := range p.Phases {
		total += ph.Duration
	}
	return total
}

// At returns the conditions in force at time now since the session start:
// those of the phase that contains now modulo [Profile.Period]. A phase
// covers [start, start+Duration). It panics if p is not valid or now is
// negative.
func (p Profile) At(now time.Duration) Conditions {
	if err := p.Validate(); err != nil {
		panic("netsim: Profile.At: " + err.Error())
	}
	if now < 0 {
		panic("netsim: Profile.At: negative time")
	}
	t := now % p.Period()
	for _, ph := range p.Phases {
		if t < ph.Duration {
			return ph.Conditions
		}
		t -= ph.Duration
	}
	panic("unreachable: time modulo the period lies in no phase")
}

// String returns p in the text form that [ParseProfile] reads: a "name"
// line if p has a name, then one line per phase with the settings that are
// not zero, in a fixed order. Parsing the result gives back p exactly.
func (p Profile) String() string {
	var b strings.Builder
	if p.Name != "" {
		b.WriteString("name ")
		b.WriteString(p.Name)
		b.WriteByte('\n')
	}
	for _, ph := range p.Phases {
		b.WriteString(ph.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// String returns the phase as one line of a profile file, without the
// newline.
func (ph Phase) String() string {
	var b strings.Builder
	b.WriteString(ph.Duration.String())
	c := ph.Conditions
	if c.Latency != 0 {
		b.WriteString(" latency=" + c.Latency.String())
	}
	if c.Jitter != 0 {
		b.WriteString(" jitter=" + c.Jitter.String())
	}
	if c.Loss != 0 {
		b.WriteString(" loss=" + c.Loss.String())
	}
	if !c.Burst.IsZero() {
		b.WriteString(" burst=" + c.Burst.Enter.String() + "/" + c.Burst.Leave.String() +
			"/" + c.Burst.LossGood.String() + "/" + c.Burst.LossBad.String())
	}
	if c.Reorder != 0 || c.ReorderDelay != 0 {
		b.WriteString(" reorder=" + c.Reorder.String() + "/" + c.ReorderDelay.String())
	}
	if c.Duplicate != 0 {
		b.WriteString(" dup=" + c.Duplicate.String())
	}
	if c.Bandwidth != 0 {
		b.WriteString(" bw=" + strconv.FormatInt(c.Bandwidth, 10))
	}
	if c.Queue != 0 {
		b.WriteString(" queue=" + c.Queue.String())
	}
	return b.String()
}

// ParseError reports a bad line in a profile file. It wraps
// [ErrInvalidProfile].
type ParseError struct {
	Line    int    // 1-based line number
	Problem string // what is wrong, naming the offending text
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("netsim: profile line %d: %s", e.Line, e.Problem)
}

// Unwrap returns [ErrInvalidProfile].
func (e *ParseError) Unwrap() error { return ErrInvalidProfile }

// ParseProfile reads a profile in the text form described at [Profile].
// Every problem on a line is reported as a [*ParseError] with the line
// number; a file with no phase, or a read error, gives an error wrapping
// [ErrInvalidProfile] or the reader's error. The result is valid.
func ParseProfile(r io.Reader) (Profile, error) {
	var p Profile
	var total time.Duration
	sc := bufio.NewScanner(r)
	line, nameLine := 0, 0
	for sc.Scan() {
		line++
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		fail := func(format string, args ...any) error {
			return &ParseError{Line: line, Problem: fmt.Sprintf(format, args...)}
		}
		if fields[0] == "name" {
			switch {
			case nameLine != 0:
				return Profile{}, fail("second name line (first on line %d)", nameLine)
			case len(fields) != 2:
				return Profile{}, fail("want \"name NAME\", got %d words", len(fields))
			case !validName(fields[1]):
				return Profile{}, fail("name %q: use only letters, digits, '.', '_' and '-'", fields[1])
			}
			p.Name, nameLine = fields[1], line
			continue
		}
		ph, problem := parsePhase(fields)
		if problem != "" {
			return Profile{}, fail("%s", problem)
		}
		if problem := ph.Conditions.problem(); problem != "" {
			return Profile{}, fail("%s", problem)
		}
		if ph.Duration > math.MaxInt64-total {
			return Profile{}, fail("total duration of the phases overflows")
		}
		total += ph.Duration
		p.Phases = append(p.Phases, ph)
	}
	if err := sc.Err(); err != nil {
		return Profile{}, fmt.Errorf("netsim: reading profile: %w", err)
	}
	if len(p.Phases) == 0 {
		return Profile{}, fmt.Errorf("%w: no phases", ErrInvalidProfile)
	}
	return p, nil
}

// parsePhase parses the words of one phase line.
func parsePhase(fields []string) (Phase, string) {
	var ph Phase
	d, err := time.ParseDuration(fields[0])
	if err != nil {
		return ph, fmt.Sprintf("phase must start with a duration such as 10s, got %q", fields[0])
	}
	if d <= 0 {
		return ph, fmt.Sprintf("phase duration %s is not positive", fields[0])
	}
	ph.Duration = d
	c := &ph.Conditions
	seen := make(map[string]bool, len(fields))
	for _, f := range fields[1:] {
		key, val, ok := strings.Cut(f, "=")
		if !ok {
			return ph, fmt.Sprintf("%q is not key=value", f)
		}
		if seen[key] {
			return ph, fmt.Sprintf("%s set twice", key)
		}
		seen[key] = true
		if val == "" {
			return ph, fmt.Sprintf("%s has no value", key)
		}
		var problem string
		switch key {
		case "latency":
			c.Latency, problem = parseDelay(key, val)
		case "jitter":
			c.Jitter, problem = parseDelay(key, val)
		case "queue":
			c.Queue, problem = parseDelay(key, val)
		case "loss":
			c.Loss, problem = parseProb(key, val)
		case "dup":
			c.Duplicate, problem = parseProb(key, val)
		case "burst":
			parts := strings.Split(val, "/")
			if len(parts) != 4 {
				return ph, fmt.Sprintf("burst=%s: want four percentages P(good→bad)/P(bad→good)/loss in good/loss in bad", val)
			}
			probs := [4]*PPM{&c.Burst.Enter, &c.Burst.Leave, &c.Burst.LossGood, &c.Burst.LossBad}
			for i, s := range parts {
				if *probs[i], problem = parseProb(key, s); problem != "" {
					break
				}
			}
		case "reorder":
			prob, delay, ok := strings.Cut(val, "/")
			if !ok {
				return ph, fmt.Sprintf("reorder=%s: want PERCENT/DURATION such as 1%%/20ms", val)
			}
			if c.Reorder, problem = parseProb(key, prob); problem == "" {
				c.ReorderDelay, problem = parseDelay(key, delay)
			}
		case "bw":
			if !allDigits(val) {
				return ph, fmt.Sprintf("bw=%s: want whole bytes per second such as 3600", val)
			}
			bw, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return ph, fmt.Sprintf("bw=%s: too large", val)
			}
			c.Bandwidth = bw
		default:
			return ph, fmt.Sprintf("unknown setting %q (known: latency, jitter, loss, burst, reorder, dup, bw, queue)", key)
		}
		if problem != "" {
			return ph, problem
		}
	}
	return ph, ""
}

func parseDelay(key, s string) (time.Duration, string) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Sprintf("%s: %q is not a duration such as 20ms", key, s)
	}
	return d, ""
}

func parseProb(key, s string) (PPM, string) {
	p, problem := parsePercent(s)
	if problem != "" {
		return 0, key + ": " + problem
	}
	return p, ""
}

// LoadProfile reads the profile file at path with [ParseProfile]. A profile
// without a "name" line is named after the file, without its extension.
// Errors name the file.
func LoadProfile(path string) (Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return Profile{}, fmt.Errorf("netsim: %w", err)
	}
	defer f.Close()
	p, err := ParseProfile(f)
	if err != nil {
		return Profile{}, fmt.Errorf("%s: %w", path, err)
	}
	if p.Name == "" {
		base := filepath.Base(path)
		p.Name = strings.TrimSuffix(base, filepath.Ext(base))
		if !validName(p.Name) {
			return Profile{}, fmt.Errorf("%s: %w: file name %q is not a valid profile name; add a name line", path, ErrInvalidProfile, p.Name)
		}
	}
	return p, nil
}
