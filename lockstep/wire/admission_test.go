package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

var testAdmissions = []Admission{
	{Slot: 2, Flags: AdmitSettled, Proposal: 640, Frame: Unknown},
	{Slot: 5, Flags: AdmitFinal | AdmitLate, Proposal: 700, Frame: 700, Start: 70000, Dropped: 1 << 3},
	{Slot: 6, Flags: AdmitRequest, Proposal: -1, Frame: Unknown},
}

// TestAdmissionsLayout pins the admissions block byte by byte, as
// docs/protocol.md describes it.
func TestAdmissionsLayout(t *testing.T) {
	p := Packet{Seal: 9, AckSeal: 9, Admissions: testAdmissions[:2]}
	b := mustAppend(t, &p)
	want := cat([]byte{0x03, 0x02},
		[]byte{0x02, 0x08}, uv(641), []byte{0x00}, []byte{0x00}, []byte{0x00},
		[]byte{0x05, 0x06}, uv(701), uv(702), uv(70000), uv(8))
	if !bytes.HasSuffix(b, want) {
		t.Fatalf("datagram % x\nwant suffix % x", b, want)
	}
	if n := admissionsLength(p.Admissions); n != len(want) {
		t.Fatalf("admissionsLength %d, want %d", n, len(want))
	}
}

// TestAdmissionsRoundTrip decodes what it encodes, and refuses the
// datagram cut at every byte of the block.
func TestAdmissionsRoundTrip(t *testing.T) {
	p := Packet{Seal: 700, AckSeal: 699, HasStatement: true, Statement: Statement{Seal: 3, Count: 1, Signature: []byte{1, 2}}, Admissions: testAdmissions}
	b := mustAppend(t, &p)
	if len(b) != p.Length() {
		t.Fatalf("Length %d, encoded %d", p.Length(), len(b))
	}
	var q Packet
	if err := Parse(b, &q); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(q.Admissions, p.Admissions) {
		t.Fatalf("decoded %+v\nwant %+v", q.Admissions, p.Admissions)
	}
	start := len(b) - admissionsLength(p.Admissions)
	for n := start + 1; n < len(b); n++ {
		if err := Parse(b[:n], &q); !errors.Is(err, ErrMalformed) {
			t.Fatalf("cut at %d of %d: %v", n, len(b), err)
		}
	}
	// Parse reuses the storage and empties it for a datagram without
	// admissions.
	if err := Parse(mustAppend(t, &Packet{Seal: 1}), &q); err != nil || len(q.Admissions) != 0 {
		t.Fatalf("%v, %d admissions left", err, len(q.Admissions))
	}
}

func TestAdmissionsErrors(t *testing.T) {
	base := cat(header(0), timing)
	entry := func(flags byte, frame uint64) []byte {
		return cat([]byte{0x01, flags}, uv(10), uv(frame), uv(0), uv(0))
	}
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"no entries", cat(base, []byte{0x03, 0x00})},
		{"too many entries", cat(base, []byte{0x03}, uv(MaxAdmissions+1), entry(0, 0))},
		{"unknown flag", cat(base, []byte{0x03, 0x01}, entry(0x10, 0))},
		{"frame out of range", cat(base, []byte{0x03, 0x01}, entry(0, maxFrame+2))},
		{"after a later tag", cat(base, []byte{0x03, 0x01}, entry(0, 0), []byte{0x01}, uv(5), uv(2), uv(0))},
	} {
		var p Packet
		if err := Parse(tt.in, &p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", tt.name, err)
		}
	}
	if _, err := (&Packet{Admissions: []Admission{{Flags: 0x80}}}).Append(nil); err == nil {
		t.Error("Append encoded an unknown flag")
	}
	if _, err := (&Packet{Admissions: []Admission{{Frame: Unknown - 1}}}).Append(nil); err == nil {
		t.Error("Append encoded a frame below Unknown")
	}
}
