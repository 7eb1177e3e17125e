package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/phalanx-net/phalanx/bucket"
)

// Kind is the first byte of every datagram and says what it carries.
type Kind byte

// Datagram kinds. Values not listed are reserved; a decoder rejects them.
const (
	KindLockstep Kind = 0x01 // a Packet: seals, acks, commands, timing, hashes
	KindEntity   Kind = 0x02 // reserved for dead-reckoned entity updates
)

// MaxDatagramSize is the default and largest datagram size: it stays under
// the smallest QUIC datagram payload on a 1280-byte IPv6 path.
const MaxDatagramSize = 1200

// Overhead is the number of bytes the network carries per datagram on top of
// its payload, as Phalanx counts bytes on the wire: 28 bytes of IPv4 and UDP
// headers plus a modeled QUIC 1-RTT packet of 28 bytes (1 flags byte, an
// 8-byte connection ID, a 2-byte packet number, a 16-byte AEAD tag and the
// 1-byte type of a DATAGRAM frame that is the packet's last frame, so without
// a length field). See docs/protocol.md, "Overhead on the wire".
const Overhead = 56

// Flag bits of a Packet. Bits not listed are reserved and must be zero.
const (
	flagEcho       = 1 << 0
	flagCommands   = 1 << 1
	flagHash       = 1 << 2
	flagMembership = 1 << 3
	flagLeave      = 1 << 4
	flagRelay      = 1 << 5
	flagDetail     = 1 << 6
	flagReasons    = 1 << 7 // with flagMembership: each view ends with a reason byte
	flagsKnown     = flagEcho | flagCommands | flagHash | flagMembership | flagLeave | flagRelay | flagDetail | flagReasons
)

// Errors returned by Parse. Every decoding error wraps ErrMalformed.
var (
	ErrMalformed = errors.New("wire: malformed datagram")
	ErrTooLarge  = errors.New("wire: datagram larger than the size limit")
)

// Command is one command as carried in a Packet: its frame and payload. Its
// sequence number follows from its position (see Packet.Next).
type Command struct {
	Frame   bucket.Frame
	Payload []byte
}

// Echo returns a received datagram's number to its sender with how long the
// receiver held it, so the sender can measure the round-trip time.
type Echo struct {
	Number uint16
	Hold   Ticks
}

// HashReport carries the state hash after an executed frame and the hash of
// the bucket stepped on it.
type HashReport struct {
	Frame bucket.Frame
	State uint64
	Input uint64
}

// Unknown is the value of MemberView.Last while the sender does not yet know
// every live member's report.
const Unknown bucket.Frame = -2

// Limits of the optional blocks, so that a decoder's work is bounded.
const (
	MaxDetailFrames = 32 // frames in one Detail
	MaxSections     = 64 // section hashes in one Detail
)

// MemberView is the sender's view of one member it suspects or has dropped.
type MemberView struct {
	Held bucket.Frame // the seal of that member's stream the sender held when it stopped listening to it: its report
	Seal bucket.Frame // the seal of that stream the sender holds now (relayed commands raise it)
	Next uint32       // the length of that stream's prefix the sender holds now
	Last bucket.Frame // the last frame of that member the sender's view agrees on, or Unknown
	// Reason says why the sender stopped listening to that member, as a
	// code of lockstep's (0: not said). It is written, one byte per view
	// after Last, only when some view of the block has one (flag bit 7).
	Reason uint8
}

// Membership is the sender's view of the session's failures: which members
// it suspects, has dropped or saw leave, and what it holds of each.
type Membership struct {
	Suspected uint64       // bit i set: member i suspected, dropped or gone
	Views     []MemberView // one per set bit, in increasing slot order
}

// hasReasons reports whether some view has a reason: the block then carries
// one byte of reason per view.
func (m *Membership) hasReasons() bool {
	for _, v := range m.Views {
		if v.Reason != 0 {
			return true
		}
	}
	return false
}

// Relay forwards commands of another member (one being dropped) that the
// receiver lacks: sequence numbers First .. First+len(Commands)-1, with that
// member's seal Seal, which holds once the receiver has every command below
// First+len(Commands). A Relay without commands forwards the seal alone.
//
// With HasStatement the relay carries the relayed member's own signed
// Statement, which the forwarder holds and which covers (a prefix of) what
// it forwards: the receiver checks the member's signature over the
// commands it then holds.
type Relay struct {
	Member   bucket.Slot
	First    uint32
	Seal     bucket.Frame
	Commands []Command

	HasStatement bool
	Statement    Statement
}

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

// Ticks is a duration or a clock reading in units of 100 microseconds.
type Ticks uint64

