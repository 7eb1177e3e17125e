package replay

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Writer records a session into a replay file as it runs.
//
// The caller records every frame in order ([Writer.Step] or
// [Writer.Record]), state-hash checkpoints ([Writer.Checkpoint]; Record makes
// them on the header's interval), membership changes ([Writer.Membership]),
// and finally [Writer.Close]. Records are buffered and written as chunks:
// when Flush is called (a session calls it once a turn), when a chunk holds
// SetFlushFrames frames (DefaultFlushFrames unless changed) or 64 KiB, and at
// Close. Each chunk is written with one Write call, so after a crash the
// file is readable up to its last whole chunk.
//
// The first error (from the underlying writer, or a call breaking the
// rules, which wraps ErrInvalid) is kept: every later call returns it.
// A Writer is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	h      Header
	err    error
	closed bool

	flushFrames int
	compress    bool
	fw          *flate.Writer
	zbuf        bytes.Buffer

	// payload, out and zbuf hold one chunk: flushFrames frames' records
	// or about softChunkSize bytes, then it is written out and they are
	// reused.
	payload     []byte         // the open chunk's records; empty when no chunk is open
	out         []byte         // the chunk being written
	next        bucket.Frame   // the next frame to record
	written     bucket.Frame   // frames encoded into chunks (the reader's cursor)
	chunkFrames int            // frames recorded since the last chunk was written
	expect      []uint64       // each slot's next expected sequence number
	restart     []bucket.Frame // per slot: the frame from which its sequence numbers count from 0 again (an admission), or -1
	names       []string       // section names last recorded
	sections    []lockstep.Section
	chunks      int
	offset      int64 // bytes written

	// Statements: per member the newest whose commands are recorded and
	// not yet written, and the first received since whose commands are not
	// recorded yet (it waits for them); the frame count when statements
	// were last written.
	stmts     []Statement
	wait      []Statement
	waiting   int // members with a statement in wait
	stmtFrame bucket.Frame
	closing   bool
}

// NewWriter writes the header of h to w and returns a Writer recording the
// session into w. Zero fields Engine and HashInterval take EngineVersion
// and DefaultHashInterval. It returns an error wrapping ErrInvalid when h
// breaks the limits described on Header, or the error of w.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Version = FormatVersion
	if h.Engine == "" {
		h.Engine = EngineVersion
	}
	if h.HashInterval == 0 {
		h.HashInterval = DefaultHashInterval
	}
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrInvalid, err)
	}
	h.Members = slices.Clone(h.Members)
	h.Session = slices.Clone(h.Session)
	h.SimConfig = slices.Clone(h.SimConfig)
	rw := &Writer{
		w:           w,
		h:           h,
		flushFrames: DefaultFlushFrames,
		compress:    true,
		expect:      make([]uint64, len(h.Members)),
		restart:     make([]bucket.Frame, len(h.Members)),
	}
	for i := range rw.restart {
		rw.restart[i] = -1
	}
	rw.out = appendHeader(rw.out[:0], &h)
	if err := rw.write(rw.out); err != nil {
		return nil, err
	}
	return rw, nil
}

// Header returns the header as written (defaults applied). Its slices must
// not be modified.
func (w *Writer) Header() Header { return w.h }

// SetFlushFrames sets the most frames a chunk holds before the Writer writes
// it unasked (1 to MaxChunkFrames, n is clamped; DefaultFlushFrames by
// default).
func (w *Writer) SetFlushFrames(n int) { w.flushFrames = min(max(n, 1), MaxChunkFrames) }

// SetCompression sets whether chunks are compressed (DEFLATE, used only when
// it makes the chunk smaller). It is on by default.
func (w *Writer) SetCompression(on bool) { w.compress = on }

// Frames returns the number of frames recorded.
func (w *Writer) Frames() int { return int(w.next) }

// Offset returns the number of bytes written to the underlying writer.
func (w *Writer) Offset() int64 { return w.offset }

func (w *Writer) write(b []byte) error {
	n, err := w.w.Write(b)
	w.offset += int64(n)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("replay: writing: %w", err)
	}
	return w.err
}

func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("%w: the writer is closed", ErrInvalid)
	}
	return nil
}

