package replay

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// RecordKind says what a Record holds.
type RecordKind uint8

// Record kinds.
const (
	// KindFrame: one frame's bucket (Frame, Commands). Every frame from 0
	// to the last has one, empty frames included.
	KindFrame RecordKind = iota + 1
	// KindCheckpoint: the state hash after Frame (Hash, Sections).
	KindCheckpoint
	// KindChange: a membership change (Change), recorded after Frame.
	KindChange
	// KindEnd: the trailer (Trailer); Frame is its last frame. Next
	// returns io.EOF after it.
	KindEnd
	// KindStatement: a member's signed statement about its command stream
	// (Statement), recorded after Frame (format version 2).
	KindStatement
)

var recordKindNames = [...]string{
	KindFrame:      "frame",
	KindCheckpoint: "checkpoint",
	KindChange:     "change",
	KindEnd:        "end",
	KindStatement:  "statement",
}

// String returns "frame", "checkpoint", "change", "end" or "statement".
func (k RecordKind) String() string {
	if int(k) < len(recordKindNames) && recordKindNames[k] != "" {
		return recordKindNames[k]
	}
	return fmt.Sprintf("RecordKind(%d)", uint8(k))
}

// Record is one item of a replay's body, as returned by Reader.Next.
type Record struct {
	Kind      RecordKind
	Frame     bucket.Frame       // see RecordKind
	Commands  []bucket.Command   // KindFrame: the bucket in canonical order; nil when empty
	Hash      uint64             // KindCheckpoint: the state hash
	Sections  []lockstep.Section // KindCheckpoint: the section hashes, or nil
	Change    Change             // KindChange
	Trailer   Trailer            // KindEnd
	Statement Statement          // KindStatement; its signature is valid until the next call of Next
}

// Clone returns a deep copy of r, valid after the next call of
// Reader.Next: its commands with their payloads, its sections and its
// statement's signature are copied (nil ones stay nil).
func (r *Record) Clone() Record {
	c := *r
	c.Commands = nil
	for _, cmd := range r.Commands {
		cmd.Payload = slices.Clone(cmd.Payload)
		c.Commands = append(c.Commands, cmd)
	}
	c.Sections = slices.Clone(r.Sections)
	c.Statement.Signature = slices.Clone(r.Statement.Signature)
	return c
}

// Reader reads a replay as a stream of records. It delivers the records of
// a chunk only once the whole chunk has been read and its checksum checked,
// so after damage it has delivered exactly the records of the whole chunks
// before it. A Reader is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	h   Header
	err error // sticky: returned by every Next after the first error
	off int64 // bytes consumed

	chunks  int   // chunks read
	chunkAt int64 // byte offset of the last chunk read
	stored  []byte
	buf     []byte // inflated payload
	p       []byte // the rest of the current chunk's records
	zr      bytes.Reader
	fr      io.ReadCloser

	next   bucket.Frame // the next frame to deliver
	skip   bucket.Frame // empty frames still to deliver
	first  bucket.Frame // the first frame of the current chunk
	last   bucket.Frame // the last frame the file may hold: its trailer's, when known
	expect []uint64
	// restart is, per slot, the frame from which its sequence numbers
	// count from 0 again (an admission, ChangeRejoin or ChangeJoin), or -1.
	restart []bucket.Frame
	names   []string
	ended   bool

	rec  Record
	cmds []bucket.Command
	secs []lockstep.Section
}

// NewReader reads the header of the replay r and returns a Reader for the
// rest. It reads r through a buffer (a *bufio.Reader of at least 16 KiB is
// used as it is). A header it cannot accept is an error wrapping
// ErrBadMagic, ErrVersion, ErrChecksum, ErrTruncated or ErrMalformed.
func NewReader(r io.Reader) (*Reader, error) {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 16<<10 {
		br = bufio.NewReaderSize(r, 16<<10)
	}
	rd := &Reader{br: br, last: maxFrame - 1}
	if err := rd.readHeader(); err != nil {
		return nil, err
	}
	rd.expect = make([]uint64, len(rd.h.Members))
	rd.restart = make([]bucket.Frame, len(rd.h.Members))
	for i := range rd.restart {
		rd.restart[i] = -1
	}
	return rd, nil
}

