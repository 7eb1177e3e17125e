package determinism

import (
	"math/big"
	"testing"
)

// refSqrtRaw returns floor(sqrt(raw·2^32)).
func refSqrtRaw(x Fixed) int64 {
	n := new(big.Int).Lsh(big.NewInt(int64(x)), FracBits)
	return n.Sqrt(n).Int64()
}

func TestSqrt(t *testing.T) {
	for _, tc := range []struct {
		x, want Fixed
	}{
		{0, 0},
		{Epsilon, 1 << 16}, // sqrt(2^-32) = 2^-16
		{2, 92681},         // floor(sqrt(2)·2^16)
		{4, 2 << 16},       // perfect square raw
		{One, One},         //
		{FromInt(4), FromInt(2)},
		{FromInt(2), 6074000999}, // floor(sqrt(2)·2^32)
		{One / 4, Half},
		{FromInt(46340 * 46340), FromInt(46340)},
		{MaxFixed, 199032864766430}, // floor(sqrt((2^63-1)·2^32))
	} {
		assertEqual(t, tc.want, Sqrt(tc.x), "Sqrt(%v)", tc.x)
		assertEqual(t, refSqrtRaw(tc.x), Sqrt(tc.x).Raw(), "Sqrt(%v) against math/big", tc.x)
	}
	assertPanics(t, "determinism: Sqrt of negative value", func() { Sqrt(-Epsilon) })
	assertPanics(t, "determinism: Sqrt of negative value", func() { Sqrt(MinFixed) })
}

func TestSqrtExact(t *testing.T) {
	r := newTestRand(10)
	check := func(x Fixed) {
		t.Helper()
		if x < 0 {
			return
		}
		requireEqual(t, refSqrtRaw(x), Sqrt(x).Raw(), "Sqrt(raw %d)", x)
	}
	for range 20000 {
		x := randRaw(r)
		check(x)
		check(x & MaxFixed)
	}
	// Perfect squares of the raw value and their neighbours: the only
	// places where an off-by-one in the iteration could hide.
	for range 5000 {
		m := int64(r.Uint64() >> (33 + r.IntN(31))) // m² < 2^63
		sq := Fixed(m * m)
		check(sq - 1)
		check(sq)
		check(sq + 1)
		requireEqual(t, m<<16, Sqrt(sq).Raw(), "Sqrt(%d²)", m)
	}
	for i := range Fixed(4096) {
		check(i)
		check(MaxFixed - i)
	}
}
