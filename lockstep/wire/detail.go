package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// Limits of the detail block, so that a decoder's work is bounded.
const (
	MaxDetailFrames = 32 // frames in one Detail
	MaxSections     = 64 // section hashes in one Detail
)

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

// check reports why d cannot be encoded, if it cannot.
func (d *Detail) check() error {
	if len(d.Frames) == 0 || len(d.Frames) > MaxDetailFrames || len(d.Sections) > MaxSections || d.Start < 0 || d.Start >= maxFrame {
		return fmt.Errorf("wire: detail of %d frames and %d sections from frame %d", len(d.Frames), len(d.Sections), d.Start)
	}
	return nil
}

// length returns the bytes appendTo writes.
func (d *Detail) length() int {
	return uvarintLen(frameCode(d.Start)) + uvarintLen(uint64(len(d.Frames))) + 16*len(d.Frames) +
		uvarintLen(uint64(len(d.Sections))) + 8*len(d.Sections)
}

// appendTo appends the detail block: the first frame, the count of frames,
// each frame's state and input hashes (8 bytes each), the count of section
// hashes and each of them (8 bytes).
func (d *Detail) appendTo(b []byte) []byte {
	b = binary.AppendUvarint(b, frameCode(d.Start))
	b = binary.AppendUvarint(b, uint64(len(d.Frames)))
	for _, f := range d.Frames {
		b = binary.LittleEndian.AppendUint64(b, f.State)
		b = binary.LittleEndian.AppendUint64(b, f.Input)
	}
	b = binary.AppendUvarint(b, uint64(len(d.Sections)))
	for _, h := range d.Sections {
		b = binary.LittleEndian.AppendUint64(b, h)
	}
	return b
}

// parse decodes a detail block into d, appending to d.Frames and
// d.Sections.
func (d *Detail) parse(r *reader) error {
	d.Start = r.frame()
	n := r.uvarint()
	if r.err != nil {
		return r.fail("detail")
	}
	if n == 0 || n > MaxDetailFrames || d.Start < 0 {
		return fmt.Errorf("%w: detail of %d frames from frame %d", ErrMalformed, n, d.Start)
	}
	for range n {
		d.Frames = append(d.Frames, FrameHashes{State: r.uint64(), Input: r.uint64()})
	}
	m := r.uvarint()
	if r.err == nil && m > MaxSections {
		return fmt.Errorf("%w: detail with %d sections", ErrMalformed, m)
	}
	for range m {
		d.Sections = append(d.Sections, r.uint64())
	}
	if r.err != nil {
		return r.fail("detail hashes")
	}
	return nil
}
