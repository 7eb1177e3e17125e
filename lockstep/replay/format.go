package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/rng"
)

// Errors of this package. Every error returned by a Reader, ReadTrailer,
// OpenFile or Verify because of the input wraps one of them; check with
// errors.Is.
var (
	// ErrBadMagic: the input does not start with the replay magic: it is not
	// a Phalanx replay.
	ErrBadMagic = errors.New("replay: not a Phalanx replay")
	// ErrVersion: the file's format version is not one this reader supports.
	ErrVersion = errors.New("replay: unsupported format version")
	// ErrChecksum: a checksum does not match, or bytes that a checksum
	// protects are impossible: the file is damaged.
	ErrChecksum = errors.New("replay: checksum mismatch")
	// ErrTruncated: the file ends early: inside the header, inside a chunk,
	// or without a trailer.
	ErrTruncated = errors.New("replay: truncated")
	// ErrMalformed: checksums match, but the content breaks the format's
	// rules (a bug of the writer, or a file edited with its checksums
	// recomputed).
	ErrMalformed = errors.New("replay: malformed")
	// ErrSimMismatch: the replay was recorded with another simulation, or
	// another version of it.
	ErrSimMismatch = errors.New("replay: simulation mismatch")
	// ErrDiverged: re-running the replay produced another state hash than
	// the one recorded.
	ErrDiverged = errors.New("replay: diverged")
	// ErrInvalid: a Writer was called with something it cannot record (a
	// frame out of order, a bucket not in canonical order, an invalid
	// header), or after Close.
	ErrInvalid = errors.New("replay: invalid record")
)

// Format constants. docs/replay-format.md explains each.
const (
	// Magic starts every replay file.
	Magic = "PHXREPLAY"
	// FormatVersion is the format version this package writes, and the
	// newest it reads. Readers accept versions 1 to FormatVersion.
	FormatVersion = 4
	// EngineVersion is the engine version a Writer records when
	// Header.Engine is empty.
	EngineVersion = "phalanx 0.1"
	// DefaultHashInterval is the checkpoint interval, in frames, a Writer
	// records when Header.HashInterval is zero.
	DefaultHashInterval = 20
	// DefaultFlushFrames is the most frames a Writer buffers before it
	// writes a chunk unasked.
	DefaultFlushFrames = 20
	// TrailerSize is the size of the trailer that ends a complete file.
	TrailerSize = 44
	// TrailerMagic ends every complete file.
	TrailerMagic = "PHXTRAIL"
	// MaxChunkSize bounds a chunk's stored and decompressed payload.
	MaxChunkSize = 16 << 20
	// StatementFrames is how many frames a Writer lets pass between the
	// chunks into which it writes the newest statement of each member.
	StatementFrames = 200
	// MaxChunkFrames bounds the frames one chunk records (54 minutes at
	// 20 Hz), so that the frames a file holds grow with its size: a few
	// bytes cannot hold a run of a trillion empty frames.
	MaxChunkFrames = 1 << 16
)

// Limits of header fields and records.
const (
	maxString     = 255      // engine, session, names, versions, member IDs, section names
	maxSimConfig  = 64 << 10 // Header.SimConfig
	maxHeaderBody = 1 << 20
	maxSections   = 64
	maxDetail     = 1024
	maxSignature  = 128     // as on the wire
	maxInterval   = 1 << 20 // HashInterval
	maxFrame      = 1 << 40 // frames are below 2^40 (1,700 years at 20 Hz), as on the wire
	prefixSize    = 19      // magic, version, body length, prefix CRC
	chunkHeadSize = 14      // type, flags, length, head CRC, payload CRC
	softChunkSize = 64 << 10
)

