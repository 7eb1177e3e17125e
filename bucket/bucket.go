package bucket

import "math"

// Frame numbers simulation steps, from 0. Negative values appear only as
// "before the first frame" (for example the seal of a stream that has promised
// nothing yet is -1).
type Frame int64

// Slot is a member's index in the session's sorted member list.
type Slot uint8

// MaxMembers is the largest number of members a session can have.
const MaxMembers = 64

// Command is one opaque command of one member. Payload is owned by whoever
// holds the Command; the engine copies payloads it keeps.
type Command struct {
	Slot    Slot
	Seq     uint32 // the member's sequence number: 0 for its first command
	Frame   Frame  // the frame the command executes on
	Payload []byte
}

// NoFrame is the seal of a stream that will never hold another command: a
// member that left or was dropped after its last frame.
const NoFrame Frame = math.MaxInt64
