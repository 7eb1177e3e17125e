package reckon

import (
	"cmp"
	"math"
	"time"
)

// Interest filters for entity updates (docs/dead-reckoning.md, §10): an
// owner need not send every update of its entity to every member. Area of
// interest: a member gets every update of an entity within its view plus a
// margin. Perception: beyond the margin the updates it gets thin out with
// the distance, down to one every FarInterval. The filters are for entity
// updates only; lockstep commands go to every member whatever they concern.

// Defaults of an Interest's zero fields, in world units (the rts game's
// tiles) and time.
const (
	DefaultMargin       = 12.0
	DefaultFar          = 64.0
	DefaultNearInterval = 250 * time.Millisecond
	DefaultFarInterval  = 6 * time.Second
)

// Interest sets how an entity's updates to one member thin out with the
// entity's distance from the member's view.
type Interest struct {
	// Margin is the band around the view within which every update is
	// sent: an entity about to come into view is already shown well.
	Margin float64
	// Far is the distance from the view at and beyond which updates are
	// sent only every FarInterval.
	Far float64
	// NearInterval is the shortest gap between two updates just outside
	// the margin; the gap grows linearly with the distance to FarInterval
	// at Far.
	NearInterval time.Duration
	// FarInterval is the gap at Far and beyond: never nothing, so that a
	// member's picture of where far entities are (and so where their
	// owners look) never goes stale for longer.
	FarInterval time.Duration
}

// withDefaults returns in with its zero fields set to the defaults.
func (in Interest) withDefaults() Interest {
	in.Margin = cmp.Or(in.Margin, DefaultMargin)
	in.Far = cmp.Or(in.Far, DefaultFar)
	in.NearInterval = cmp.Or(in.NearInterval, DefaultNearInterval)
	in.FarInterval = cmp.Or(in.FarInterval, DefaultFarInterval)
	return in
}

// Interval returns the shortest gap between two updates of an entity at
// distance d from a member's view: 0 (every update) within the margin,
// then NearInterval growing linearly to FarInterval at Far.
func (in Interest) Interval(d float64) time.Duration {
	in = in.withDefaults()
	switch {
	case d <= in.Margin:
		return 0
	case d >= in.Far || in.Far <= in.Margin:
		return in.FarInterval
	}
	t := (d - in.Margin) / (in.Far - in.Margin)
	return in.NearInterval + time.Duration(t*float64(in.FarInterval-in.NearInterval))
}

// Rect is a member's view: the part of the world it shows.
type Rect struct {
	Min, Max Vec2
}

// Around returns the w × h view centred on c.
func Around(c Vec2, w, h float64) Rect {
	return Rect{Min: Vec2{c.X - w/2, c.Y - h/2}, Max: Vec2{c.X + w/2, c.Y + h/2}}
}

// Distance returns how far p lies outside r: 0 inside. It is
// Outside(p).Len().
func (r Rect) Distance(p Vec2) float64 { return r.Outside(p).Len() }

// Outside returns how far p lies outside r along each axis: 0 inside.
func (r Rect) Outside(p Vec2) Vec2 {
	return Vec2{
		X: math.Max(0, math.Max(r.Min.X-p.X, p.X-r.Max.X)),
		Y: math.Max(0, math.Max(r.Min.Y-p.Y, p.Y-r.Max.Y)),
	}
}

// Contains reports whether p lies in r: whether Distance(p) is 0, without
// the square root (both differences of each axis at most 0, and neither NaN).
func (r Rect) Contains(p Vec2) bool {
	return r.Min.X-p.X <= 0 && p.X-r.Max.X <= 0 && r.Min.Y-p.Y <= 0 && p.Y-r.Max.Y <= 0
}

// A Filter decides which updates of one entity go to one member, as the
// entity's owner sees the member's view. Its zero value is not usable:
// make one with NewFilter. It is not safe for concurrent use.
type Filter struct {
	in      Interest
	sent    bool          // an update has gone to the member
	last    time.Duration // when
	skipped bool          // an update was held back since
	near    bool          // the entity was within the margin at the last call
	// catchUp is when the last catch-up went, and repeat the index in
	// catchUpRepeats of its next repeat (len: none due).
	catchUp time.Duration
	repeat  int
}

// catchUpRepeats are the offsets after a catch-up at which it is sent
// again while the entity stays near and no other update went: the owner's
// stagger (DefaultStagger), so that one lost datagram does not leave the
// member showing a stale entity on its screen.
var catchUpRepeats = [...]time.Duration{100 * time.Millisecond, 300 * time.Millisecond}

// NewFilter returns a filter of the given thresholds (zero fields take the
// defaults). It panics on negative thresholds.
func NewFilter(in Interest) *Filter {
	if in.Margin < 0 || in.Far < 0 || in.NearInterval < 0 || in.FarInterval < 0 {
		panic("reckon: negative Interest threshold")
	}
	return &Filter{in: in.withDefaults(), repeat: len(catchUpRepeats)}
}

// Pass is called once a frame for the member, at time now, with the
// entity's distance d from the member's view and whether the owner has an
// update to send now (has). It reports whether to send the member the
// update (when has), or, when the owner has none, whether to send it the
// entity's current state anyway (a catch-up: the entity just came within
// the margin and the member missed updates while it was farther; repeated
// 100 and 300 ms later while it stays within and nothing else went).
func (f *Filter) Pass(now time.Duration, d float64, has bool) bool {
	near := d <= f.in.Margin
	entered := near && !f.near
	f.near = near
	if !near {
		f.repeat = len(catchUpRepeats)
	}
	switch {
	case has && (!f.sent || now-f.last >= f.in.Interval(d)):
		f.repeat = len(catchUpRepeats) // a regular update supersedes the repeats
	case !has && entered && f.skipped:
		f.catchUp, f.repeat = now, 0
	case !has && near && f.repeat < len(catchUpRepeats) && now >= f.catchUp+catchUpRepeats[f.repeat]:
		for f.repeat < len(catchUpRepeats) && now >= f.catchUp+catchUpRepeats[f.repeat] {
			f.repeat++
		}
	default:
		if has {
			f.skipped = true
		}
		return false
	}
	f.sent, f.last, f.skipped = true, now, false
	return true
}
