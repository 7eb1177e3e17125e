package reckon

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzParseUpdate feeds ParseUpdate arbitrary datagrams, as 2D and as 3D.
// It must never panic, every error must wrap ErrMalformed or ErrDimensions,
// and whatever it accepts must re-encode to at most as many bytes (a varint
// may have been non-minimal, a zero vector spelled out) that decode to the
// same update and encode again to the same bytes.
func FuzzParseUpdate(f *testing.F) {
	for _, u := range updates2() {
		f.Add(AppendUpdate(nil, u))
	}
	for _, u := range updates3() {
		f.Add(AppendUpdate(nil, u))
	}
	f.Add([]byte{})
	f.Add([]byte{DatagramKind, 0xFF})
	f.Add([]byte{DatagramKind, 0, 0x80, 0x00, 0, 0, 0x80, 0x00, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		fuzzOne[Vec2](t, in)
		fuzzOne[Vec3](t, in)
	})
}

func fuzzOne[V Vector[V]](t *testing.T, in []byte) {
	u, err := ParseUpdate[V](in)
	if err != nil {
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrDimensions) {
			t.Fatalf("error %v wraps neither ErrMalformed nor ErrDimensions", err)
		}
		return
	}
	out := AppendUpdate(nil, u)
	if len(out) > len(in) {
		t.Fatalf("re-encoding is %d bytes, longer than the %d-byte input", len(out), len(in))
	}
	v, err := ParseUpdate[V](out)
	if err != nil || v != u {
		t.Fatalf("re-encoding decodes to %+v, %v; want %+v", v, err, u)
	}
	if again := AppendUpdate(nil, v); !bytes.Equal(again, out) {
		t.Fatalf("encoding is not a fixed point:\n% x\n% x", out, again)
	}
}