// Block types and record types.
const (
	blockChunk   = 'C'
	blockTrailer = 'T'

	flagDeflate = 0x01

	recSkipLong   = 0x01 // uvarint n: n empty frames
	recBucket     = 0x02 // a frame with any bucket
	recSections   = 0x03 // section names for the following checkpoints
	recCheckpoint = 0x04 // state hash after the last frame
	recChange     = 0x05 // membership change
	recStatement  = 0x06 // a member's signed statement (version 2)
	recSingle     = 0x40 // 0x40|slot: a frame with one command of slot
	recSkip       = 0x80 // 0x80|(n-1): n empty frames, 1 <= n <= 128
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Header describes a recorded session: everything needed, with the
// simulation's code, to re-run it.
type Header struct {
	// Version is the file's format version. A Writer ignores it and
	// writes FormatVersion; a Reader reports the file's.
	Version int
	// Engine is the version of the engine that recorded the session; a
	// Writer records EngineVersion when it is empty.
	Engine string
	// Session identifies the session (opaque, up to 255 bytes): the
	// lobby's session ID, or the virtual harness's 2-byte session tag.
	Session []byte
	// FrameLength is the length of one frame (50 ms for 20 Hz); positive.
	FrameLength time.Duration
	// SimName and SimVersion identify the simulation and the version of
	// its rules (1 to 255 bytes and up to 255 bytes). A simulation changes
	// its version whenever the same buckets can produce another state.
	SimName    string
	SimVersion string
	// SimConfig holds the simulation's own parameters, opaque to the
	// engine (up to 64 KiB): whatever its factory needs besides the members
	// and the seed to build the starting state.
	SimConfig []byte
	// Seed is the session's shared seed.
	Seed rng.Seed
	// HashInterval is the number of frames between state-hash checkpoints
	// that Writer.Record records (at frames that are multiples of it);
	// 0 in a Writer's header selects DefaultHashInterval.
	HashInterval int
	// Members holds each member's ID (its peer ID; up to 255 bytes), by
	// slot: 1 to bucket.MaxMembers entries.
	Members []string
	// Self is the slot of the member that recorded the file.
	Self bucket.Slot
}

// CheckSim returns nil if the replay was recorded with simulation name at
// version, and otherwise an error wrapping ErrSimMismatch that names both.
// Factories passed to Verify call it.
func (h *Header) CheckSim(name, version string) error {
	if h.SimName == name && h.SimVersion == version {
		return nil
	}
	return fmt.Errorf("%w: the replay was recorded with simulation %q version %q; this build runs %q version %q",
		ErrSimMismatch, h.SimName, h.SimVersion, name, version)
}

// validate checks the limits of the header's fields.
func (h *Header) validate() error {
	switch {
	case len(h.Engine) > maxString:
		return fmt.Errorf("engine version of %d bytes, limit %d", len(h.Engine), maxString)
	case len(h.Session) > maxString:
		return fmt.Errorf("session ID of %d bytes, limit %d", len(h.Session), maxString)
	case h.FrameLength <= 0:
		return fmt.Errorf("frame length %v, want positive", h.FrameLength)
	case h.SimName == "" || len(h.SimName) > maxString:
		return fmt.Errorf("simulation name of %d bytes, want 1 to %d", len(h.SimName), maxString)
	case len(h.SimVersion) > maxString:
		return fmt.Errorf("simulation version of %d bytes, limit %d", len(h.SimVersion), maxString)
	case len(h.SimConfig) > maxSimConfig:
		return fmt.Errorf("simulation config of %d bytes, limit %d", len(h.SimConfig), maxSimConfig)
	case h.HashInterval < 0 || h.HashInterval > maxInterval:
		return fmt.Errorf("hash interval %d, want 0 to %d", h.HashInterval, maxInterval)
	case len(h.Members) < 1 || len(h.Members) > bucket.MaxMembers:
		return fmt.Errorf("%d members, want 1 to %d", len(h.Members), bucket.MaxMembers)
	case int(h.Self) >= len(h.Members):
		return fmt.Errorf("self slot %d with %d members", h.Self, len(h.Members))
	}
	for i, m := range h.Members {
		if len(m) > maxString {
			return fmt.Errorf("ID of member %d has %d bytes, limit %d", i, len(m), maxString)
		}
	}
	return nil
}

// appendHeader appends the whole header block of h (which must be valid).
func appendHeader(b []byte, h *Header) []byte {
	start := len(b)
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, FormatVersion)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // body length and prefix CRC, below
	body := len(b)
	b = appendBytes(b, []byte(h.Engine))
	b = appendBytes(b, h.Session)
	b = binary.AppendUvarint(b, uint64(h.FrameLength))
	b = appendBytes(b, []byte(h.SimName))
	b = appendBytes(b, []byte(h.SimVersion))
	b = appendBytes(b, h.SimConfig)
	b = append(b, h.Seed[:]...)
	b = binary.AppendUvarint(b, uint64(h.HashInterval))
	b = binary.AppendUvarint(b, uint64(len(h.Members)))
	for _, m := range h.Members {
		b = appendBytes(b, []byte(m))
	}
	b = binary.AppendUvarint(b, uint64(h.Self))
	binary.LittleEndian.PutUint32(b[start+11:], uint32(len(b)-body))
	binary.LittleEndian.PutUint32(b[start+15:], crc(b[start:start+15]))
	return binary.LittleEndian.AppendUint32(b, crc(b[start:]))
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// parseHeaderBody decodes a header body of format version 1.
func parseHeaderBody(body []byte, h *Header) error {
	d := decoder{b: body}
	h.Engine = string(d.bytes(maxString, "engine version"))
	h.Session = append([]byte(nil), d.bytes(maxString, "session ID")...)
	h.FrameLength = time.Duration(d.uvarint(uint64(1<<63-1), "frame length"))
	h.SimName = string(d.bytes(maxString, "simulation name"))
	h.SimVersion = string(d.bytes(maxString, "simulation version"))
	if cfg := d.bytes(maxSimConfig, "simulation config"); len(cfg) > 0 {
		h.SimConfig = append([]byte(nil), cfg...)
	}
	copy(h.Seed[:], d.fixed(32, "seed"))
	h.HashInterval = int(d.uvarint(maxInterval, "hash interval"))
	n := d.uvarint(bucket.MaxMembers, "member count")
	h.Members = make([]string, 0, n)
	for range n {
		h.Members = append(h.Members, string(d.bytes(maxString, "member ID")))
	}
	h.Self = bucket.Slot(d.uvarint(bucket.MaxMembers, "self slot"))
	if d.err != nil {
		return d.err
	}
	if len(d.b) > 0 {
		return fmt.Errorf("%d bytes after the last field", len(d.b))
	}
	if err := h.validate(); err != nil {
		return err
	}
	return nil
}

// EndReason says why a recording ended.
type EndReason uint8

// End reasons. A reader accepts codes it does not know (a newer writer's)
// and shows them by number.
const (
	// EndCompleted: the session played every frame it was meant to.
	EndCompleted EndReason = 1
	// EndClosedEarly: the recording stopped before the session's planned
	// end: the member left, the session was closed or timed out.
	EndClosedEarly EndReason = 2
	// EndFailed: the session stopped on a failure, such as a desync.
	EndFailed EndReason = 3
)

var endReasonNames = [...]string{
	EndCompleted:   "completed",
	EndClosedEarly: "closed early",
	EndFailed:      "failed",
}

// String returns "completed", "closed early", "failed" or "reason N".
func (r EndReason) String() string {
	if int(r) < len(endReasonNames) && endReasonNames[r] != "" {
		return endReasonNames[r]
	}
	return fmt.Sprintf("reason %d", uint8(r))
}

// Trailer ends a complete replay file.
type Trailer struct {
	Reason    EndReason
	Chunks    int          // number of chunks in the file
	LastFrame bucket.Frame // the last frame recorded, or -1
	FinalHash uint64       // the state hash after LastFrame
	Offset    int64        // the trailer's byte offset: the file size less TrailerSize
}

func appendTrailer(b []byte, t Trailer) []byte {
	start := len(b)
	b = append(b, blockTrailer, byte(t.Reason), 0, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(t.Chunks))
	b = binary.LittleEndian.AppendUint64(b, uint64(t.LastFrame))
	b = binary.LittleEndian.AppendUint64(b, t.FinalHash)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Offset))
	b = append(b, TrailerMagic...)
	return binary.LittleEndian.AppendUint32(b, crc(b[start:]))
}

