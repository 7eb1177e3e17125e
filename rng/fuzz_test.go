package rng

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzUnmarshalBinary restores arbitrary bytes as a PCG state: either an
// error wrapping ErrInvalidState that leaves the generator as it was, or a
// state whose encoding is exactly the input.
func FuzzUnmarshalBinary(f *testing.F) {
	p := New(11, 13)
	good, _ := p.MarshalBinary()
	f.Add(good)
	f.Add(good[:len(good)-1])
	even := bytes.Clone(good)
	even[len(even)-1] &^= 1
	f.Add(even)
	f.Add([]byte("pcg64:0123456789abcdef"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := New(1, 2)
		before, _ := g.MarshalBinary()
		if err := g.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrInvalidState) {
				t.Fatalf("error without ErrInvalidState: %v", err)
			}
			if after, _ := g.MarshalBinary(); !bytes.Equal(after, before) {
				t.Fatalf("a refused encoding changed the generator")
			}
			return
		}
		if back, _ := g.MarshalBinary(); !bytes.Equal(back, data) {
			t.Fatalf("accepted %x, encodes as %x", data, back)
		}
		g.Uint32() // a restored generator runs
	})
}
