package determinism

import (
	"encoding/binary"
	"slices"
)

// Hasher computes the state hash of a simulation: XXH64 with seed 0 (see
// [XXHash64]) of a byte stream built from typed writes, divided into named
// sections so that a desync report can name the first part of the state that
// differs. Two members that make the same calls with the same values get the
// same hashes, on any platform. This doc comment is the specification.
//
// # Encoding
//
// Each write appends to the stream:
//
//   - WriteUint64, WriteInt64, WriteInt, WriteFixed: 8 bytes, little-endian,
//     two's complement (WriteInt widens to int64 first, so it does not depend
//     on the platform's int size; WriteFixed writes the raw value).
//   - WriteUint32: 4 bytes, little-endian.
//   - WriteBool: 1 byte, 0x00 for false and 0x01 for true.
//   - WriteVec2: WriteFixed(v.X) then WriteFixed(v.Y).
//   - WriteBytes, WriteString: the length as an unsigned LEB128 varint
//     (encoding/binary.AppendUvarint: 7 bits per byte, least significant
//     group first, high bit set on every byte but the last), then the bytes.
//
// # Sections and hashes
//
// Section(name) closes the current section and opens a new one named name.
//
//   - [Hasher.Sum64] is XXH64 of the whole stream: the encodings of all
//     writes and, at the position of each Section(name) call, the encoding
//     WriteString(name) would produce (varint length, then the name).
//   - Each section's hash, reported by [Hasher.Sections], is XXH64 of the
//     encodings of the writes made while it was open; its name is not part
//     of it.
//   - Bytes written before the first Section call form a section with the
//     empty name "", reported only if at least one byte was written to it. A
//     section opened by Section is reported even if nothing was written to
//     it (its hash is then XXH64 of no bytes, 0xef46db3751d8e999).
//   - Names need not be distinct; sections are reported in the order they
//     were opened.
//
// Sum64 and Sections may be called at any time: they report the stream so
// far and do not end it.
//
// # Costs
//
// Writes are buffered and never allocate. Sections keep a list that grows as
// sections are opened; [Hasher.Reset] keeps its capacity, so a Hasher reused
// every frame does not allocate in steady state. A Hasher is not safe for
// concurrent use. Its zero value is not usable: create it with [NewHasher].
type Hasher struct {
	whole   xxDigest // the whole stream
	section xxDigest // the open section's bytes
	name    string   // the open section's name
	named   bool     // Section has been called since the last Reset
	done    []SectionHash
	buf     [512]byte // pending bytes, not yet fed to whole and section
	n       int
	ready   bool // set by NewHasher; guards against use of the zero value
}

// SectionHash is the hash of one section of a [Hasher]'s stream.
type SectionHash struct {
	Name string
	Hash uint64
}

// NewHasher returns a Hasher with an empty stream.
func NewHasher() *Hasher {
	h := &Hasher{ready: true}
	h.Reset()
	return h
}

// Reset empties the stream, as if h had just been returned by NewHasher,
// keeping allocated memory for reuse.
func (h *Hasher) Reset() {
	h.whole.reset()
	h.section.reset()
	h.name = ""
	h.named = false
	clear(h.done) // drop references to old names
	h.done = h.done[:0]
	h.n = 0
}

// Section closes the current section and opens one named name; the bytes
// written until the next Section call belong to it. The name enters
// [Hasher.Sum64] as described on [Hasher].
func (h *Hasher) Section(name string) {
	h.check()
	h.flush()
	if h.named || h.section.total > 0 {
		h.done = append(h.done, SectionHash{h.name, h.section.sum()})
	}
	h.section.reset()
	h.name = name
	h.named = true
	// The name goes to the whole stream only.
	h.n = binary.PutUvarint(h.buf[:], uint64(len(name)))
	for {
		c := copy(h.buf[h.n:], name)
		h.n += c
		name = name[c:]
		h.whole.write(h.buf[:h.n])
		h.n = 0
		if name == "" {
			return
		}
	}
}

