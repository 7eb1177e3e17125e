package replay

import (
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// ChangeKind says what a membership change is.
type ChangeKind uint8

// Membership change kinds.
const (
	// ChangeDrop: the member was dropped (silent past the timeout, or
	// dropped for a protocol violation).
	ChangeDrop ChangeKind = 1
	// ChangeLeave: the member left at an announced frame.
	ChangeLeave ChangeKind = 2
	// ChangeRejoin: a member dropped before counts again from Frame on
	// (format version 3). Its commands from Frame on are a new stream:
	// their sequence numbers, and the statements recorded after this
	// change, count from 0 again.
	ChangeRejoin ChangeKind = 3
	// ChangeJoin: a member joined a slot open since the start and counts
	// from Frame on (format version 3); its commands as for ChangeRejoin.
	ChangeJoin ChangeKind = 4
	// ChangeSpectator: a spectator was admitted (format version 4): it
	// watches the session from Frame on, served by Member (the recording
	// member, or the member its tree of spectators hangs from). Spectators
	// send no commands and count for no seal, so the record changes
	// nothing a verifier re-runs; Detail names the spectator, LastFrame is
	// -1.
	ChangeSpectator ChangeKind = 5
)

// admission reports whether k admits a member (format version 3).
func (k ChangeKind) admission() bool { return k == ChangeRejoin || k == ChangeJoin }

// atFrame reports whether a change of kind k must come at or after the
// next frame to record: admissions and spectators take effect at a frame
// not stepped yet.
func (k ChangeKind) atFrame() bool { return k.admission() || k == ChangeSpectator }

// known reports whether a file of format version v may hold changes of
// kind k.
func (k ChangeKind) known(v int) bool {
	switch k {
	case ChangeDrop, ChangeLeave:
		return true
	case ChangeRejoin, ChangeJoin:
		return v >= 3
	case ChangeSpectator:
		return v >= 4
	}
	return false
}

// String returns "drop", "leave", "rejoin", "join", "spectator" or
// "change N".
func (k ChangeKind) String() string {
	switch k {
	case ChangeDrop:
		return "drop"
	case ChangeLeave:
		return "leave"
	case ChangeRejoin:
		return "rejoin"
	case ChangeJoin:
		return "join"
	case ChangeSpectator:
		return "spectator"
	}
	return fmt.Sprintf("change %d", uint8(k))
}

// Change is a membership change: a member dropped, left, rejoined or
// joined late (LastFrame -1 for the last two).
type Change struct {
	Kind      ChangeKind
	Frame     bucket.Frame // the frame at which it took effect
	Member    bucket.Slot
	LastFrame bucket.Frame // the last frame of the member's commands that counts (-1: none)
	Detail    string       // why, for people (up to 1024 bytes)
}

// ChangeOf returns the membership change an engine event reports, and
// whether it reports one (drops and leaves do).
func ChangeOf(e lockstep.Event) (Change, bool) {
	c := Change{Frame: e.Frame, Member: e.Member, LastFrame: e.LastFrame, Detail: e.Detail}
	if e.Reason != "" && e.Type == lockstep.EventDrop {
		c.Detail = string(e.Reason) + ": " + e.Detail // the reason, in the format's one text field
	}
	switch e.Type {
	case lockstep.EventDrop:
		c.Kind = ChangeDrop
	case lockstep.EventLeave:
		c.Kind = ChangeLeave
	case lockstep.EventRejoin:
		c.Kind, c.LastFrame = ChangeRejoin, -1
	case lockstep.EventJoin:
		c.Kind, c.LastFrame = ChangeJoin, -1
	default:
		return Change{}, false
	}
	if len(c.Detail) > maxDetail {
		c.Detail = c.Detail[:maxDetail]
	}
	return c, true
}

func (c Change) String() string {
	if c.Kind == ChangeSpectator {
		s := fmt.Sprintf("spectator served by member %d from frame %d", c.Member, c.Frame)
		if c.Detail != "" {
			s += ": " + c.Detail
		}
		return s
	}
	s := fmt.Sprintf("%s of member %d at frame %d", c.Kind, c.Member, c.Frame)
	if !c.Kind.admission() {
		s += fmt.Sprintf(" (last frame %d)", c.LastFrame)
	}
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}
