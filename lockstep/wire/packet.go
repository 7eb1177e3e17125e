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
	Admissions   []Admission // the admissions extension block (admission.go); none when empty
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
	n += admissionsLength(p.Admissions)
	return n
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
	b = appendAdmissions(b, p.Admissions)
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
	return checkAdmissions(p.Admissions)
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
	*p = Packet{Commands: cmds, Admissions: p.Admissions[:0]}
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
