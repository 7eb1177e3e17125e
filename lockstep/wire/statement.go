package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// MaxSignatureSize bounds the signature of a Statement (an Ed25519
// signature takes 64 bytes).
const MaxSignatureSize = 128

// Extension block tags. Extension blocks follow the flagged blocks, each
// opened by its tag, in increasing tag order, each at most once; a decoder
// rejects other tags.
const (
	tagStatement      = 0x01 // the sender's own statement
	tagRelayStatement = 0x02 // the relayed member's statement and the forwarder's chain (needs a Relay)
)

// Statement is a member's signed claim about its own command stream: its
// first Count commands (frames, sequence numbers and payloads, in order)
// hash to a chain value, and its seal was Seal. The chain value itself is
// not carried: the receiver recomputes it over the commands it holds and
// checks Signature over the result (see lockstep's StatementMessage).
type Statement struct {
	Seal      bucket.Frame
	Count     uint32
	Signature []byte // aliases the datagram after Parse
}

// statementLength returns the bytes appendStatement writes, tag included.
func statementLength(s *Statement) int {
	return 1 + uvarintLen(frameCode(s.Seal)) + uvarintLen(uint64(s.Count)) +
		uvarintLen(uint64(len(s.Signature))) + len(s.Signature)
}

// StatementLength returns the bytes a Statement adds to a Packet, its tag
// included. A relay's statement adds ChainSize more, its Chain.
func StatementLength(s Statement) int { return statementLength(&s) }

func appendStatement(b []byte, tag byte, s *Statement) []byte {
	b = append(b, tag)
	b = binary.AppendUvarint(b, frameCode(s.Seal))
	b = binary.AppendUvarint(b, uint64(s.Count))
	b = binary.AppendUvarint(b, uint64(len(s.Signature)))
	return append(b, s.Signature...)
}

func checkStatement(s *Statement, what string) error {
	if s.Seal < -1 || s.Seal >= maxFrame || len(s.Signature) > MaxSignatureSize {
		return fmt.Errorf("wire: %s with seal %d and a signature of %d bytes", what, s.Seal, len(s.Signature))
	}
	return nil
}

func (r *reader) statement(s *Statement) {
	s.Seal = r.frame()
	s.Count = r.uint32()
	n := r.uvarint()
	if r.err == nil && n > MaxSignatureSize {
		r.setErr("signature too long")
		return
	}
	s.Signature = r.bytes(n)
}

// parseExtensions decodes the extension blocks that end a datagram.
func (r *reader) parseExtensions(p *Packet) error {
	last := 0
	for r.err == nil && r.off < len(r.b) {
		tag := int(r.byte())
		if tag <= last {
			return fmt.Errorf("%w: extension tag %#02x after %#02x at offset %d", ErrMalformed, tag, last, r.off-1)
		}
		last = tag
		switch tag {
		case tagStatement:
			p.HasStatement = true
			r.statement(&p.Statement)
		case tagRelayStatement:
			if !p.HasRelay {
				return fmt.Errorf("%w: relay statement without a relay at offset %d", ErrMalformed, r.off-1)
			}
			p.Relay.HasStatement = true
			r.statement(&p.Relay.Statement)
			copy(p.Relay.Chain[:], r.bytes(ChainSize))
		case tagAdmissions:
			r.admissions(p)
		case tagSeals:
			r.seals(p)
		default:
			return fmt.Errorf("%w: unknown extension tag %#02x at offset %d", ErrMalformed, tag, r.off-1)
		}
		if r.err != nil {
			return r.fail("statement")
		}
	}
	return nil
}
