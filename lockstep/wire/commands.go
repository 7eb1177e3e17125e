package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// Command is one command as carried in a Packet: its frame and payload. Its
// sequence number follows from its position (see Packet.Next).
type Command struct {
	Frame   bucket.Frame
	Payload []byte
}

// appendCommands appends a command list: its count, then each command's
// frame (the first as a zigzag delta from base, the others as deltas from the
// previous command), payload length and payload.
func appendCommands(b []byte, base bucket.Frame, cmds []Command) []byte {
	b = binary.AppendUvarint(b, uint64(len(cmds)))
	prev := base
	for i, c := range cmds {
		if i == 0 {
			b = binary.AppendUvarint(b, zigzag(int64(c.Frame-prev)))
		} else {
			b = binary.AppendUvarint(b, uint64(c.Frame-prev))
		}
		prev = c.Frame
		b = binary.AppendUvarint(b, uint64(len(c.Payload)))
		b = append(b, c.Payload...)
	}
	return b
}

// commandsLength returns the bytes appendCommands writes.
func commandsLength(base bucket.Frame, cmds []Command) int {
	n := uvarintLen(uint64(len(cmds)))
	prev := base
	for i, c := range cmds {
		if i == 0 {
			n += uvarintLen(zigzag(int64(c.Frame - prev)))
		} else {
			n += uvarintLen(uint64(c.Frame - prev))
		}
		prev = c.Frame
		n += uvarintLen(uint64(len(c.Payload))) + len(c.Payload)
	}
	return n
}

// CommandLength returns the bytes one command adds to a Packet after the
// first: its frame delta from the previous command, length and payload.
func CommandLength(prevFrame bucket.Frame, c Command) int {
	return uvarintLen(uint64(c.Frame-prevFrame)) + uvarintLen(uint64(len(c.Payload))) + len(c.Payload)
}

// commands decodes a count and that many commands whose first frame is
// relative to base, appending them to dst.
func (r *reader) commands(base bucket.Frame, dst []Command, what string) ([]Command, error) {
	n := r.uvarint()
	if r.err != nil {
		return dst, r.fail(what + " count")
	}
	// Each command takes at least two bytes, so a count larger than the
	// remaining bytes allow is a lie; checking first bounds the work.
	if n == 0 || n > uint64(len(r.b)-r.off)/2 || n > 1<<15 {
		return dst, fmt.Errorf("%w: %s count %d with %d bytes left", ErrMalformed, what, n, len(r.b)-r.off)
	}
	prev := base
	for i := range int(n) {
		var frame bucket.Frame
		if i == 0 {
			frame = prev + bucket.Frame(unzigzag(r.uvarint()))
		} else {
			d := r.uvarint()
			if d > maxFrame {
				r.setErr("frame delta too large")
			}
			frame = prev + bucket.Frame(d)
		}
		size := r.uvarint()
		payload := r.bytes(size)
		if r.err != nil {
			return dst, r.fail(fmt.Sprintf("%s %d", what, i))
		}
		if frame < 0 || frame >= maxFrame {
			return dst, fmt.Errorf("%w: %s %d frame %d out of range", ErrMalformed, what, i, frame)
		}
		prev = frame
		dst = append(dst, Command{Frame: frame, Payload: payload})
	}
	return dst, nil
}