// WriteUint64 appends v as 8 bytes, little-endian.
func (h *Hasher) WriteUint64(v uint64) {
	if h.n > len(h.buf)-8 {
		h.flush()
	}
	binary.LittleEndian.PutUint64(h.buf[h.n:], v)
	h.n += 8
}

// WriteInt64 appends v as 8 bytes, little-endian two's complement.
func (h *Hasher) WriteInt64(v int64) { h.WriteUint64(uint64(v)) }

// WriteInt appends v as an int64: 8 bytes, little-endian two's complement,
// on every platform.
func (h *Hasher) WriteInt(v int) { h.WriteUint64(uint64(int64(v))) }

// WriteFixed appends the raw value of v as 8 bytes, little-endian two's
// complement.
func (h *Hasher) WriteFixed(v Fixed) { h.WriteUint64(uint64(v)) }

// WriteVec2 appends v.X then v.Y, each as by WriteFixed.
func (h *Hasher) WriteVec2(v Vec2) {
	if h.n > len(h.buf)-16 {
		h.flush()
	}
	binary.LittleEndian.PutUint64(h.buf[h.n:], uint64(v.X))
	binary.LittleEndian.PutUint64(h.buf[h.n+8:], uint64(v.Y))
	h.n += 16
}

// WriteUint32 appends v as 4 bytes, little-endian.
func (h *Hasher) WriteUint32(v uint32) {
	if h.n > len(h.buf)-4 {
		h.flush()
	}
	binary.LittleEndian.PutUint32(h.buf[h.n:], v)
	h.n += 4
}

// WriteBool appends one byte: 1 for true, 0 for false.
func (h *Hasher) WriteBool(v bool) {
	if h.n == len(h.buf) {
		h.flush()
	}
	var b byte
	if v {
		b = 1
	}
	h.buf[h.n] = b
	h.n++
}

// WriteBytes appends len(b) as an unsigned varint, then b.
func (h *Hasher) WriteBytes(b []byte) { writeBytes(h, b) }

// WriteString appends len(s) as an unsigned varint, then the bytes of s.
func (h *Hasher) WriteString(s string) { writeBytes(h, s) }

// writeBytes is WriteBytes and WriteString: the same bytes either way.
func writeBytes[B []byte | string](h *Hasher, b B) {
	h.writeLen(len(b))
	for len(b) > 0 {
		if h.n == len(h.buf) {
			h.flush()
		}
		c := copy(h.buf[h.n:], b)
		h.n += c
		b = b[c:]
	}
}

func (h *Hasher) writeLen(n int) {
	if h.n > len(h.buf)-binary.MaxVarintLen64 {
		h.flush()
	}
	h.n += binary.PutUvarint(h.buf[h.n:], uint64(n))
}

// Sum64 returns the hash of the whole stream written so far, section names
// included, as specified on [Hasher]. It does not end the stream.
func (h *Hasher) Sum64() uint64 {
	h.check()
	h.flush()
	return h.whole.sum()
}

// Sections returns the name and hash of every section so far, in the order
// they were opened, the open one last, as specified on [Hasher]. The slice
// is newly allocated; see [Hasher.AppendSections] to reuse one.
func (h *Hasher) Sections() []SectionHash {
	return h.AppendSections(nil)
}

// AppendSections appends what [Hasher.Sections] returns to dst and returns
// the extended slice; it allocates only if dst lacks capacity.
func (h *Hasher) AppendSections(dst []SectionHash) []SectionHash {
	h.check()
	h.flush()
	dst = slices.Grow(dst, len(h.done)+1)
	dst = append(dst, h.done...)
	if h.named || h.section.total > 0 {
		dst = append(dst, SectionHash{h.name, h.section.sum()})
	}
	return dst
}

// flush feeds the pending bytes to both digests.
func (h *Hasher) flush() {
	if h.n == 0 {
		return
	}
	h.whole.write(h.buf[:h.n])
	h.section.write(h.buf[:h.n])
	h.n = 0
}

func (h *Hasher) check() {
	if !h.ready {
		panic("determinism: Hasher used without NewHasher")
	}
}
