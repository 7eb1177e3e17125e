package lockstep

import (
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// EventType says what an Event reports.
type EventType uint8

// Event types.
const (
	// EventViolation: a member broke a rule of the protocol (a command under
	// its own seal, frames decreasing, a conflicting resend, a frame outside
	// the window). Detail names the rule.
	EventViolation EventType = iota + 1
	// EventDrop: a member was dropped; LastFrame is the last frame of its
	// commands that counts.
	EventDrop
	// EventLeave: a member left at an announced frame; LastFrame as for
	// EventDrop.
	EventLeave
	// EventDesync: members' hashes of an executed frame differ; Frame is the
	// first divergent frame, Section the first divergent section when known.
	EventDesync
	// EventStop: this member stopped (Member is its own slot): the others
	// dropped it (Reason ReasonDropped) or it ended on the minority side of
	// a split (ReasonMinority). It steps no further frame; Frame is the
	// first frame it will not step. Core.Err says why.
	EventStop
	// EventRejoin: a member dropped before counts again from Frame on
	// (Member is our own slot on the member that rejoined).
	EventRejoin
	// EventJoin: a member took a slot open since the start and counts from
	// Frame on (Member is our own slot on the member that joined).
	EventJoin
)

// Reason says why a member was dropped or stopped.
type Reason string

// Reasons carried by EventDrop, EventLeave and EventStop.
const (
	ReasonSilent    Reason = "silent"    // nothing heard from it for the drop timeout, or it stopped listening to us
	ReasonStalled   Reason = "stalled"   // it kept talking but its seal did not advance for the drop timeout
	ReasonLeft      Reason = "left"      // it announced its leave
	ReasonViolation Reason = "violation" // it broke a rule of the protocol
	ReasonMinority  Reason = "minority"  // EventStop: this member ended on the minority side of a split
	ReasonDropped   Reason = "dropped"   // EventStop: the others dropped this member
)

var eventTypeNames = [...]string{
	EventViolation: "violation",
	EventDrop:      "drop",
	EventLeave:     "leave",
	EventDesync:    "desync",
	EventStop:      "stop",
	EventRejoin:    "rejoin",
	EventJoin:      "join",
}

// String returns the event type's name as used in JSON output: "violation",
// "drop", "leave", "desync" or "stop".
func (t EventType) String() string {
	if int(t) < len(eventTypeNames) && eventTypeNames[t] != "" {
		return eventTypeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is something the core reports to its caller in Ready.
type Event struct {
	Type      EventType
	Frame     bucket.Frame // the frame at which it takes effect or was found
	Member    bucket.Slot  // the member it concerns
	LastFrame bucket.Frame // drops and leaves: the agreed last frame
	Section   string       // desyncs: the first divergent section, when known
	Reason    Reason       // drops, leaves and stops: why
	Detail    string
	// Desyncs: the member whose hashes were compared with ours to find
	// the divergence (With), and the section hashes of the first divergent
	// frame, ours and that member's, when the simulation hashes sections
	// (see SectionHasher) and they were exchanged; nil otherwise.
	With         bucket.Slot
	Ours, Theirs []Section
}

func (e Event) String() string {
	s := fmt.Sprintf("%s of member %d at frame %d", e.Type, e.Member, e.Frame)
	if e.Type == EventDrop || e.Type == EventLeave {
		s += fmt.Sprintf(" (last frame %d)", e.LastFrame)
	}
	if e.Reason != "" {
		s += fmt.Sprintf(" [%s]", e.Reason)
	}
	if e.Section != "" {
		s += fmt.Sprintf(" in section %q", e.Section)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}
