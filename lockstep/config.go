package lockstep

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Errors returned by the core. Callers check them with errors.Is.
var (
	ErrCommandTooLarge = errors.New("lockstep: command too large")
	ErrClosed          = errors.New("lockstep: core closed")
	ErrInvalidConfig   = errors.New("lockstep: invalid configuration")
	// ErrFrameFull: the frame a command would be stamped with already holds
	// Config.MaxFrameCommands of this member's commands, or the command
	// would take them past Config.MaxFrameBytes. Submit it again later.
	ErrFrameFull = errors.New("lockstep: frame full")
	// ErrStopped: the member stopped because the others dropped it or it
	// ended on the minority side of a split (see Core.Err).
	ErrStopped = errors.New("lockstep: stopped")
	// ErrJoining: a core made with Config.Join is not admitted yet.
	ErrJoining = errors.New("lockstep: not admitted yet")
)

// DefaultStartLead is the adaptive lead before the first reports of
// lateness (Config.StartLead): long enough for most networks, so the first
// seconds do not stall while the reports come in; they replace it at once.
const DefaultStartLead = 500 * time.Millisecond

// Defaults for the zero fields of Config.
const (
	DefaultFrame          = 50 * time.Millisecond
	DefaultInitialDelay   = 4
	DefaultMaxDelay       = 60
	DefaultMaxCommandSize = 1024
	DefaultWindow         = 1200 // frames: one minute at 20 Hz
	DefaultMaxInterval    = 250 * time.Millisecond
	DefaultMargin         = time.Millisecond
	DefaultDropTimeout    = 5 * time.Second
	DefaultHashInterval   = 10
	DefaultHashHistory    = 2048
	DefaultAdmitMargin    = 40 // frames: two seconds at 20 Hz
	DefaultSignInterval   = 100
	// Per member and frame: at most this many commands, of at most this
	// many payload bytes in all. Within the default window of 1200 frames a
	// member therefore holds at most 1200 × 8 KiB ≈ 9.4 MiB of payload of
	// any other member, and a member that sends more is dropped for a
	// violation at the first frame it overfills.
	DefaultMaxFrameCommands = 64
	DefaultMaxFrameBytes    = 8 << 10
)

