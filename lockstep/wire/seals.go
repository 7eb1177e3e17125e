package wire

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/phalanx-net/phalanx/bucket"
)

// tagSeals opens the held-seals extension block.
const tagSeals = 0x04

// HeldSeal is another member's seal as the sender holds it: Member's seal
// Seal, which holds once the receiver has every command of Member below
// Next (mod 2^16). A receiver that holds that prefix may take the seal as
// Member's own promise: members forward each other's seals so that a seal
// lost on its direct path arrives by another (docs/protocol.md, "Held
// seals").
type HeldSeal struct {
	Member bucket.Slot
	Seal   bucket.Frame
	Next   uint16
}

// sealsLength returns the bytes appendSeals writes for hs behind a packet
// sealed at base: the tag, a mask of the members, then per member its seal
// as the zigzag varint of its difference from base and its Next as a varint.
func sealsLength(base bucket.Frame, hs []HeldSeal) int {
	if len(hs) == 0 {
		return 0
	}
	var mask uint64
	n := 1
	for _, h := range hs {
		mask |= 1 << h.Member
		n += uvarintLen(zigzag(int64(h.Seal-base))) + uvarintLen(uint64(h.Next))
	}
	return n + uvarintLen(mask)
}

// checkSeals reports held seals Append cannot encode: members out of range
// or not in increasing order, seals outside [-1, 2^40).
func checkSeals(hs []HeldSeal) error {
	for i, h := range hs {
		if int(h.Member) >= bucket.MaxMembers || (i > 0 && h.Member <= hs[i-1].Member) || h.Seal < -1 || h.Seal >= maxFrame {
			return fmt.Errorf("wire: held seal %d of member %d at frame %d", i, h.Member, h.Seal)
		}
	}
	return nil
}

func appendSeals(b []byte, base bucket.Frame, hs []HeldSeal) []byte {
	if len(hs) == 0 {
		return b
	}
	var mask uint64
	for _, h := range hs {
		mask |= 1 << h.Member
	}
	b = append(b, tagSeals)
	b = binary.AppendUvarint(b, mask)
	for _, h := range hs {
		b = binary.AppendUvarint(b, zigzag(int64(h.Seal-base)))
		b = binary.AppendUvarint(b, uint64(h.Next))
	}
	return b
}

// seals decodes a held-seals block after its tag into p.
func (r *reader) seals(p *Packet) {
	mask := r.uvarint()
	if r.err == nil && mask == 0 {
		r.setErr("held seals' member mask out of range")
		return
	}
	for mask != 0 && r.err == nil {
		m := bucket.Slot(bits.TrailingZeros64(mask))
		mask &= mask - 1
		seal := r.frameFrom(p.Seal)
		next := r.seq16()
		if r.err != nil {
			return
		}
		p.Seals = append(p.Seals, HeldSeal{Member: m, Seal: seal, Next: next})
	}
}
