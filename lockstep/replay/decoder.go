package replay

import (
	"encoding/binary"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// decoder reads fields from a byte slice, keeping the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
	d.b = nil
}

func (d *decoder) uvarint(limit uint64, what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("%s: bad varint", what)
		return 0
	}
	if v > limit {
		d.fail("%s %d exceeds %d", what, v, limit)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// frame reads a frame -1 <= f < maxFrame written as the uvarint f+1.
func (d *decoder) frame(what string) bucket.Frame {
	return bucket.Frame(d.uvarint(maxFrame, what)) - 1
}

func (d *decoder) fixed(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.fail("%s: %d bytes needed, %d left", what, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(limit uint64, what string) []byte {
	if d.err != nil {
		return nil
	}
	n, k := binary.Uvarint(d.b)
	switch {
	case k <= 0:
		d.fail("%s length: bad varint", what)
		return nil
	case n > limit:
		d.fail("%s length %d exceeds %d", what, n, limit)
		return nil
	}
	d.b = d.b[k:]
	return d.fixed(int(n), what)
}

func (d *decoder) u64(what string) uint64 {
	if b := d.fixed(8, what); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}