// Packet is a lockstep datagram from one member to another.
type Packet struct {
	Session uint16      // the session tag: datagrams of other sessions are refused
	From    bucket.Slot // sender slot
	Number  uint16      // datagram number on this sender→receiver path, wrapping

	Sent  Ticks // sender's clock when sent, since the sender started
	Clock Ticks // sender's frame clock: frames elapsed times the frame length

	Seal bucket.Frame // sender's seal: no further command of it at or below
	Next uint16       // sender's next sequence number (mod 2^16); the seal holds once the receiver has every command below it

	Ack     uint16       // the receiver's stream: the next sequence number the sender lacks (mod 2^16)
	AckSeal bucket.Frame // the receiver's seal as the sender holds it

	Lag Ticks // how late the receiver's datagrams reach the sender, by the frame clocks: the lead the receiver's seals need (docs/protocol.md)

	HasEcho bool
	Echo    Echo

	// Commands are the sender's commands with sequence numbers
	// Next-len(Commands) .. Next-1 (mod 2^16), oldest first, frames never
	// decreasing.
	Commands []Command

	HasHash bool
	Hash    HashReport

	HasMembership bool
	Membership    Membership

	HasLeave   bool
	LeaveFrame bucket.Frame // the sender leaves after this frame: its last frame

	HasRelay bool
	Relay    Relay

	HasDetail bool
	Detail    Detail

	// HasStatement: the datagram carries the sender's newest signed
	// Statement about its own stream (an extension block).
	HasStatement bool
	Statement    Statement
}

// headerLen is the fixed part: kind, session, from, number, flags, next, ack.
const headerLen = 1 + 2 + 1 + 2 + 1 + 2 + 2

func (p *Packet) flags() byte {
	var f byte
	if p.HasEcho {
		f |= flagEcho
	}
	if len(p.Commands) > 0 {
		f |= flagCommands
	}
	if p.HasHash {
		f |= flagHash
	}
	if p.HasMembership {
		f |= flagMembership
		if p.Membership.hasReasons() {
			f |= flagReasons
		}
	}
	if p.HasLeave {
		f |= flagLeave
	}
	if p.HasRelay {
		f |= flagRelay
	}
	if p.HasDetail {
		f |= flagDetail
	}
	return f
}

