package lockstep

import (
	"fmt"
	"time"
)

// Policy is how a member chooses how far ahead it stamps its commands and
// when its seal advances. There are three: Adaptive (the default, chosen by
// a nil Config.Policy), Fixed and Turns. Members of one session may use
// different policies: each member's seal is its own promise, and the others
// only wait for it.
type Policy interface {
	// String names the policy: "adaptive", "fixed:N" or "turns:LxA".
	String() string
	// check reports whether the policy fits cfg (defaults applied).
	check(cfg *Config) error
}

// Adaptive sizes the lead, how long before a frame's time the member's seal
// passes it, from what happened: every member measures how late the news in
// every other member's datagrams reached it, and reports to all the lead
// that would have brought all but 1.5%/(members-1) of the last 40 seconds'
// news on time; each member's lead covers the mean of the reports, its own
// included, so the members' leads agree (until every member has reported,
// and under a tight byte budget, the largest report: see
// docs/architecture.md, "Sending"). Over a frame the lead is a whole
// number of half frames. It rises when a report asks for a quarter frame
// more than it and falls only after two seconds of reports asking for a
// quarter frame less than the step below; when the lateness shifts, the
// older measurements are forgotten, and a jump of it (two members' samples
// far past the worst of the window's past, or one when only one other
// member is live) is met within the frame, then
// from the largest report for a second (see docs/architecture.md, "Sizing
// the lead from measurement").
// Before the first reports the lead is Config.StartLead. The lead stays
// within Config.MinDelay and Config.MaxDelay.
type Adaptive struct{}

// Fixed stamps every command Frames frames after the member's current frame
// and seals each frame Frames-1 frames before its time, whatever the network
// does. Frames is at most Config.MaxDelay.
type Fixed struct {
	Frames int // frames ahead; at least 1
}

// Turns is the classic lockstep schedule: time is cut into turns of Length
// frames, a command issued during a turn executes at the first frame of the
// turn Ahead turns later, and a member's seal advances once a turn. Age of
// Empires used 200 ms turns with commands two turns ahead (AoE); the bucket
// synchronization of the slides sizes the turn by the measured round trip
// and runs commands one turn ahead (Length 0: the largest smoothed RTT to any
// member, rounded up to whole frames, measured anew at each turn).
type Turns struct {
	Length int // frames per turn; 0 sizes each turn by the measured RTT
	Ahead  int // turns ahead; at least 1
}

// AoE returns the turns of Age of Empires for frames of length frame:
// turns of 200 ms (rounded up to whole frames), commands two turns ahead.
func AoE(frame time.Duration) Turns {
	if frame <= 0 {
		frame = DefaultFrame
	}
	return Turns{Length: max(1, int((200*time.Millisecond+frame-1)/frame)), Ahead: 2}
}

// BucketRTT returns the bucket synchronization of the slides: turns of one
// measured round trip, one turn ahead.
func BucketRTT() Turns { return Turns{Length: 0, Ahead: 1} }

func (Adaptive) String() string { return "adaptive" }
func (p Fixed) String() string  { return fmt.Sprintf("fixed:%d", p.Frames) }
func (p Turns) String() string  { return fmt.Sprintf("turns:%dx%d", p.Length, p.Ahead) }

func (Adaptive) check(*Config) error { return nil }

func (p Fixed) check(c *Config) error {
	if p.Frames < 1 || p.Frames > c.MaxDelay {
		return fmt.Errorf("%w: fixed delay %d frames, want 1..%d (MaxDelay)", ErrInvalidConfig, p.Frames, c.MaxDelay)
	}
	return nil
}

func (p Turns) check(c *Config) error {
	if p.Ahead < 1 || p.Length < 0 || p.Ahead*max(p.Length, 1) > c.MaxDelay {
		return fmt.Errorf("%w: turns of %d frames, %d ahead (want at least 1 ahead, at most MaxDelay %d frames ahead)", ErrInvalidConfig, p.Length, p.Ahead, c.MaxDelay)
	}
	return nil
}

// ReliableCarrier returns cfg set for a carrier that loses nothing and only
// delays, such as a reliable ordered stream per pair of members: members
// wait a minute for a silent member before dropping it (as a TCP session
// would, rather than drop a member stuck behind a retransmission after the
// datagram default of DefaultDropTimeout), and no second copy of a seal
// goes out (it would only queue behind the first). Other fields are kept.
func ReliableCarrier(cfg Config) Config {
	cfg.DropTimeout = ReliableDropTimeout
	cfg.SealRepeat = -1
	return cfg
}

// ReliableDropTimeout is the drop timeout of ReliableCarrier.
const ReliableDropTimeout = time.Minute

// normalizePolicy sets the default policy, replaces a pointer to a policy
// by its value and checks it.
func (c *Config) normalizePolicy() error {
	switch p := c.Policy.(type) {
	case nil:
		c.Policy = Adaptive{}
	case *Adaptive:
		if p == nil {
			return fmt.Errorf("%w: nil policy pointer", ErrInvalidConfig)
		}
		c.Policy = *p
	case *Fixed:
		if p == nil {
			return fmt.Errorf("%w: nil policy pointer", ErrInvalidConfig)
		}
		c.Policy = *p
	case *Turns:
		if p == nil {
			return fmt.Errorf("%w: nil policy pointer", ErrInvalidConfig)
		}
		c.Policy = *p
	}
	return c.Policy.check(c)
}

// schedule is the policy a core runs, resolved from Config.Policy once.
type schedule struct {
	fixed int   // Fixed.Frames, or 0
	turns Turns // Turns, or Ahead 0
}

// scheduleOf resolves a normalized policy (see normalizePolicy).
func scheduleOf(p Policy) schedule {
	switch p := p.(type) {
	case Fixed:
		return schedule{fixed: p.Frames}
	case Turns:
		return schedule{turns: p}
	}
	return schedule{}
}

// adaptive reports whether the lead is the core's to adapt.
func (s schedule) adaptive() bool { return s.fixed == 0 && s.turns.Ahead == 0 }
