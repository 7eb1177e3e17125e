package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// tagAdmissions opens the admissions extension block (protocol version 4).
const tagAdmissions = 0x03

// Admission flags.
const (
	// AdmitRequest: the sender asks to be admitted into slot Slot (its
	// own); nothing else of the datagram counts.
	AdmitRequest = 1 << 0
	// AdmitFinal: the sender agreed on the admission: Frame is the agreed
	// frame, and Start and Dropped are set.
	AdmitFinal = 1 << 1
	// AdmitLate: the slot was open when the session began (a late join),
	// not a member dropped before (a rejoin).
	AdmitLate = 1 << 2
	// AdmitSettled: the sender has no drop pending, and its Proposal
	// already lies two frames past the last frame of every drop it agreed
	// on. An admission is agreed only on settled entries.
	AdmitSettled    = 1 << 3
	admitFlagsKnown = AdmitRequest | AdmitFinal | AdmitLate | AdmitSettled
)

// MaxAdmissions bounds the entries of one admissions block.
const MaxAdmissions = bucket.MaxMembers

// Admission is one entry of an admissions block: the sender's view of the
// admission of a member into slot Slot, agreed like a drop (see
// docs/protocol.md §10.11).
type Admission struct {
	Slot  bucket.Slot
	Flags uint8
	// Proposal is the first frame the sender could admit the member at
	// (its executed frame plus a margin, frozen when it first heard of the
	// admission); once final, the agreed frame.
	Proposal bucket.Frame
	// Frame is the sender's candidate for the admission frame: the largest
	// Proposal of the members it listens to, Unknown while one of them has
	// not named the slot; once final, the agreed frame.
	Frame bucket.Frame
	// Start is, once final, the sequence number of the sender's own first
	// command the admitted member gets from it (the sender's Next when it
	// agreed). Zero otherwise.
	Start uint32
	// Dropped is, once final, the set of members whose drop the sender had
	// agreed on (bit i: slot i), so that the admitted member knows whom
	// not to wait for. Zero otherwise.
	Dropped uint64
}

// admissionsLength returns the bytes appendAdmissions writes, tag included,
// or 0 for no entries.
func admissionsLength(as []Admission) int {
	if len(as) == 0 {
		return 0
	}
	n := 1 + uvarintLen(uint64(len(as)))
	for i := range as {
		a := &as[i]
		n += 2 + uvarintLen(frameCode(a.Proposal)) + uvarintLen(uint64(a.Frame+2)) +
			uvarintLen(uint64(a.Start)) + uvarintLen(a.Dropped)
	}
	return n
}

// checkAdmissions reports an entry Append cannot encode.
func checkAdmissions(as []Admission) error {
	if len(as) > MaxAdmissions {
		return fmt.Errorf("wire: %d admissions, at most %d", len(as), MaxAdmissions)
	}
	for _, a := range as {
		if a.Flags&^admitFlagsKnown != 0 || a.Proposal < -1 || a.Proposal >= maxFrame || a.Frame < Unknown || a.Frame >= maxFrame {
			return fmt.Errorf("wire: admission of slot %d with flags %#02x, proposal %d, frame %d", a.Slot, a.Flags, a.Proposal, a.Frame)
		}
	}
	return nil
}

func appendAdmissions(b []byte, as []Admission) []byte {
	if len(as) == 0 {
		return b
	}
	b = append(b, tagAdmissions)
	b = binary.AppendUvarint(b, uint64(len(as)))
	for _, a := range as {
		b = append(b, byte(a.Slot), a.Flags)
		b = binary.AppendUvarint(b, frameCode(a.Proposal))
		b = binary.AppendUvarint(b, uint64(a.Frame+2))
		b = binary.AppendUvarint(b, uint64(a.Start))
		b = binary.AppendUvarint(b, a.Dropped)
	}
	return b
}

// admissions decodes an admissions block after its tag into p.
func (r *reader) admissions(p *Packet) {
	n := r.uvarint()
	if r.err == nil && (n == 0 || n > MaxAdmissions) {
		r.setErr("admission count out of range")
		return
	}
	for range n {
		var a Admission
		a.Slot = bucket.Slot(r.byte())
		a.Flags = r.byte()
		a.Proposal = r.frame()
		f := r.uvarint()
		a.Start = r.uint32()
		a.Dropped = r.uvarint()
		if r.err != nil {
			return
		}
		if a.Flags&^admitFlagsKnown != 0 || f > maxFrame+1 {
			r.setErr("admission flags or frame out of range")
			return
		}
		a.Frame = bucket.Frame(f) - 2
		p.Admissions = append(p.Admissions, a)
	}
}
