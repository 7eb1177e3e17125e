package reckon

import (
	"slices"
	"time"
)

// Update is one authoritative state of one entity as its owner sends it.
//
// Seq counts the owner's updates of the entity from 0 and wraps from 0xFFFF
// to 0; a receiver keeps only updates newer than the newest it has (see
// [Receiver]).
type Update[V Vector[V]] struct {
	Entity uint64
	Seq    uint16
	State  State[V]
}

// Defaults of [OwnerConfig].
const (
	DefaultHeartbeat   = time.Second
	DefaultMinInterval = 50 * time.Millisecond
)

// DefaultStagger returns the send offsets after a change that an
// [OwnerConfig] without Stagger uses: 0, +100 ms and +300 ms (the RakNet
// article's staggered unreliable sends, docs/references.md).
func DefaultStagger() []time.Duration {
	return []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond}
}

// OwnerConfig sets when an [Owner] sends.
type OwnerConfig struct {
	// Entity is written into every update.
	Entity uint64
	// Predictor is the receivers' predictor; the owner runs it on itself.
	// Under ConstantVelocity updates carry no acceleration.
	Predictor Predictor
	// Threshold is the distance between the true position and the
	// receivers' prediction beyond which the motion counts as changed and
	// is sent. Zero treats any deviation as a change.
	Threshold float64
	// Heartbeat is the longest silence: an update is sent when this long
	// has passed since the last one, changed or not. 0 means
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// Stagger lists when to send after a change, as offsets from the
	// moment it is seen, in increasing order; nil means DefaultStagger().
	// A change seen while the repeats of the last one are still due starts
	// the list again.
	Stagger []time.Duration
	// MinInterval is the shortest gap between two updates; a send that
	// falls due sooner waits. 0 means DefaultMinInterval.
	MinInterval time.Duration
}

// An Owner decides when the owner of an entity sends its state ("predict
// yourself"): it runs the receivers' predictor on the last state it sent and
// compares the prediction with the entity's true state. It is not safe for
// concurrent use.
//
// Sending follows the staggered unreliable datagrams of the RakNet seed: a
// change is sent at once and again at each later Stagger offset, with the
// state current at that moment; then nothing, until the next change or the
// heartbeat. Every update sent becomes the owner's new reference, so a
// repeat also refines the receivers' prediction.
type Owner[V Vector[V]] struct {
	cfg      OwnerConfig
	sent     bool          // an update has been sent
	ref      State[V]      // the last state sent, exactly as receivers decode it
	last     time.Duration // when it was sent
	seq      uint16        // the next sequence number
	changeAt time.Duration // when the current change was seen
	next     int           // index in Stagger of the next repeat due; len(Stagger) when none
}

// NewOwner returns an Owner that sends its first update at its first
// Observe. It panics if Stagger has a negative or non-increasing offset, or
// if Threshold, Heartbeat or MinInterval is negative.
func NewOwner[V Vector[V]](cfg OwnerConfig) *Owner[V] {
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.MinInterval == 0 {
		cfg.MinInterval = DefaultMinInterval
	}
	if cfg.Stagger == nil {
		cfg.Stagger = DefaultStagger()
	} else {
		cfg.Stagger = slices.Clone(cfg.Stagger)
	}
	if cfg.Threshold < 0 || cfg.Heartbeat < 0 || cfg.MinInterval < 0 {
		panic("reckon: negative Threshold, Heartbeat or MinInterval")
	}
	if cfg.Predictor > ConstantAcceleration {
		panic("reckon: unknown predictor " + cfg.Predictor.String())
	}
	for i, d := range cfg.Stagger {
		if d < 0 || (i > 0 && d <= cfg.Stagger[i-1]) {
			panic("reckon: Stagger offsets must be non-negative and increasing")
		}
	}
	return &Owner[V]{cfg: cfg, next: len(cfg.Stagger)}
}

// Observe gives the owner its entity's true state, at time truth.At, which
// must not go backwards between calls. It returns the update to send now, if
// one is due. Call it every frame: sends due between calls go out at the
// next call.
func (o *Owner[V]) Observe(truth State[V]) (Update[V], bool) {
	now := truth.At
	if !o.sent {
		o.change(now)
	} else if o.next != 0 && dist(o.ref.Predict(o.cfg.Predictor, now).Pos, truth.Pos) > o.cfg.Threshold {
		// A new change, unless the last one still waits for its first send.
		o.change(now)
	}
	due := o.next < len(o.cfg.Stagger) && now >= o.changeAt+o.cfg.Stagger[o.next]
	if o.sent && now >= o.last+o.cfg.Heartbeat {
		due = true
	}
	if !due || (o.sent && now < o.last+o.cfg.MinInterval) {
		return Update[V]{}, false
	}
	for o.next < len(o.cfg.Stagger) && now >= o.changeAt+o.cfg.Stagger[o.next] {
		o.next++
	}
	u := Update[V]{Entity: o.cfg.Entity, Seq: o.seq, State: quantize(truth, o.cfg.Predictor)}
	o.seq++
	o.sent, o.ref, o.last = true, u.State, now
	return u, true
}

// Now returns an update of the entity's true state outside the schedule,
// for one receiver that lacks the latest state (an interest Filter's
// catch-up). It takes the next sequence number, so the receiver keeps it;
// the schedule, and the reference the owner predicts from for everyone
// else, are unchanged.
func (o *Owner[V]) Now(truth State[V]) Update[V] {
	u := Update[V]{Entity: o.cfg.Entity, Seq: o.seq, State: quantize(truth, o.cfg.Predictor)}
	o.seq++
	return u
}

func (o *Owner[V]) change(now time.Duration) {
	o.changeAt, o.next = now, 0
}

// Predicted returns what the receivers predict for time at from the last
// update sent, and false before the first.
func (o *Owner[V]) Predicted(at time.Duration) (State[V], bool) {
	if !o.sent {
		return State[V]{}, false
	}
	return o.ref.Predict(o.cfg.Predictor, at), true
}

// NextSend returns when the next scheduled send (a staggered repeat or the
// heartbeat) falls due, and false before the first update. A change may
// bring a send sooner.
func (o *Owner[V]) NextSend() (time.Duration, bool) {
	if !o.sent {
		return 0, false
	}
	at := o.last + o.cfg.Heartbeat
	if o.next < len(o.cfg.Stagger) {
		at = min(at, o.changeAt+o.cfg.Stagger[o.next])
	}
	return max(at, o.last+o.cfg.MinInterval), true
}
