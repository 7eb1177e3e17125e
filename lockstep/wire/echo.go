package wire

import "encoding/binary"

// Echo returns a received datagram's number to its sender with how long the
// receiver held it, so the sender can measure the round-trip time.
type Echo struct {
	Number uint16
	Hold   Ticks
}

// length returns the bytes appendTo writes.
func (e *Echo) length() int { return 2 + uvarintLen(uint64(e.Hold)) }

// appendTo appends the echo block: the number (2 bytes), then the hold time.
func (e *Echo) appendTo(b []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, e.Number)
	return binary.AppendUvarint(b, uint64(e.Hold))
}

// parse decodes an echo block into e.
func (e *Echo) parse(r *reader) error {
	e.Number = r.uint16()
	e.Hold = Ticks(r.uvarint())
	if r.err != nil {
		return r.fail("echo")
	}
	return nil
}
