package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// frameCode encodes a frame >= -1 as an unsigned integer: frame + 1.
func frameCode(f bucket.Frame) uint64 { return uint64(f + 1) }

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// UnwrapTicks16 returns the clock reading whose low 16 bits are v and which
// lies nearest to ref (within 2^15 ticks, 3.3 s, either way; never below
// zero): the full value of a Packet's Sent, given the receiver's estimate.
func UnwrapTicks16(ref Ticks, v Ticks) Ticks {
	d := int64(int16(uint16(v) - uint16(ref)))
	if d < 0 && uint64(-d) > uint64(ref) {
		return ref + Ticks(d+1<<16)
	}
	return ref + Ticks(d)
}

// Unwrap16 returns the full sequence number whose low 16 bits are v and which
// lies nearest to ref (within 2^15 either way, never below zero).
func Unwrap16(ref uint32, v uint16) uint32 {
	d := int32(int16(v - uint16(ref)))
	full := int64(ref) + int64(d)
	if full < 0 {
		full += 1 << 16
	}
	if full > 1<<32-1 {
		full -= 1 << 16
	}
	return uint32(full)
}

// reader decodes from a byte slice, remembering the first error.
type reader struct {
	b   []byte
	off int
	err error
	why string
}

func (r *reader) setErr(why string) {
	if r.err == nil {
		r.err, r.why = ErrMalformed, why
	}
}

func (r *reader) fail(field string) error {
	why := r.why
	if why == "" {
		why = "truncated"
	}
	return fmt.Errorf("%w: %s: %s at offset %d", ErrMalformed, field, why, r.off)
}

func (r *reader) byte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.setErr("truncated")
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) uint16() uint16 {
	if r.err != nil || len(r.b)-r.off < 2 {
		r.setErr("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *reader) peekByte() byte {
	if r.err != nil || r.off >= len(r.b) {
		r.setErr("truncated")
		return 0
	}
	return r.b[r.off]
}

func (r *reader) uint32() uint32 {
	v := r.uvarint()
	if v > 1<<32-1 {
		r.setErr("sequence number exceeds 32 bits")
		return 0
	}
	return uint32(v)
}

func (r *reader) uint64() uint64 {
	if r.err != nil || len(r.b)-r.off < 8 {
		r.setErr("truncated")
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		if n == 0 {
			r.setErr("truncated varint")
		} else {
			r.setErr("varint overflows 64 bits")
		}
		return 0
	}
	r.off += n
	return v
}

func (r *reader) frame() bucket.Frame {
	v := r.uvarint()
	if v > maxFrame {
		r.setErr("frame out of range")
		return 0
	}
	return bucket.Frame(v) - 1
}

// seq16 reads the low 16 bits of a sequence number, written as a varint.
func (r *reader) seq16() uint16 {
	v := r.uvarint()
	if v > 0xFFFF {
		r.setErr("sequence number exceeds 16 bits")
		return 0
	}
	return uint16(v)
}

// frameFrom reads a frame written as the zigzag varint of its difference
// from base; the result must be a valid frame, in [-1, 2^40).
func (r *reader) frameFrom(base bucket.Frame) bucket.Frame {
	d := unzigzag(r.uvarint())
	if r.err != nil {
		return 0
	}
	if d < -maxFrame-1 || d > maxFrame {
		r.setErr("frame out of range")
		return 0
	}
	f := base + bucket.Frame(d)
	if f < -1 || f >= maxFrame {
		r.setErr("frame out of range")
		return 0
	}
	return f
}

func (r *reader) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.setErr("payload longer than the datagram")
		return nil
	}
	v := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return v
}
