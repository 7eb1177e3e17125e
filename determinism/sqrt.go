package determinism

import "math/bits"

// Sqrt returns the square root of x rounded down: the largest Fixed r with
// r·r <= x (in exact arithmetic). In raw terms it is floor(sqrt(raw·2^32)),
// computed with 128-bit integers, so the result is exact for every input and
// needs no further specification for a port to match it. Sqrt(MaxFixed) is
// about 46340.95 and never overflows. It panics if x is negative.
func Sqrt(x Fixed) Fixed {
	if x < 0 {
		panic("determinism: Sqrt of negative value")
	}
	u := uint64(x)
	return Fixed(isqrt128(u>>(64-FracBits), u<<FracBits))
}

// isqrt128 returns floor(sqrt(hi:lo)) for an unsigned 128-bit value n <=
// 2^127, the largest that any caller passes.
//
// It runs Newton's iteration from above: starting at a power of two not
// below the root, x' = floor((x + floor(n/x)) / 2) decreases until it stops
// decreasing, and the last value is the floor of the root.
func isqrt128(hi, lo uint64) uint64 {
	if hi == 0 {
		return isqrt64(lo)
	}
	// 2^64 <= n <= 2^127: every iterate x is >= root >= 2^32 and > hi, so
	// n/x fits in 64 bits.
	n := 128 - bits.LeadingZeros64(hi)    // bit length of n, 65..128
	x := ^uint64(0)                       // 2^64 - 1 >= root for any n
	if shift := (n + 1) / 2; shift < 64 { // 2^ceil(n/2) >= root
		x = 1 << shift
	}
	for {
		q, _ := bits.Div64(hi, lo, x)
		s, c := bits.Add64(x, q, 0)
		y := s>>1 | c<<63
		if y >= x {
			return x
		}
		x = y
	}
}

// isqrt64 returns floor(sqrt(n)) for a 64-bit n, by the same iteration.
func isqrt64(n uint64) uint64 {
	if n < 2 {
		return n
	}
	x := uint64(1) << ((bits.Len64(n) + 1) / 2) // >= root, at most 2^32
	for {
		y := (x + n/x) >> 1
		if y >= x {
			return x
		}
		x = y
	}
}
