package wire

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/phalanx-net/phalanx/bucket"
)

// Unknown is the value of MemberView.Last while the sender does not yet know
// every live member's report.
const Unknown bucket.Frame = -2

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

// check reports why m cannot be encoded, if it cannot.
func (m *Membership) check() error {
	if len(m.Views) != bits.OnesCount64(m.Suspected) {
		return fmt.Errorf("wire: %d member views for %d suspected members", len(m.Views), bits.OnesCount64(m.Suspected))
	}
	for i, v := range m.Views {
		if v.Held < -1 || v.Held >= maxFrame || v.Seal < -1 || v.Seal >= maxFrame || v.Last < Unknown || v.Last >= maxFrame {
			return fmt.Errorf("wire: member view %d out of range: held %d, last %d", i, v.Held, v.Last)
		}
	}
	return nil
}

// length returns the bytes appendTo writes.
func (m *Membership) length() int {
	n := uvarintLen(m.Suspected)
	for _, v := range m.Views {
		n += uvarintLen(frameCode(v.Held)) + uvarintLen(frameCode(v.Seal)) + uvarintLen(uint64(v.Next)) + uvarintLen(uint64(v.Last+2))
	}
	if m.hasReasons() {
		n += len(m.Views)
	}
	return n
}

// appendTo appends the membership block: the suspected set, then per view
// its held seal, seal, next and last frame (Last+2, so Unknown is 0), and
// its reason byte when some view has a reason.
func (m *Membership) appendTo(b []byte) []byte {
	b = binary.AppendUvarint(b, m.Suspected)
	reasons := m.hasReasons()
	for _, v := range m.Views {
		b = binary.AppendUvarint(b, frameCode(v.Held))
		b = binary.AppendUvarint(b, frameCode(v.Seal))
		b = binary.AppendUvarint(b, uint64(v.Next))
		b = binary.AppendUvarint(b, uint64(v.Last+2))
		if reasons {
			b = append(b, v.Reason)
		}
	}
	return b
}

// parse decodes a membership block into m, appending to m.Views; reasons is
// the datagram's flag saying each view ends with a reason byte.
func (m *Membership) parse(r *reader, reasons bool) error {
	m.Suspected = r.uvarint()
	for i := range bits.OnesCount64(m.Suspected) {
		v := MemberView{Held: r.frame(), Seal: r.frame(), Next: r.uint32()}
		if last := r.uvarint(); last <= maxFrame+1 {
			v.Last = bucket.Frame(last) - 2
		} else {
			r.setErr("frame out of range")
		}
		if reasons {
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
	return nil
}