// parseTrailer decodes the TrailerSize bytes of a trailer found at byte
// offset at.
func parseTrailer(b []byte, at int64) (Trailer, error) {
	if got, want := binary.LittleEndian.Uint32(b[40:]), crc(b[:40]); got != want {
		return Trailer{}, fmt.Errorf("%w: trailer at byte %d (CRC-32C stored %08x, computed %08x)", ErrChecksum, at, got, want)
	}
	t := Trailer{
		Reason:    EndReason(b[1]),
		Chunks:    int(binary.LittleEndian.Uint32(b[4:])),
		LastFrame: bucket.Frame(binary.LittleEndian.Uint64(b[8:])),
		FinalHash: binary.LittleEndian.Uint64(b[16:]),
		Offset:    int64(binary.LittleEndian.Uint64(b[24:])),
	}
	switch {
	case b[0] != blockTrailer || b[2] != 0 || b[3] != 0 || string(b[32:40]) != TrailerMagic:
		return t, fmt.Errorf("%w: trailer at byte %d: bad type, reserved bytes or magic", ErrMalformed, at)
	case t.LastFrame < -1:
		return t, fmt.Errorf("%w: trailer at byte %d: last frame %d", ErrMalformed, at, t.LastFrame)
	case t.Offset != at:
		return t, fmt.Errorf("%w: the trailer at byte %d says it is at byte %d (bytes were added or removed)", ErrMalformed, at, t.Offset)
	}
	return t, nil
}

// ChangeKind says what a membership change is.
type ChangeKind uint8