func (w *Writer) invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Step records frame's bucket: the commands in canonical order (slot, then
// sequence number), each of a slot below the number of members and with a
// sequence number above that slot's previous one. Frames are recorded in
// order from 0 without gaps; an empty bucket is a frame with no commands.
// Payloads are copied. Step may write a chunk first (see Writer).
func (w *Writer) Step(frame bucket.Frame, cmds []bucket.Command) error {
	if err := w.usable(); err != nil {
		return err
	}
	if frame != w.next {
		return w.invalid("frame %d recorded, frame %d expected", frame, w.next)
	}
	restartStreams(w.expect, w.restart, frame)
	size := 0
	for i, c := range cmds {
		switch {
		case int(c.Slot) >= len(w.expect):
			return w.invalid("frame %d: command of slot %d with %d members", frame, c.Slot, len(w.expect))
		case i > 0 && (c.Slot < cmds[i-1].Slot || c.Slot == cmds[i-1].Slot && c.Seq <= cmds[i-1].Seq):
			return w.invalid("frame %d: bucket not in canonical order at command %d", frame, i)
		case uint64(c.Seq) < w.expect[c.Slot]:
			return w.invalid("frame %d: slot %d sequence %d after sequence %d", frame, c.Slot, c.Seq, w.expect[c.Slot]-1)
		}
		size += len(c.Payload) + 16
	}
	if size > MaxChunkSize-1<<20 { // room for the checkpoint and changes that may follow in its chunk
		return w.invalid("frame %d: bucket of about %d bytes, limit %d", frame, size, MaxChunkSize-1<<20)
	}
	if w.chunkFrames >= w.flushFrames || len(w.payload)+size > softChunkSize {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	w.chunkFrames++
	if len(cmds) == 0 {
		w.next++ // pending: encoded as part of a run of empty frames
		return nil
	}
	w.begin()
	if len(cmds) == 1 && uint64(cmds[0].Seq) == w.expect[cmds[0].Slot] {
		c := cmds[0]
		w.payload = append(w.payload, recSingle|byte(c.Slot))
		w.payload = appendBytes(w.payload, c.Payload)
		w.expect[c.Slot]++
	} else {
		w.payload = append(w.payload, recBucket)
		w.payload = binary.AppendUvarint(w.payload, uint64(len(cmds)))
		for _, c := range cmds {
			w.payload = binary.AppendUvarint(w.payload, uint64(c.Slot))
			w.payload = binary.AppendUvarint(w.payload, uint64(c.Seq)-w.expect[c.Slot])
			w.payload = appendBytes(w.payload, c.Payload)
			w.expect[c.Slot] = uint64(c.Seq) + 1
		}
	}
	w.next++
	w.written++
	if w.waiting > 0 {
		w.promote()
	}
	return nil
}

// promote moves each waiting statement whose commands are now all recorded
// to the statements to write.
func (w *Writer) promote() {
	for m := range w.wait {
		s := &w.wait[m]
		if s.Signature == nil || uint64(s.Count) > w.expect[m] {
			continue
		}
		w.stmts[m], *s = *s, w.stmts[m]
		s.Signature = nil // it is older than the one promoted
		w.waiting--
	}
}

// begin opens a chunk if none is open, then encodes the pending run of
// empty frames, so that the next record follows every frame recorded.
func (w *Writer) begin() {
	if len(w.payload) == 0 {
		w.payload = binary.AppendUvarint(w.payload, uint64(w.written))
	}
	if n := w.next - w.written; n > 0 {
		if n <= 128 {
			w.payload = append(w.payload, recSkip|byte(n-1))
		} else {
			w.payload = append(w.payload, recSkipLong)
			w.payload = binary.AppendUvarint(w.payload, uint64(n))
		}
		w.written = w.next
	}
}

// Record records bucket b as Step does and, when b.Frame is a multiple of
// the header's HashInterval, a checkpoint with sim's state hash and, if sim
// is a lockstep.SectionHasher, its section hashes. sim must have stepped b
// already. It is shaped for locksteptest.Config.OnStep.
func (w *Writer) Record(b lockstep.Bucket, sim lockstep.Simulation) error {
	if err := w.Step(b.Frame, b.Commands); err != nil {
		return err
	}
	if b.Frame%bucket.Frame(w.h.HashInterval) != 0 {
		return nil
	}
	w.sections = w.sections[:0]
	if sh, ok := sim.(lockstep.SectionHasher); ok {
		w.sections = sh.SectionHashes(w.sections)
	}
	return w.Checkpoint(b.Frame, sim.Hash(), w.sections)
}

// Checkpoint records the state hash after frame, the last frame recorded,
// with the simulation's section hashes (nil when it has none; at most 64,
// names up to 255 bytes).
func (w *Writer) Checkpoint(frame bucket.Frame, hash uint64, sections []lockstep.Section) error {
	if err := w.usable(); err != nil {
		return err
	}
	if frame != w.next-1 || frame < 0 {
		return w.invalid("checkpoint of frame %d, but the last frame recorded is %d", frame, w.next-1)
	}
	if len(sections) > maxSections {
		return w.invalid("checkpoint of frame %d: %d sections, limit %d", frame, len(sections), maxSections)
	}
	same := len(sections) == len(w.names)
	for i, s := range sections {
		if len(s.Name) > maxString {
			return w.invalid("checkpoint of frame %d: section name of %d bytes, limit %d", frame, len(s.Name), maxString)
		}
		same = same && w.names[i] == s.Name
	}
	w.begin()
	if !same && len(sections) > 0 {
		w.names = w.names[:0]
		w.payload = append(w.payload, recSections)
		w.payload = binary.AppendUvarint(w.payload, uint64(len(sections)))
		for _, s := range sections {
			w.names = append(w.names, s.Name)
			w.payload = appendBytes(w.payload, []byte(s.Name))
		}
	}
	w.payload = append(w.payload, recCheckpoint)
	w.payload = binary.LittleEndian.AppendUint64(w.payload, hash)
	w.payload = binary.AppendUvarint(w.payload, uint64(len(sections)))
	for _, s := range sections {
		w.payload = binary.LittleEndian.AppendUint64(w.payload, s.Hash)
	}
	return nil
}

// Membership records a membership change after the last frame recorded.
func (w *Writer) Membership(c Change) error {
	if err := w.usable(); err != nil {
		return err
	}
	switch {
	case !c.Kind.known(FormatVersion):
		return w.invalid("membership change of kind %d", c.Kind)
	case c.Kind.atFrame() && c.Frame < w.next:
		return w.invalid("%s of slot %d at frame %d, after frame %d was recorded", c.Kind, c.Member, c.Frame, w.next-1)
	case int(c.Member) >= len(w.expect):
		return w.invalid("membership change of slot %d with %d members", c.Member, len(w.expect))
	case c.Frame < -1 || c.LastFrame < -1 || c.Frame >= maxFrame-1 || c.LastFrame >= maxFrame-1:
		return w.invalid("membership change at frame %d, last frame %d", c.Frame, c.LastFrame)
	case len(c.Detail) > maxDetail:
		return w.invalid("membership change detail of %d bytes, limit %d", len(c.Detail), maxDetail)
	}
	if c.Kind.admission() {
		w.restart[c.Member] = c.Frame
		// The statements held are about the member's old stream, and a
		// verifier reads those after this record as the new one's.
		if w.stmts != nil {
			w.writeStatement(int(c.Member))
			if w.wait[c.Member].Signature != nil {
				w.wait[c.Member].Signature = nil
				w.waiting--
			}
		}
	}
	w.begin()
	w.payload = append(w.payload, recChange, byte(c.Kind))
	w.payload = binary.AppendUvarint(w.payload, uint64(c.Member))
	w.payload = binary.AppendUvarint(w.payload, uint64(c.Frame+1))
	w.payload = binary.AppendUvarint(w.payload, uint64(c.LastFrame+1))
	w.payload = appendBytes(w.payload, []byte(c.Detail))
	return nil
}

// Statement records a member's signed statement. Since a statement vouches
// for every command before it, the Writer keeps only the newest of each
// member whose commands it has recorded, and writes them with the chunk that
// passes StatementFrames frames since it last wrote statements, and at
// Close. A statement that covers commands not recorded yet (a member signs
// commands stamped a lead ahead) waits until they are, and newer ones are
// not kept meanwhile: so the statements written are ones the file can
// check. The signature is copied.
func (w *Writer) Statement(s Statement) error {
	if err := w.usable(); err != nil {
		return err
	}
	switch {
	case int(s.Member) >= len(w.expect):
		return w.invalid("statement of slot %d with %d members", s.Member, len(w.expect))
	case s.Seal < -1 || s.Seal >= maxFrame-1:
		return w.invalid("statement with seal %d", s.Seal)
	case len(s.Signature) > maxSignature:
		return w.invalid("statement signature of %d bytes, limit %d", len(s.Signature), maxSignature)
	}
	if w.stmts == nil {
		w.stmts = make([]Statement, len(w.expect))
		w.wait = make([]Statement, len(w.expect))
	}
	keep := &w.stmts[s.Member]
	if uint64(s.Count) > w.expect[s.Member] {
		keep = &w.wait[s.Member]
		if keep.Signature != nil {
			return nil // an older one waits already
		}
		w.waiting++
	}
	s.Signature = append(keep.Signature[:0], s.Signature...)
	*keep = s
	return nil
}

// writeStatements encodes the pending statements into the open chunk,
// when StatementFrames frames have passed since the last or at Close.
func (w *Writer) writeStatements() {
	if w.stmts == nil || (w.next-w.stmtFrame < StatementFrames && !w.closing) {
		return
	}
	for i := range w.stmts {
		w.writeStatement(i)
	}
	w.stmtFrame = w.next
}

// writeStatement encodes member m's statement to write, if it has one.
func (w *Writer) writeStatement(m int) {
	s := &w.stmts[m]
	if s.Signature == nil {
		return
	}
	w.begin()
	w.payload = append(w.payload, recStatement)
	w.payload = binary.AppendUvarint(w.payload, uint64(s.Member))
	w.payload = binary.AppendUvarint(w.payload, uint64(s.Tag))
	w.payload = binary.AppendUvarint(w.payload, uint64(s.Seal+1))
	w.payload = binary.AppendUvarint(w.payload, uint64(s.Count))
	w.payload = appendBytes(w.payload, s.Signature)
	s.Signature = nil
}

// Flush writes everything recorded so far as one chunk, if anything is
// pending. A session calls it once a turn.
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	if w.next > w.written {
		w.begin()
	}
	w.writeStatements()
	w.chunkFrames = 0
	if len(w.payload) == 0 {
		return nil
	}
	stored, flags := w.payload, byte(0)
	if w.compress && len(w.payload) > 64 {
		if z := w.deflate(); len(z) < len(w.payload) {
			stored, flags = z, flagDeflate
		}
	}
	w.out = append(w.out[:0], blockChunk, flags)
	w.out = binary.LittleEndian.AppendUint32(w.out, uint32(len(stored)))
	w.out = binary.LittleEndian.AppendUint32(w.out, crc(w.out[:6]))
	w.out = binary.LittleEndian.AppendUint32(w.out, crc(stored))
	w.out = append(w.out, stored...)
	w.payload = w.payload[:0]
	w.chunks++
	return w.write(w.out)
}

