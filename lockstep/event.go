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
)

// String returns the event type's name as used in JSON output: "violation",
// "drop", "leave" or "desync".
func (t EventType) String() string {
	switch t {
	case EventViolation:
		return "violation"
	case EventDrop:
		return "drop"
	case EventLeave:
		return "leave"
	case EventDesync:
		return "desync"
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
	Detail    string
}

func (e Event) String() string {
	s := fmt.Sprintf("%s of member %d at frame %d", e.Type, e.Member, e.Frame)
	if e.Type == EventDrop || e.Type == EventLeave {
		s += fmt.Sprintf(" (last frame %d)", e.LastFrame)
	}
	if e.Section != "" {
		s += fmt.Sprintf(" in section %q", e.Section)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}