// Membership change kinds.
const (
	// ChangeDrop: the member was dropped (silent past the timeout, or
	// dropped for a protocol violation).
	ChangeDrop ChangeKind = 1
	// ChangeLeave: the member left at an announced frame.
	ChangeLeave ChangeKind = 2
	// ChangeRejoin: a member dropped before counts again from Frame on
	// (format version 3). Its commands from Frame on are a new stream:
	// their sequence numbers, and the statements recorded after this
	// change, count from 0 again.
	ChangeRejoin ChangeKind = 3
	// ChangeJoin: a member joined a slot open since the start and counts
	// from Frame on (format version 3); its commands as for ChangeRejoin.
	ChangeJoin ChangeKind = 4
	// ChangeSpectator: a spectator was admitted (format version 4): it
	// watches the session from Frame on, served by Member (the recording
	// member, or the member its tree of spectators hangs from). Spectators
	// send no commands and count for no seal, so the record changes
	// nothing a verifier re-runs; Detail names the spectator, LastFrame is
	// -1.
	ChangeSpectator ChangeKind = 5
)

// admission reports whether k admits a member (format version 3).
func (k ChangeKind) admission() bool { return k == ChangeRejoin || k == ChangeJoin }

// atFrame reports whether a change of kind k must come at or after the
// next frame to record: admissions and spectators take effect at a frame
// not stepped yet.
func (k ChangeKind) atFrame() bool { return k.admission() || k == ChangeSpectator }

// known reports whether a file of format version v may hold changes of
// kind k.
func (k ChangeKind) known(v int) bool {
	switch k {
	case ChangeDrop, ChangeLeave:
		return true
	case ChangeRejoin, ChangeJoin:
		return v >= 3
	case ChangeSpectator:
		return v >= 4
	}
	return false
}

var changeKindNames = [...]string{
	ChangeDrop:      "drop",
	ChangeLeave:     "leave",
	ChangeRejoin:    "rejoin",
	ChangeJoin:      "join",
	ChangeSpectator: "spectator",
}

// String returns "drop", "leave", "rejoin", "join", "spectator" or
// "change N".
func (k ChangeKind) String() string {
	if int(k) < len(changeKindNames) && changeKindNames[k] != "" {
		return changeKindNames[k]
	}
	return fmt.Sprintf("change %d", uint8(k))
}

// Change is a membership change: a member dropped, left, rejoined or
// joined late (LastFrame -1 for the last two).
type Change struct {
	Kind      ChangeKind
	Frame     bucket.Frame // the frame at which it took effect
	Member    bucket.Slot
	LastFrame bucket.Frame // the last frame of the member's commands that counts (-1: none)
	Detail    string       // why, for people (up to 1024 bytes)
}

// ChangeOf returns the membership change an engine event reports, and
// whether it reports one (drops and leaves do).
func ChangeOf(e lockstep.Event) (Change, bool) {
	c := Change{Frame: e.Frame, Member: e.Member, LastFrame: e.LastFrame, Detail: e.Detail}
	if e.Reason != "" && e.Type == lockstep.EventDrop {
		c.Detail = string(e.Reason) + ": " + e.Detail // the reason, in the format's one text field
	}
	switch e.Type {
	case lockstep.EventDrop:
		c.Kind = ChangeDrop
	case lockstep.EventLeave:
		c.Kind = ChangeLeave
	case lockstep.EventRejoin:
		c.Kind, c.LastFrame = ChangeRejoin, -1
	case lockstep.EventJoin:
		c.Kind, c.LastFrame = ChangeJoin, -1
	default:
		return Change{}, false
	}
	if len(c.Detail) > maxDetail {
		c.Detail = c.Detail[:maxDetail]
	}
	return c, true
}

func (c Change) String() string {
	if c.Kind == ChangeSpectator {
		s := fmt.Sprintf("spectator served by member %d from frame %d", c.Member, c.Frame)
		if c.Detail != "" {
			s += ": " + c.Detail
		}
		return s
	}
	s := fmt.Sprintf("%s of member %d at frame %d", c.Kind, c.Member, c.Frame)
	if !c.Kind.admission() {
		s += fmt.Sprintf(" (last frame %d)", c.LastFrame)
	}
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// Statement is a member's signed statement about its own command stream,
// as the recording member held it (lockstep.Core.ProvenStatement): its
// first Count commands chain to a value it signed with Seal, under the
// session tag Tag (see lockstep.AppendStatementMessage).
type Statement struct {
	Member    bucket.Slot
	Tag       uint16
	Seal      bucket.Frame
	Count     uint32
	Signature []byte
}