// limitFrames makes the reader refuse any frame after last, the last
// frame of the trailer read from the end of the file, before it delivers
// any frame of the record that would pass it.
func (r *Reader) limitFrames(last bucket.Frame) { r.last = last }

// Header returns the replay's header. Its slices must not be modified.
func (r *Reader) Header() Header { return r.h }

// Offset returns the number of bytes read so far.
func (r *Reader) Offset() int64 { return r.off }

// Chunks returns the number of whole chunks read so far.
func (r *Reader) Chunks() int { return r.chunks }

// LastFrame returns the last frame delivered by Next, or -1.
func (r *Reader) LastFrame() bucket.Frame { return r.next - 1 }

func (r *Reader) readFull(b []byte) (int, error) {
	n, err := io.ReadFull(r.br, b)
	r.off += int64(n)
	if err == io.ErrUnexpectedEOF {
		err = io.EOF
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("replay: reading at byte %d: %w", r.off, err)
	}
	return n, err
}

func (r *Reader) readHeader() error {
	var pre [prefixSize]byte
	n, err := r.readFull(pre[:])
	if m := min(n, len(Magic)); string(pre[:m]) != Magic[:m] {
		return fmt.Errorf("%w: it starts with %s, a replay with %q", ErrBadMagic, describeStart(pre[:n]), Magic)
	}
	if err == io.EOF && n == 0 {
		return fmt.Errorf("%w: the file is empty", ErrTruncated)
	} else if err == io.EOF {
		return fmt.Errorf("%w: the file ends at byte %d, inside the %d-byte header prefix", ErrTruncated, n, prefixSize)
	} else if err != nil {
		return err
	}
	if got, want := binary.LittleEndian.Uint32(pre[15:]), crc(pre[:15]); got != want {
		return fmt.Errorf("%w: header prefix (bytes 0 to %d): CRC-32C stored %08x, computed %08x", ErrChecksum, prefixSize-1, got, want)
	}
	version := int(binary.LittleEndian.Uint16(pre[9:]))
	switch {
	case version == 0:
		return fmt.Errorf("%w: the file declares format version 0, which does not exist; this reader supports versions 1 to %d", ErrVersion, FormatVersion)
	case version > FormatVersion:
		return fmt.Errorf("%w: the file has format version %d, written by a newer Phalanx; this reader supports versions 1 to %d", ErrVersion, version, FormatVersion)
	}
	size := binary.LittleEndian.Uint32(pre[11:])
	if size > maxHeaderBody {
		return fmt.Errorf("%w: header body of %d bytes, limit %d", ErrMalformed, size, maxHeaderBody)
	}
	block := make([]byte, prefixSize+int(size)+4)
	copy(block, pre[:])
	if n, err := r.readFull(block[prefixSize:]); err == io.EOF {
		return fmt.Errorf("%w: the file ends at byte %d, inside the header (which ends at byte %d)", ErrTruncated, prefixSize+n, len(block))
	} else if err != nil {
		return err
	}
	end := len(block) - 4
	if got, want := binary.LittleEndian.Uint32(block[end:]), crc(block[:end]); got != want {
		return fmt.Errorf("%w: header (bytes 0 to %d): CRC-32C stored %08x, computed %08x", ErrChecksum, len(block)-1, got, want)
	}
	r.h.Version = version
	if err := parseHeaderBody(block[prefixSize:end], &r.h); err != nil {
		return fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	return nil
}

// describeStart describes the first bytes of a file that is not a replay.
func describeStart(b []byte) string {
	s := fmt.Sprintf("%q", b[:min(len(b), 12)])
	kinds := []struct{ prefix, name string }{
		{"\x1f\x8b", "gzip data"},
		{"PK\x03\x04", "a zip archive"},
		{"\x89PNG", "a PNG image"},
		{"\x7fELF", "an ELF executable"},
		{"%PDF", "a PDF document"},
		{"{", "JSON or text"},
		{"PHXTRAIL", "a replay trailer without its file"},
	}
	for _, k := range kinds {
		if bytes.HasPrefix(b, []byte(k.prefix)) {
			return s + " (" + k.name + ")"
		}
	}
	return s
}

// lastGood describes the last frame delivered, for error messages.
func (r *Reader) lastGood() string {
	if r.next == 0 {
		return "no frame read"
	}
	return fmt.Sprintf("last good frame %d", r.next-1)
}

// Next returns the next record of the replay. The record, its commands,
// payloads and sections are valid until the next call of Next. After the
// KindEnd record Next returns io.EOF. On damage it returns an error wrapping
// ErrChecksum, ErrTruncated or ErrMalformed that names the byte offset and
// the last good frame; the error is sticky.
func (r *Reader) Next() (*Record, error) {
	if r.err != nil {
		return nil, r.err
	}
	rec, err := r.advance()
	if err != nil {
		r.err = err
		return nil, err
	}
	return rec, nil
}

func (r *Reader) advance() (*Record, error) {
	for {
		if r.skip > 0 {
			r.skip--
			return r.frame(nil), nil
		}
		if len(r.p) == 0 {
			if rec, err := r.nextBlock(); rec != nil || err != nil {
				return rec, err
			}
			continue
		}
		// A record that delivers nothing (section names) is followed by
		// another.
		if rec, err := r.record(); rec != nil || err != nil {
			return rec, err
		}
	}
}

// nextBlock reads the next chunk, or the trailer (returning its record),
// or finds the end after the trailer (io.EOF).
func (r *Reader) nextBlock() (*Record, error) {
	if r.ended {
		if _, err := r.br.ReadByte(); err == io.EOF {
			return nil, io.EOF
		} else if err != nil {
			return nil, fmt.Errorf("replay: reading at byte %d: %w", r.off, err)
		}
		return nil, fmt.Errorf("%w: data after the trailer, at byte %d", ErrMalformed, r.off)
	}
	at := r.off
	var t [1]byte
	if _, err := r.readFull(t[:]); err == io.EOF {
		return nil, fmt.Errorf("%w: the file ends at byte %d after %d chunks, without a trailer; %s", ErrTruncated, at, r.chunks, r.lastGood())
	} else if err != nil {
		return nil, err
	}
	switch t[0] {
	case blockChunk:
		return nil, r.readChunk(at)
	case blockTrailer:
		return r.readTrailer(at)
	}
	return nil, fmt.Errorf("%w: chunk %d at byte %d: begins with 0x%02x, neither a chunk (C) nor the trailer (T); %s", ErrChecksum, r.chunks, at, t[0], r.lastGood())
}

func (r *Reader) readChunk(at int64) error {
	var head [chunkHeadSize]byte
	head[0] = blockChunk
	if n, err := r.readFull(head[1:]); err == io.EOF {
		return fmt.Errorf("%w: the file ends at byte %d, inside the header of chunk %d (at byte %d); %s", ErrTruncated, at+1+int64(n), r.chunks, at, r.lastGood())
	} else if err != nil {
		return err
	}
	if got, want := binary.LittleEndian.Uint32(head[6:]), crc(head[:6]); got != want {
		return fmt.Errorf("%w: chunk %d at byte %d: header CRC-32C stored %08x, computed %08x; %s", ErrChecksum, r.chunks, at, got, want, r.lastGood())
	}
	flags, size := head[1], binary.LittleEndian.Uint32(head[2:])
	if flags&^flagDeflate != 0 || size == 0 || size > MaxChunkSize {
		return fmt.Errorf("%w: chunk %d at byte %d: flags %02x, %d bytes; %s", ErrMalformed, r.chunks, at, flags, size, r.lastGood())
	}
	// Grow the buffer as data arrives, so a damaged length cannot make a
	// short file allocate much.
	r.stored = r.stored[:0]
	for len(r.stored) < int(size) {
		step := min(int(size)-len(r.stored), max(64<<10, len(r.stored)))
		r.stored = slices.Grow(r.stored, step)
		n, err := r.readFull(r.stored[len(r.stored) : len(r.stored)+step])
		r.stored = r.stored[:len(r.stored)+n]
		if err == io.EOF {
			return fmt.Errorf("%w: the file ends at byte %d, inside chunk %d (at byte %d, %d bytes declared, %d present); %s",
				ErrTruncated, r.off, r.chunks, at, size, len(r.stored), r.lastGood())
		} else if err != nil {
			return err
		}
	}
	if got, want := binary.LittleEndian.Uint32(head[10:]), crc(r.stored); got != want {
		return fmt.Errorf("%w: chunk %d at byte %d: CRC-32C stored %08x, computed %08x; %s", ErrChecksum, r.chunks, at, got, want, r.lastGood())
	}
	payload := r.stored
	if flags&flagDeflate != 0 {
		var err error
		if payload, err = r.inflate(); err != nil {
			return fmt.Errorf("%w: chunk %d at byte %d: %v; %s", ErrMalformed, r.chunks, at, err, r.lastGood())
		}
	}
	r.chunkAt = at
	r.chunks++
	r.first = r.next
	first, n := binary.Uvarint(payload)
	switch {
	case n <= 0:
		return r.malformed("no first frame")
	case first != uint64(r.next):
		return r.malformed(fmt.Sprintf("starts at frame %d, but frame %d follows", first, r.next))
	case n == len(payload):
		return r.malformed("no records")
	}
	r.p = payload[n:]
	return nil
}

func (r *Reader) inflate() ([]byte, error) {
	r.zr.Reset(r.stored)
	if r.fr == nil {
		r.fr = flate.NewReader(&r.zr)
	} else if err := r.fr.(flate.Resetter).Reset(&r.zr, nil); err != nil {
		return nil, err
	}
	buf := r.buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, max(4096, len(buf)))
		}
		n, err := r.fr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > MaxChunkSize {
			return nil, fmt.Errorf("inflates to more than %d bytes", MaxChunkSize)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("bad DEFLATE data: %v", err)
		}
	}
	r.buf = buf
	if r.zr.Len() != 0 {
		return nil, fmt.Errorf("%d bytes after the DEFLATE data", r.zr.Len())
	}
	return buf, nil
}

