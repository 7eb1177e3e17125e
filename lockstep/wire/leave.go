package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// The leave block is one frame, Packet.LeaveFrame: the sender's last.

// checkLeave reports why a leave frame cannot be encoded, if it cannot.
func checkLeave(f bucket.Frame) error {
	if f < -1 || f >= maxFrame {
		return fmt.Errorf("wire: leave frame %d out of range", f)
	}
	return nil
}

// leaveLength returns the bytes appendLeave writes.
func leaveLength(f bucket.Frame) int { return uvarintLen(frameCode(f)) }

// appendLeave appends the leave block.
func appendLeave(b []byte, f bucket.Frame) []byte { return binary.AppendUvarint(b, frameCode(f)) }

// parseLeave decodes a leave block.
func parseLeave(r *reader) (bucket.Frame, error) {
	f := r.frame()
	if r.err != nil {
		return f, r.fail("leave frame")
	}
	return f, nil
}
