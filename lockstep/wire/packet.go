package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// Version is the version of the datagram format this package writes and
// reads. Members of different versions cannot play together: the lobby
// compares versions (peer.ProtocolVersion), and docs/protocol.md says what
// each changed.
const Version = 7

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

	Sent  Ticks // sender's clock when sent, since the sender started, modulo 2^16 (6.5536 s): below 2^16; a receiver unwraps it (UnwrapTicks16)
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
	// Seals are other members' seals as the sender holds them, members
	// increasing (the held-seals extension block, seals.go); none when
	// empty.
	Seals []HeldSeal
}

// headerLen is the fixed part: kind, session, from, number, flags.
const headerLen = 1 + 2 + 1 + 2 + 1

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
	n := headerLen + uvarintLen(uint64(p.Next)) + uvarintLen(uint64(p.Ack)) +
		2 + uvarintLen(uint64(p.Clock)) +
		uvarintLen(frameCode(p.Seal)) + uvarintLen(zigzag(int64(p.AckSeal-p.Seal))) + uvarintLen(uint64(p.Lag))
	if p.HasEcho {
		n += p.Echo.length()
	}
	if len(p.Commands) > 0 {
		n += commandsLength(p.Seal, p.Commands)
	}
	if p.HasHash {
		n += p.Hash.length()
	}
	if p.HasMembership {
		n += p.Membership.length()
	}
	if p.HasLeave {
		n += leaveLength(p.LeaveFrame)
	}
	if p.HasRelay {
		n += p.Relay.length()
	}
	if p.HasDetail {
		n += p.Detail.length()
	}
	if p.HasStatement {
		n += statementLength(&p.Statement)
	}
	if p.HasRelay && p.Relay.HasStatement {
		n += statementLength(&p.Relay.Statement) + ChainSize
	}
	n += admissionsLength(p.Admissions)
	n += sealsLength(p.Seal, p.Seals)
	return n
}

// Append appends the encoding of p to b. It returns an error if p cannot be
// encoded: a Seal, AckSeal or hash report frame outside [-1, 2^40), a command
// frame outside [0, 2^40), command frames that decrease, or Sent above
// 2^16 - 1.
func (p *Packet) Append(b []byte) ([]byte, error) {
	if p.Sent > 0xFFFF {
		return b, fmt.Errorf("wire: sent time %d exceeds 16 bits", p.Sent)
	}
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
	b = binary.AppendUvarint(b, uint64(p.Next))
	b = binary.AppendUvarint(b, uint64(p.Ack))
	b = binary.LittleEndian.AppendUint16(b, uint16(p.Sent))
	b = binary.AppendUvarint(b, uint64(p.Clock))
	b = binary.AppendUvarint(b, frameCode(p.Seal))
	b = binary.AppendUvarint(b, zigzag(int64(p.AckSeal-p.Seal)))
	b = binary.AppendUvarint(b, uint64(p.Lag))
	if p.HasEcho {
		b = p.Echo.appendTo(b)
	}
	if len(p.Commands) > 0 {
		b = appendCommands(b, p.Seal, p.Commands)
	}
	if p.HasHash {
		b = p.Hash.appendTo(b)
	}
	if p.HasMembership {
		b = p.Membership.appendTo(b)
	}
	if p.HasLeave {
		b = appendLeave(b, p.LeaveFrame)
	}
	if p.HasRelay {
		b = p.Relay.appendTo(b)
	}
	if p.HasDetail {
		b = p.Detail.appendTo(b)
	}
	if p.HasStatement {
		b = appendStatement(b, tagStatement, &p.Statement)
	}
	if p.HasRelay && p.Relay.HasStatement {
		b = appendStatement(b, tagRelayStatement, &p.Relay.Statement)
		b = append(b, p.Relay.Chain[:]...)
	}
	b = appendAdmissions(b, p.Admissions)
	b = appendSeals(b, p.Seal, p.Seals)
	return b, nil
}

// checkOptional validates the optional blocks before encoding.
func (p *Packet) checkOptional() error {
	if p.HasMembership {
		if err := p.Membership.check(); err != nil {
			return err
		}
	}
	if p.HasLeave {
		if err := checkLeave(p.LeaveFrame); err != nil {
			return err
		}
	}
	if p.HasRelay {
		if err := p.Relay.check(); err != nil {
			return err
		}
	}
	if p.HasDetail {
		if err := p.Detail.check(); err != nil {
			return err
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
	if err := checkSeals(p.Seals); err != nil {
		return err
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
	*p = Packet{Commands: cmds, Admissions: p.Admissions[:0], Seals: p.Seals[:0]}
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
	if r.err != nil {
		return r.fail("header")
	}
	if flags&^flagsKnown != 0 {
		return fmt.Errorf("%w: reserved flag bits %#02x set", ErrMalformed, flags&^flagsKnown)
	}
	if flags&flagReasons != 0 && flags&flagMembership == 0 {
		return fmt.Errorf("%w: reasons flag without a membership block", ErrMalformed)
	}
	p.Next = r.seq16()
	p.Ack = r.seq16()
	if r.err != nil {
		return r.fail("next and ack")
	}
	p.Sent = Ticks(r.uint16())
	p.Clock = Ticks(r.uvarint())
	p.Seal = r.frame()
	p.AckSeal = r.frameFrom(p.Seal)
	p.Lag = Ticks(r.uvarint())
	if r.err != nil {
		return r.fail("timing and seals")
	}
	// Each block in flag order; the first that fails ends the decoding.
	var err error
	if flags&flagEcho != 0 {
		p.HasEcho, err = true, p.Echo.parse(&r)
	}
	if err == nil && flags&flagCommands != 0 {
		p.Commands, err = r.commands(p.Seal, cmds, "command")
	}
	if err == nil && flags&flagHash != 0 {
		p.HasHash, err = true, p.Hash.parse(&r)
	}
	if err == nil && flags&flagMembership != 0 {
		p.HasMembership, err = true, p.Membership.parse(&r, flags&flagReasons != 0)
	}
	if err == nil && flags&flagLeave != 0 {
		p.HasLeave = true
		p.LeaveFrame, err = parseLeave(&r)
	}
	if err == nil && flags&flagRelay != 0 {
		p.HasRelay, err = true, p.Relay.parse(&r)
	}
	if err == nil && flags&flagDetail != 0 {
		p.HasDetail, err = true, p.Detail.parse(&r)
	}
	if err != nil {
		return err
	}
	return r.parseExtensions(p)
}