// Config configures a Core. The zero value of each field selects its
// default; Members, Self and Session must be set.
type Config struct {
	Members int         // number of members, slots 0..Members-1; 1..bucket.MaxMembers
	Self    bucket.Slot // this member's slot
	Session uint16      // session tag carried in every datagram; datagrams with another tag are refused

	Start time.Duration // the caller's time at which frame 0 begins
	Frame time.Duration // frame length (default 50 ms: 20 Hz)

	InitialDelay int // frames ahead to stamp commands before anything is measured (default 4, within the delay bounds); every member must use the same value
	MinDelay     int // lower bound of the adaptive delay in frames (default 1)
	MaxDelay     int // upper bound of the adaptive delay and of turns, in frames (default 60)
	// Policy chooses how far ahead commands are stamped: Adaptive (nil
	// selects it), Fixed or Turns.
	Policy Policy
	Margin time.Duration // added to the measured lateness when sizing the lead: timer slack, processing (default 1 ms)
	// StartLead is the adaptive lead before the first reports of lateness
	// come in (default DefaultStartLead; never below the initial delay's
	// lead, InitialDelay-1 frames; negative: that lead).
	StartLead time.Duration

	MaxCommandSize int // largest command payload accepted by Submit and on receipt (default 1 KiB)
	// MaxFrameCommands and MaxFrameBytes bound one member's commands on
	// one frame: their number (default 64) and their payload bytes in all
	// (default 8 KiB, at least MaxCommandSize). Submit refuses a command
	// past them with ErrFrameFull; a member whose received commands exceed
	// them is dropped for a violation. Every member must use the same
	// values.
	MaxFrameCommands int
	MaxFrameBytes    int
	MaxDatagramSize  int // largest datagram produced (default and maximum wire.MaxDatagramSize)
	Window           int // how many frames past its executed frame a member accepts commands and seals (default 1200, or more to exceed the drop timeout plus MaxDelay)

	MinInterval time.Duration // shortest gap between repeats to one member (default a frame: the seal changes once a frame, and each change goes out twice)
	// SealRepeat is how long after a datagram carrying a new seal or new
	// commands it goes out again to that member, unless acknowledged by
	// then or sent again meanwhile (default a tenth of a frame; negative
	// never): one lost datagram then costs SealRepeat, not a repeat
	// interval, and the adaptive lead covers it. The copy goes only to a
	// member whose path has shown loss within the last five minutes (a gap
	// in its datagrams' numbers, or its own copies; none before the first),
	// or to every member once we saw a gap on any path within them, and never under a byte budget too tight for a datagram a frame to
	// every member.
	SealRepeat  time.Duration
	MaxInterval time.Duration // longest silence towards a member: a keep-alive is sent after it (default 250 ms)
	// Budget caps the bytes per second this member sends, counting
	// Overhead per datagram; 0 means no cap.
	Budget int
	// Overhead is the per-datagram header cost counted against Budget and
	// in Stats (default wire.Overhead: IP, UDP and QUIC headers).
	Overhead int

	// DropTimeout is how long a member may stay silent before the others
	// drop it (default 5 s).
	DropTimeout time.Duration
	// HashInterval is how often, in frames, members exchange state hashes
	// to detect desyncs (default every 10 frames).
	HashInterval int
	// HashHistory is how many frames of hashes a member keeps to locate the
	// first divergent frame of a desync found late (default 2048).
	HashHistory int

	// Signer, when set, signs this member's statements about its own
	// command stream, and Verifier checks the other members' (see
	// sign.go): a forwarder that alters or invents a dropped member's
	// commands is then dropped for a violation. Both nil: nothing is
	// signed or checked. Every member of a session should sign when any
	// verifies, or relays of its commands are accepted unproven.
	Signer   Signer
	Verifier Verifier
	// SignInterval is how many frames our seal may advance before we sign
	// a new statement although our stream did not grow (default 10); a
	// grown stream is signed at the next send.
	SignInterval int

	// Join makes a core that joins a running session: a member dropped
	// before that comes back with the same slot and key (a rejoin), or one
	// that takes a slot open since the start (a late join). It asks the
	// members to admit it, steps nothing and refuses Submit (ErrJoining)
	// until they agreed on the frame it counts from (AdmittedAt); the
	// caller catches its simulation up to that frame by other means.
	Join bool
	// Open is the set of slots (bit i: slot i) that no member holds when
	// the session begins: a joiner may take one later. Every member but the
	// joiners must use the same set.
	Open uint64
	// AdmitMargin is how many frames past its current frame a member
	// proposes to admit a joiner at (default 40): the time the members
	// have to agree before any of them would have to wait for it.
	AdmitMargin int

	Logger *slog.Logger // optional; nil discards
}

