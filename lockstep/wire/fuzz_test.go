package wire

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParse feeds Parse arbitrary datagrams. Parse must never panic, must
// wrap ErrMalformed in every error, and whatever it accepts must re-encode to
// exactly Length() bytes that decode to the same packet. The re-encoding may
// differ from the input (a varint may have been non-minimal), but it is never
// longer and it is a fixed point: encoding it again gives the same bytes.
func FuzzParse(f *testing.F) {
	for _, tt := range testPackets() {
		b, err := tt.p.Append(nil)
		if err != nil {
			f.Fatalf("%s: %v", tt.name, err)
		}
		f.Add(b)
	}
	doc := docExamplePacket()
	b, err := doc.Append(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	// Near misses: non-minimal varints, a reserved bit, a wrong kind, a
	// non-minimal zero relay count, a detail of no frames.
	f.Add(cat(header(0), []byte{0x80, 0x00, 0x81, 0x80, 0x00, 0x80, 0x00, 0x80, 0x00, 0x80, 0x80, 0x00}))
	f.Add(cat(header(flagCommands|flagEcho|flagHash|1<<7), timing))
	f.Add(cat([]byte{byte(KindEntity)}, header(0)[1:], timing))
	f.Add(cat(header(flagRelay), timing, []byte{3}, uv(9), uv(10), []byte{0x80, 0x00}))
	f.Add(cat(header(flagDetail), timing, uv(10), uv(0), uv(0)))
	f.Add(cat(header(flagMembership|flagReasons), timing, uv(1<<2), []byte{0x04, 0x04, 0x03, 0x06, 0x04}))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, in []byte) {
		p := Packet{Commands: make([]Command, 0, 2)}
		if err := Parse(in, &p); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		out, err := p.Append(nil)
		if err != nil {
			t.Fatalf("Append of a decoded packet: %v\n%+v", err, p)
		}
		if len(out) != p.Length() {
			t.Fatalf("Append wrote %d bytes, Length says %d", len(out), p.Length())
		}
		if len(out) > len(in) {
			t.Fatalf("re-encoding is %d bytes, longer than the %d-byte input", len(out), len(in))
		}
		var q Packet
		if err := Parse(out, &q); err != nil {
			t.Fatalf("Parse of the re-encoding: %v\n% x", err, out)
		}
		if !equalPackets(p, q) {
			t.Fatalf("re-encoding decodes differently\n got %+v\nwant %+v", q, p)
		}
		again, err := q.Append(nil)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("re-encoding is not a fixed point (%v)\n got % x\nwant % x", err, again, out)
		}
	})
}