// Length returns the number of bytes Append writes for p.
func (p *Packet) Length() int {
	n := headerLen + uvarintLen(uint64(p.Sent)) + uvarintLen(uint64(p.Clock)) +
		uvarintLen(frameCode(p.Seal)) + uvarintLen(frameCode(p.AckSeal)) + uvarintLen(uint64(p.Lag))
	if p.HasEcho {
		n += 2 + uvarintLen(uint64(p.Echo.Hold))
	}
	if len(p.Commands) > 0 {
		n += commandsLength(p.Seal, p.Commands)
	}
	if p.HasHash {
		n += uvarintLen(frameCode(p.Hash.Frame)) + 16
	}
	if p.HasMembership {
		n += uvarintLen(p.Membership.Suspected)
		for _, v := range p.Membership.Views {
			n += uvarintLen(frameCode(v.Held)) + uvarintLen(frameCode(v.Seal)) + uvarintLen(uint64(v.Next)) + uvarintLen(uint64(v.Last+2))
		}
		if p.Membership.hasReasons() {
			n += len(p.Membership.Views)
		}
	}
	if p.HasLeave {
		n += uvarintLen(frameCode(p.LeaveFrame))
	}
	if p.HasRelay {
		r := &p.Relay
		n += 1 + uvarintLen(uint64(r.First)) + uvarintLen(frameCode(r.Seal)) + commandsLength(r.Seal, r.Commands)
	}
	if p.HasDetail {
		d := &p.Detail
		n += uvarintLen(frameCode(d.Start)) + uvarintLen(uint64(len(d.Frames))) + 16*len(d.Frames) +
			uvarintLen(uint64(len(d.Sections))) + 8*len(d.Sections)
	}
	if p.HasStatement {
		n += statementLength(&p.Statement)
	}
	if p.HasRelay && p.Relay.HasStatement {
		n += statementLength(&p.Relay.Statement)
	}
	return n
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

// Append appends the encoding of p to b. It returns an error if p cannot be
// encoded: a Seal, AckSeal or hash report frame outside [-1, 2^40), a command
// frame outside [0, 2^40), or command frames that decrease.
func (p *Packet) Append(b []byte) ([]byte, error) {
	if p.Seal < -1 || p.AckSeal < -1 || (p.HasHash && p.Hash.Frame < -1) ||
		p.Seal >= maxFrame || p.AckSeal >= maxFrame || (p.HasHash && p.Hash.Frame >= maxFrame) {
		return b, fmt.Errorf("wire: frame out of range (seal %d, ack seal %d, hash %d)", p.Seal, p.AckSeal, p.Hash.Frame)
	}
	for i, c := range p.Commands {
		if c.Frame < 0 || c.Frame >= maxFrame {
			return b, fmt.Errorf("wire: command %d has frame %d out of range", i, c.Frame)
		}
		if i > 0 && c.Frame < p.Commands[i-1].Frame {
			return b, fmt.Errorf("wire: command %d frame %d decreases from %d", i, c.Frame, p.Commands[i-1].Frame)
		}
	}
	if err := p.checkOptional(); err != nil {
		return b, err
	}
	b = append(b, byte(KindLockstep))
	b = binary.LittleEndian.AppendUint16(b, p.Session)
	b = append(b, byte(p.From))
	b = binary.LittleEndian.AppendUint16(b, p.Number)
	b = append(b, p.flags())
	b = binary.LittleEndian.AppendUint16(b, p.Next)
	b = binary.LittleEndian.AppendUint16(b, p.Ack)
	b = binary.AppendUvarint(b, uint64(p.Sent))
	b = binary.AppendUvarint(b, uint64(p.Clock))
	b = binary.AppendUvarint(b, frameCode(p.Seal))
	b = binary.AppendUvarint(b, frameCode(p.AckSeal))
	b = binary.AppendUvarint(b, uint64(p.Lag))
	if p.HasEcho {
		b = binary.LittleEndian.AppendUint16(b, p.Echo.Number)
		b = binary.AppendUvarint(b, uint64(p.Echo.Hold))
	}
	if len(p.Commands) > 0 {
		b = appendCommands(b, p.Seal, p.Commands)
	}
	if p.HasHash {
		b = binary.AppendUvarint(b, frameCode(p.Hash.Frame))
		b = binary.LittleEndian.AppendUint64(b, p.Hash.State)
		b = binary.LittleEndian.AppendUint64(b, p.Hash.Input)
	}
	if p.HasMembership {
		b = binary.AppendUvarint(b, p.Membership.Suspected)
		reasons := p.Membership.hasReasons()
		for _, v := range p.Membership.Views {
			b = binary.AppendUvarint(b, frameCode(v.Held))
			b = binary.AppendUvarint(b, frameCode(v.Seal))
			b = binary.AppendUvarint(b, uint64(v.Next))
			b = binary.AppendUvarint(b, uint64(v.Last+2))
			if reasons {
				b = append(b, v.Reason)
			}
		}
	}
	if p.HasLeave {
		b = binary.AppendUvarint(b, frameCode(p.LeaveFrame))
	}
	if p.HasRelay {
		r := &p.Relay
		b = append(b, byte(r.Member))
		b = binary.AppendUvarint(b, uint64(r.First))
		b = binary.AppendUvarint(b, frameCode(r.Seal))
		b = appendCommands(b, r.Seal, r.Commands)
	}
	if p.HasDetail {
		d := &p.Detail
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
	}
	if p.HasStatement {
		b = appendStatement(b, tagStatement, &p.Statement)
	}
	if p.HasRelay && p.Relay.HasStatement {
		b = appendStatement(b, tagRelayStatement, &p.Relay.Statement)
	}
	return b, nil
}

// checkOptional validates the optional blocks before encoding.
func (p *Packet) checkOptional() error {
	if p.HasMembership {
		m := &p.Membership
		if len(m.Views) != bits.OnesCount64(m.Suspected) {
			return fmt.Errorf("wire: %d member views for %d suspected members", len(m.Views), bits.OnesCount64(m.Suspected))
		}
		for i, v := range m.Views {
			if v.Held < -1 || v.Held >= maxFrame || v.Seal < -1 || v.Seal >= maxFrame || v.Last < Unknown || v.Last >= maxFrame {
				return fmt.Errorf("wire: member view %d out of range: held %d, last %d", i, v.Held, v.Last)
			}
		}
	}
	if p.HasLeave && (p.LeaveFrame < -1 || p.LeaveFrame >= maxFrame) {
		return fmt.Errorf("wire: leave frame %d out of range", p.LeaveFrame)
	}
	if p.HasRelay {
		r := &p.Relay
		if r.Seal < -1 || r.Seal >= maxFrame {
			return fmt.Errorf("wire: relay of %d commands with seal %d", len(r.Commands), r.Seal)
		}
		for i, c := range r.Commands {
			if c.Frame < 0 || c.Frame >= maxFrame || (i > 0 && c.Frame < r.Commands[i-1].Frame) {
				return fmt.Errorf("wire: relayed command %d has frame %d", i, c.Frame)
			}
		}
	}
	if p.HasDetail {
		d := &p.Detail
		if len(d.Frames) == 0 || len(d.Frames) > MaxDetailFrames || len(d.Sections) > MaxSections || d.Start < 0 || d.Start >= maxFrame {
			return fmt.Errorf("wire: detail of %d frames and %d sections from frame %d", len(d.Frames), len(d.Sections), d.Start)
		}
	}
	if p.HasStatement {
		if err := checkStatement(&p.Statement, "statement"); err != nil {
			return err
		}
	}
	if p.HasRelay && p.Relay.HasStatement {
		if err := checkStatement(&p.Relay.Statement, "relay statement"); err != nil {
			return err
		}
	}
	return nil
}

// maxFrame bounds decoded frame numbers (2^40 frames is 1,700 years at 20 Hz)
// so that frame arithmetic can never overflow.
const maxFrame = 1 << 40

// Parse decodes a datagram into p, reusing p.Commands' storage. Command
// payloads alias b. On error p holds partial garbage; the error wraps
// ErrMalformed and says what was wrong and at which byte offset. Parse never
// panics.
func Parse(b []byte, p *Packet) error {
	cmds := p.Commands[:0]
	views, relayed := p.Membership.Views[:0], p.Relay.Commands[:0]
	detail, sections := p.Detail.Frames[:0], p.Detail.Sections[:0]
	*p = Packet{Commands: cmds}
	p.Membership.Views, p.Relay.Commands = views, relayed
	p.Detail.Frames, p.Detail.Sections = detail, sections // keep the storage even if decoding fails
	r := reader{b: b}
	if len(b) > MaxDatagramSize {
		return fmt.Errorf("%w: %d bytes: %w", ErrMalformed, len(b), ErrTooLarge)
	}
	kind := r.byte()
	if r.err == nil && Kind(kind) != KindLockstep {
		return fmt.Errorf("%w: kind %#02x is not a lockstep datagram", ErrMalformed, kind)
	}
	p.Session = r.uint16()
	p.From = bucket.Slot(r.byte())
	p.Number = r.uint16()
	flags := r.byte()
	p.Next = r.uint16()
	p.Ack = r.uint16()
	if r.err != nil {
		return r.fail("header")
	}
	if flags&^flagsKnown != 0 {
		return fmt.Errorf("%w: reserved flag bits %#02x set", ErrMalformed, flags&^flagsKnown)
	}
	if flags&flagReasons != 0 && flags&flagMembership == 0 {
		return fmt.Errorf("%w: reasons flag without a membership block", ErrMalformed)
	}
	p.Sent = Ticks(r.uvarint())
	p.Clock = Ticks(r.uvarint())
	p.Seal = r.frame()
	p.AckSeal = r.frame()
	p.Lag = Ticks(r.uvarint())
	if r.err != nil {
		return r.fail("timing and seals")
	}
	if flags&flagEcho != 0 {
		p.HasEcho = true
		p.Echo.Number = r.uint16()
		p.Echo.Hold = Ticks(r.uvarint())
		if r.err != nil {
			return r.fail("echo")
		}
	}
	if flags&flagCommands != 0 {
		var err error
		if p.Commands, err = r.commands(p.Seal, cmds, "command"); err != nil {
			return err
		}
	}
	if flags&flagHash != 0 {
		p.HasHash = true
		p.Hash.Frame = r.frame()
		p.Hash.State = r.uint64()
		p.Hash.Input = r.uint64()
		if r.err != nil {
			return r.fail("hash report")
		}
	}
	if flags&flagMembership != 0 {
		p.HasMembership = true
		m := &p.Membership
		m.Suspected = r.uvarint()
		for i := range bits.OnesCount64(m.Suspected) {
			v := MemberView{Held: r.frame(), Seal: r.frame(), Next: r.uint32()}
			if last := r.uvarint(); last <= maxFrame+1 {
				v.Last = bucket.Frame(last) - 2
			} else {
				r.setErr("frame out of range")
			}
			if flags&flagReasons != 0 {
				v.Reason = r.byte()
			}
			if r.err != nil {
				return r.fail(fmt.Sprintf("member view %d", i))
			}
			m.Views = append(m.Views, v)
		}
		if r.err != nil {
			return r.fail("membership")
		}
	}
	if flags&flagLeave != 0 {
		p.HasLeave = true
		p.LeaveFrame = r.frame()
		if r.err != nil {
			return r.fail("leave frame")
		}
	}
	if flags&flagRelay != 0 {
		p.HasRelay = true
		rl := &p.Relay
		rl.Member = bucket.Slot(r.byte())
		rl.First = r.uint32()
		rl.Seal = r.frame()
		if r.err != nil {
			return r.fail("relay")
		}
		if n := r.peekByte(); r.err == nil && n == 0 {
			r.off++ // a relayed seal without commands
		} else {
			var err error
			if rl.Commands, err = r.commands(rl.Seal, rl.Commands, "relayed command"); err != nil {
				return err
			}
		}
	}
	if flags&flagDetail != 0 {
		p.HasDetail = true
		d := &p.Detail
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
	}
	return r.parseExtensions(p)
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
