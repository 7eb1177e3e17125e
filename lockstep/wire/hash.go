package wire

import (
	"encoding/binary"

	"github.com/phalanx-net/phalanx/bucket"
)

// HashReport carries the state hash after an executed frame and the hash of
// the bucket stepped on it.
type HashReport struct {
	Frame bucket.Frame
	State uint64
	Input uint64
}

// length returns the bytes appendTo writes.
func (h *HashReport) length() int { return uvarintLen(frameCode(h.Frame)) + 16 }

// appendTo appends the hash report block: the frame, then the state and
// input hashes (8 bytes each).
func (h *HashReport) appendTo(b []byte) []byte {
	b = binary.AppendUvarint(b, frameCode(h.Frame))
	b = binary.LittleEndian.AppendUint64(b, h.State)
	return binary.LittleEndian.AppendUint64(b, h.Input)
}

// parse decodes a hash report block into h.
func (h *HashReport) parse(r *reader) error {
	h.Frame = r.frame()
	h.State = r.uint64()
	h.Input = r.uint64()
	if r.err != nil {
		return r.fail("hash report")
	}
	return nil
}
