package wire

import "github.com/phalanx-net/phalanx/bucket"

// Echo returns a received datagram's number to its sender with how long the
// receiver held it, so the sender can measure the round-trip time.
type Echo struct {
	Number uint16
	Hold   Ticks
}

// HashReport carries the state hash after an executed frame and the hash of
// the bucket stepped on it.
type HashReport struct {
	Frame bucket.Frame
	State uint64
	Input uint64
}

// Unknown is the value of MemberView.Last while the sender does not yet know
// every live member's report.
const Unknown bucket.Frame = -2

// Limits of the optional blocks, so that a decoder's work is bounded.
const (
	MaxDetailFrames = 32 // frames in one Detail
	MaxSections     = 64 // section hashes in one Detail
)

// MemberView is the sender's view of one member it suspects or has dropped.
type MemberView struct {
	Held bucket.Frame // the seal of that member's stream the sender held when it stopped listening to it: its report
	Seal bucket.Frame // the seal of that stream the sender holds now (relayed commands raise it)
	Next uint32       // the length of that stream's prefix the sender holds now
	Last bucket.Frame // the last frame of that member the sender's view agrees on, or Unknown
	// Reason says why the sender stopped listening to that member, as a
	// code of lockstep's (0: not said). It is written, one byte per view
	// after Last, only when some view of the block has one (flag bit 7).
	Reason uint8
}

// Membership is the sender's view of the session's failures: which members
// it suspects, has dropped or saw leave, and what it holds of each.
type Membership struct {
	Suspected uint64       // bit i set: member i suspected, dropped or gone
	Views     []MemberView // one per set bit, in increasing slot order
}

// hasReasons reports whether some view has a reason: the block then carries
// one byte of reason per view.
func (m *Membership) hasReasons() bool {
	for _, v := range m.Views {
		if v.Reason != 0 {
			return true
		}
	}
	return false
}

// Relay forwards commands of another member (one being dropped) that the
// receiver lacks: sequence numbers First .. First+len(Commands)-1, with that
// member's seal Seal, which holds once the receiver has every command below
// First+len(Commands). A Relay without commands forwards the seal alone.
//
// With HasStatement the relay carries the relayed member's own signed
// Statement, which the forwarder holds and which covers (a prefix of) what
// it forwards: the receiver checks the member's signature over the
// commands it then holds.
type Relay struct {
	Member   bucket.Slot
	First    uint32
	Seal     bucket.Frame
	Commands []Command

	HasStatement bool
	Statement    Statement
}

// FrameHashes are the hashes of one executed frame.
type FrameHashes struct {
	State uint64
	Input uint64
}

// Detail carries the sender's hashes of consecutive executed frames from
// Start on, and the section hashes of frame Start, to locate a desync.
type Detail struct {
	Start    bucket.Frame
	Frames   []FrameHashes
	Sections []uint64
}