func (w *Writer) deflate() []byte {
	w.zbuf.Reset()
	if w.fw == nil {
		w.fw, _ = flate.NewWriter(&w.zbuf, flate.DefaultCompression) // the level is valid
	} else {
		w.fw.Reset(&w.zbuf)
	}
	w.fw.Write(w.payload) // writes to a bytes.Buffer do not fail
	w.fw.Close()
	return w.zbuf.Bytes()
}

// Close writes the pending records and the trailer: the last frame recorded
// (final, which must be the last frame given to Step, or -1 if none), the
// state hash after it, and why the recording ended. It does not close the
// underlying writer. Calls after Close return an error.
func (w *Writer) Close(final bucket.Frame, hash uint64, reason EndReason) error {
	if err := w.usable(); err != nil {
		return err
	}
	if final != w.next-1 {
		return w.invalid("closed at frame %d, but the last frame recorded is %d", final, w.next-1)
	}
	w.closing = true
	if err := w.Flush(); err != nil {
		return err
	}
	w.closed = true
	w.out = appendTrailer(w.out[:0], Trailer{Reason: reason, Chunks: w.chunks, LastFrame: final, FinalHash: hash, Offset: w.offset})
	return w.write(w.out)
}

// Append writes r as a Reader returned it: a frame with Step, a checkpoint
// with Checkpoint, a change with Membership, a statement with Statement,
// the trailer with Close. Appending a replay's records in order to a
// Writer of its header records the same replay again (its chunks may end
// elsewhere); a tool that edits one edits the records on the way. A record of another kind is an error
// wrapping ErrInvalid.
func (w *Writer) Append(r Record) error {
	switch r.Kind {
	case KindFrame:
		return w.Step(r.Frame, r.Commands)
	case KindCheckpoint:
		return w.Checkpoint(r.Frame, r.Hash, r.Sections)
	case KindChange:
		return w.Membership(r.Change)
	case KindStatement:
		return w.Statement(r.Statement)
	case KindEnd:
		return w.Close(r.Trailer.LastFrame, r.Trailer.FinalHash, r.Trailer.Reason)
	}
	return w.invalid("record of kind %v", r.Kind)
}