func (r *Reader) readTrailer(at int64) (*Record, error) {
	var b [TrailerSize]byte
	b[0] = blockTrailer
	if n, err := r.readFull(b[1:]); err == io.EOF {
		return nil, fmt.Errorf("%w: the file ends at byte %d, inside the trailer (at byte %d); %s", ErrTruncated, at+1+int64(n), at, r.lastGood())
	} else if err != nil {
		return nil, err
	}
	t, err := parseTrailer(b[:], at)
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, r.lastGood())
	}
	switch {
	case t.LastFrame != r.next-1:
		return nil, fmt.Errorf("%w: the trailer says the last frame is %d, the file holds frames up to %d", ErrMalformed, t.LastFrame, r.next-1)
	case t.Chunks != r.chunks:
		return nil, fmt.Errorf("%w: the trailer counts %d chunks, the file holds %d", ErrMalformed, t.Chunks, r.chunks)
	}
	r.ended = true
	r.rec = Record{Kind: KindEnd, Frame: t.LastFrame, Trailer: t}
	return &r.rec, nil
}

func (r *Reader) malformed(what string) error {
	r.p = nil
	return fmt.Errorf("%w: chunk %d at byte %d: %s; %s", ErrMalformed, r.chunks-1, r.chunkAt, what, r.lastGood())
}