func (c *Config) applyDefaults() error {
	if c.Members < 1 || c.Members > bucket.MaxMembers {
		return fmt.Errorf("%w: %d members, want 1..%d", ErrInvalidConfig, c.Members, bucket.MaxMembers)
	}
	if int(c.Self) >= c.Members {
		return fmt.Errorf("%w: self slot %d with %d members", ErrInvalidConfig, c.Self, c.Members)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	defDur(&c.Frame, DefaultFrame)
	def(&c.MinDelay, 1)
	def(&c.MaxDelay, DefaultMaxDelay)
	def(&c.InitialDelay, max(c.MinDelay, min(DefaultInitialDelay, c.MaxDelay)))
	def(&c.MaxCommandSize, DefaultMaxCommandSize)
	def(&c.MaxFrameCommands, DefaultMaxFrameCommands)
	def(&c.MaxFrameBytes, max(DefaultMaxFrameBytes, c.MaxCommandSize))
	def(&c.MaxDatagramSize, wire.MaxDatagramSize)
	defDur(&c.DropTimeout, DefaultDropTimeout)
	if c.Frame > 0 {
		// The window must outlast a stall on a silent member (see below).
		def(&c.Window, max(DefaultWindow, int(c.DropTimeout/c.Frame)+c.MaxDelay+1))
	}
	defDur(&c.MinInterval, c.Frame)
	defDur(&c.SealRepeat, c.Frame/10)
	defDur(&c.MaxInterval, DefaultMaxInterval)
	defDur(&c.Margin, DefaultMargin)
	defDur(&c.StartLead, DefaultStartLead)
	def(&c.Overhead, wire.Overhead)
	def(&c.HashInterval, DefaultHashInterval)
	def(&c.HashHistory, DefaultHashHistory)
	def(&c.SignInterval, DefaultSignInterval)
	def(&c.AdmitMargin, DefaultAdmitMargin)
	switch {
	case c.Frame < time.Millisecond:
		return fmt.Errorf("%w: frame %v shorter than 1ms", ErrInvalidConfig, c.Frame)
	case c.MinDelay < 1 || c.MaxDelay < c.MinDelay:
		return fmt.Errorf("%w: delay bounds [%d, %d]", ErrInvalidConfig, c.MinDelay, c.MaxDelay)
	case c.InitialDelay < 1 || c.InitialDelay > c.MaxDelay:
		return fmt.Errorf("%w: initial delay %d frames, want 1..%d (MaxDelay)", ErrInvalidConfig, c.InitialDelay, c.MaxDelay)
	case c.MaxDatagramSize < 200 || c.MaxDatagramSize > wire.MaxDatagramSize:
		return fmt.Errorf("%w: datagram size %d, want 200..%d", ErrInvalidConfig, c.MaxDatagramSize, wire.MaxDatagramSize)
	case c.MaxCommandSize < 1 || c.MaxCommandSize > c.MaxDatagramSize-100:
		return fmt.Errorf("%w: command size %d, want 1..%d (datagram size less 100 bytes of headers)", ErrInvalidConfig, c.MaxCommandSize, c.MaxDatagramSize-100)
	case c.MaxFrameCommands < 1 || c.MaxFrameBytes < c.MaxCommandSize:
		return fmt.Errorf("%w: %d commands, %d bytes per frame (want at least 1 command and MaxCommandSize %d bytes)", ErrInvalidConfig, c.MaxFrameCommands, c.MaxFrameBytes, c.MaxCommandSize)
	case c.Window < 2*c.MaxDelay:
		return fmt.Errorf("%w: window %d frames smaller than twice the maximum delay %d", ErrInvalidConfig, c.Window, c.MaxDelay)
	case c.MinInterval <= 0 || c.MaxInterval < c.MinInterval:
		return fmt.Errorf("%w: send intervals [%v, %v]", ErrInvalidConfig, c.MinInterval, c.MaxInterval)
	case c.DropTimeout < 10*c.Frame:
		return fmt.Errorf("%w: drop timeout %v shorter than ten frames", ErrInvalidConfig, c.DropTimeout)
	case c.Window <= int(c.DropTimeout/c.Frame)+c.MaxDelay:
		// Members stalled on a silent one keep sealing ahead with their
		// clocks; until the timeout drops it, those seals must stay within
		// each other's windows.
		return fmt.Errorf("%w: window %d frames not larger than the drop timeout (%d frames) plus the maximum delay %d", ErrInvalidConfig, c.Window, int(c.DropTimeout/c.Frame), c.MaxDelay)
	case c.HashInterval < 1 || c.HashHistory < 4*max(c.HashInterval, detailFrames):
		return fmt.Errorf("%w: hash interval %d with history %d (want history at least 4 intervals and 64 frames)", ErrInvalidConfig, c.HashInterval, c.HashHistory)
	case c.SignInterval < 1:
		return fmt.Errorf("%w: sign interval %d frames", ErrInvalidConfig, c.SignInterval)
	case c.Budget < 0 || c.Overhead < 0:
		return fmt.Errorf("%w: budget %d, overhead %d", ErrInvalidConfig, c.Budget, c.Overhead)
	}
	if err := c.normalizePolicy(); err != nil {
		return err
	}
	if c.Budget > 0 && c.Budget < 2*(c.MaxDatagramSize+c.Overhead) {
		return fmt.Errorf("%w: budget %d B/s cannot carry two full datagrams a second", ErrInvalidConfig, c.Budget)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
