package determinism

import "math/bits"

// Vec2 is a 2-D vector of [Fixed] components. It is a plain value; the zero
// value is the zero vector. Products of components ([Vec2.Dot],
// [Vec2.Cross], [Vec2.LenSq], [Vec2.Rotate]) are summed exactly in 128 bits
// and rounded once, to nearest with ties away from zero; overflow wraps.
type Vec2 struct {
	X, Y Fixed
}

// V2 returns the vector (x, y).
func V2(x, y Fixed) Vec2 {
	return Vec2{X: x, Y: y}
}

// Add returns v + w, component-wise; exact, overflow wraps.
func (v Vec2) Add(w Vec2) Vec2 {
	return Vec2{v.X + w.X, v.Y + w.Y}
}

// Sub returns v - w, component-wise; exact, overflow wraps.
func (v Vec2) Sub(w Vec2) Vec2 {
	return Vec2{v.X - w.X, v.Y - w.Y}
}

// Scale returns v·s: each component multiplied by s with [Fixed.Mul].
func (v Vec2) Scale(s Fixed) Vec2 {
	return Vec2{v.X.Mul(s), v.Y.Mul(s)}
}

// Neg returns -v; MinFixed components wrap to themselves.
func (v Vec2) Neg() Vec2 {
	return Vec2{-v.X, -v.Y}
}

// Dot returns v.X·w.X + v.Y·w.Y, summed exactly and rounded once to nearest,
// ties away from zero; overflow wraps.
func (v Vec2) Dot(w Vec2) Fixed {
	h1, l1 := mulWide(int64(v.X), int64(w.X))
	h2, l2 := mulWide(int64(v.Y), int64(w.Y))
	lo, c := bits.Add64(l1, l2, 0)
	return roundWide(h1+h2+c, lo)
}

// Cross returns the z component of the 3-D cross product, v.X·w.Y - v.Y·w.X,
// computed exactly and rounded once to nearest, ties away from zero; overflow
// wraps. It is positive when w is counter-clockwise from v.
func (v Vec2) Cross(w Vec2) Fixed {
	h1, l1 := mulWide(int64(v.X), int64(w.Y))
	h2, l2 := mulWide(int64(v.Y), int64(w.X))
	lo, b := bits.Sub64(l1, l2, 0)
	return roundWide(h1-h2-b, lo)
}

// LenSq returns the squared length v.X² + v.Y², summed exactly and rounded
// once to nearest, ties away from zero. It overflows (wraps) when the length
// reaches 2^15.5, about 46341.
func (v Vec2) LenSq() Fixed {
	hi, lo := sumSquares(v)
	return Fixed(shiftRound(hi, lo))
}

// Len returns the length of v rounded down: raw floor(sqrt(X² + Y²)) of the
// raw components, exact for every v. The length of vectors with both
// components near ±2^31 exceeds MaxFixed and wraps.
func (v Vec2) Len() Fixed {
	return Fixed(isqrt128(sumSquares(v)))
}

// Dist returns the distance v.Sub(w).Len(). The difference wraps if a
// component differs by 2^31 or more.
func (v Vec2) Dist(w Vec2) Fixed {
	return v.Sub(w).Len()
}

// DistSq returns the squared distance v.Sub(w).LenSq().
func (v Vec2) DistSq(w Vec2) Fixed {
	return v.Sub(w).LenSq()
}

// Eq reports whether v and w are exactly equal.
func (v Vec2) Eq(w Vec2) bool {
	return v == w
}

// Normalize returns the unit vector in the direction of v; the zero vector
// stays zero. For every non-zero v, however small or large, each component
// is within 2^-32 of the exact one (half of that plus a negligible term), so
// the result has length 1 within 2^-32.
//
// Specification: with ax, ay = |raw(X)|, |raw(Y)| as unsigned, both are
// shifted left by s = max(0, LeadingZeros64(max(ax, ay)) - 1) bits (exact;
// the larger lands in [2^62, 2^63]); L = floor(sqrt(ax² + ay²)) of the
// shifted values (exact, 128-bit); each component is ax·2^32 / L rounded to
// nearest with ties away from zero, carrying the sign of the original
// component.
func (v Vec2) Normalize() Vec2 {
	ax, nx := absNeg(int64(v.X))
	ay, ny := absNeg(int64(v.Y))
	m := max(ax, ay)
	if m == 0 {
		return Vec2{}
	}
	if s := bits.LeadingZeros64(m) - 1; s > 0 {
		ax <<= s
		ay <<= s
	}
	h1, l1 := bits.Mul64(ax, ax)
	h2, l2 := bits.Mul64(ay, ay)
	lo, c := bits.Add64(l1, l2, 0)
	l := isqrt128(h1+h2+c, lo)
	return Vec2{
		applySign(divRound(ax>>(64-FracBits), ax<<FracBits, l), nx),
		applySign(divRound(ay>>(64-FracBits), ay<<FracBits, l), ny),
	}
}

// Rotate returns v rotated counter-clockwise by angle radians:
// (X·c - Y·s, X·s + Y·c) with s, c = [SinCos](angle), each component summed
// exactly and rounded once to nearest, ties away from zero.
func (v Vec2) Rotate(angle Fixed) Vec2 {
	s, c := SinCos(angle)
	xh1, xl1 := mulWide(int64(v.X), int64(c))
	xh2, xl2 := mulWide(int64(v.Y), int64(s))
	xl, b := bits.Sub64(xl1, xl2, 0)
	yh1, yl1 := mulWide(int64(v.X), int64(s))
	yh2, yl2 := mulWide(int64(v.Y), int64(c))
	yl, k := bits.Add64(yl1, yl2, 0)
	return Vec2{roundWide(xh1-xh2-b, xl), roundWide(yh1+yh2+k, yl)}
}

// String returns the vector as "(X, Y)" with exact decimal components, for
// example "(1.5, -2)".
func (v Vec2) String() string {
	var buf [100]byte
	b := append(buf[:0], '(')
	b = v.X.appendDecimal(b)
	b = append(b, ", "...)
	b = v.Y.appendDecimal(b)
	b = append(b, ')')
	return string(b)
}

// sumSquares returns X² + Y² of the raw components as an unsigned 128-bit
// value hi:lo (at most 2^127).
func sumSquares(v Vec2) (hi, lo uint64) {
	ax, _ := absNeg(int64(v.X))
	ay, _ := absNeg(int64(v.Y))
	h1, l1 := bits.Mul64(ax, ax)
	h2, l2 := bits.Mul64(ay, ay)
	lo, c := bits.Add64(l1, l2, 0)
	return h1 + h2 + c, lo
}

// mulWide returns the exact signed 128-bit product a·b as hi:lo (two's
// complement).
func mulWide(a, b int64) (hi, lo uint64) {
	hi, lo = bits.Mul64(uint64(a), uint64(b))
	if a < 0 {
		hi -= uint64(b)
	}
	if b < 0 {
		hi -= uint64(a)
	}
	return hi, lo
}

// roundWide returns the signed 128-bit value hi:lo divided by 2^32, rounded
// to nearest with ties away from zero, modulo 2^64.
func roundWide(hi, lo uint64) Fixed {
	neg := int64(hi) < 0
	if neg {
		var b uint64
		lo, b = bits.Sub64(0, lo, 0)
		hi, _ = bits.Sub64(0, hi, b)
	}
	return applySign(shiftRound(hi, lo), neg)
}
