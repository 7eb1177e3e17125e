package cmdstream

import "github.com/phalanx-net/phalanx/bucket"

// The vocabulary games see, named here as the package's own so that the
// structures read as they always did.
type (
	Frame   = bucket.Frame
	Slot    = bucket.Slot
	Command = bucket.Command
)

// NoFrame and MaxMembers are bucket's.
const (
	NoFrame    = bucket.NoFrame
	MaxMembers = bucket.MaxMembers
)
