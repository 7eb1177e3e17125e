package determinism

import (
	"math"
	"math/bits"
	"strconv"
)

// Fixed is a Q32.32 fixed-point number: a two's complement int64 whose value
// is raw / 2^32. It represents every multiple of 2^-32 in [-2^31, 2^31).
//
// Arithmetic on Fixed uses integers only and gives identical results on every
// platform. The package documentation states the common rounding and
// overflow rules; each method states its own.
//
// The built-in operators are usable where they are exact: x + y, x - y, -x
// and comparisons (<, ==, ...) on Fixed values are the same as [Fixed.Add],
// [Fixed.Sub], [Fixed.Neg] and [Fixed.Cmp]. The built-in * and / are not
// fixed-point operations: use [Fixed.Mul] and [Fixed.Div].
type Fixed int64

// FracBits is the number of fractional bits of a [Fixed].
const FracBits = 32

// Notable values. Pi, TwoPi and HalfPi are each the Fixed value nearest to the
// true constant (so TwoPi is not exactly 2*Pi).
const (
	// One is 1.0.
	One Fixed = 1 << FracBits
	// Half is 0.5.
	Half Fixed = 1 << (FracBits - 1)
	// Pi is π rounded to nearest: raw 13493037705 (π·2^32 = 13493037704.52...).
	Pi Fixed = 13493037705
	// TwoPi is 2π rounded to nearest: raw 26986075409.
	TwoPi Fixed = 26986075409
	// HalfPi is π/2 rounded to nearest: raw 6746518852.
	HalfPi Fixed = 6746518852
	// MaxFixed is the largest value, 2^31 - 2^-32.
	MaxFixed Fixed = math.MaxInt64
	// MinFixed is the smallest value, -2^31.
	MinFixed Fixed = math.MinInt64
	// Epsilon is the smallest positive value, 2^-32 (raw 1).
	Epsilon Fixed = 1
)

const fracMask = 1<<FracBits - 1

// FromInt returns n as a Fixed: raw n<<32. It is exact for n in
// [-2^31, 2^31); outside that range the result wraps (only the low 32 bits
// of n are kept).
func FromInt(n int64) Fixed {
	return Fixed(n << FracBits)
}

// FromRaw returns the Fixed whose raw representation is r, that is r·2^-32.
func FromRaw(r int64) Fixed {
	return Fixed(r)
}

// Raw returns the raw representation of x, x·2^32.
func (x Fixed) Raw() int64 {
	return int64(x)
}

// FromFraction returns num/den rounded to the nearest multiple of 2^-32, ties
// away from zero. The quotient is computed exactly with 128-bit integers, so
// it is the correctly rounded value for every num and den; a quotient outside
// the Fixed range wraps. It panics if den is 0.
func FromFraction(num, den int64) Fixed {
	if den == 0 {
		panic("determinism: FromFraction with zero denominator")
	}
	un, neg := absNeg(num)
	ud, negd := absNeg(den)
	q := divRound(un>>(64-FracBits), un<<FracBits, ud)
	return applySign(q, neg != negd)
}

// FromFloat64 converts f to the nearest Fixed, ties away from zero. It is a
// boundary helper for tools, tests and configuration: simulation code must
// not call it, since floating-point inputs are what the package avoids.
//
// It saturates: f >= 2^31 (+Inf included) gives [MaxFixed], f < -2^31
// (-Inf included) gives [MinFixed], and NaN gives 0. Every other float64 is
// converted exactly when it is a multiple of 2^-32 and rounded otherwise.
func FromFloat64(f float64) Fixed {
	if math.IsNaN(f) {
		return 0
	}
	r := math.Round(f * (1 << FracBits)) // scaling by a power of two is exact
	switch {
	case r >= 1<<63:
		return MaxFixed
	case r <= -(1 << 63):
		return MinFixed
	}
	return Fixed(int64(r))
}

// Float64 returns x as a float64. It is a boundary helper for display, tools
// and tests: simulation code must not call it. The conversion is exact when
// |raw| < 2^53 (|x| < 2^21) and otherwise rounds to nearest, ties to even.
func (x Fixed) Float64() float64 {
	return float64(int64(x)) / (1 << FracBits)
}

// Int returns the largest integer not greater than x (floor). It never
// overflows: the result is in [-2^31, 2^31).
func (x Fixed) Int() int64 {
	return int64(x) >> FracBits
}

// Floor returns the largest integer value not greater than x. It never
// overflows.
func (x Fixed) Floor() Fixed {
	return x &^ fracMask
}

// Ceil returns the smallest integer value not less than x. For x above
// 2^31 - 1 the true result 2^31 is not representable and the result wraps
// to [MinFixed].
func (x Fixed) Ceil() Fixed {
	return Fixed((uint64(x) + fracMask) &^ fracMask)
}

// Round returns the integer value nearest to x, ties away from zero (2.5
// gives 3, -2.5 gives -3). For x at or above 2^31 - 0.5 the true result 2^31
// is not representable and the result wraps to [MinFixed].
func (x Fixed) Round() Fixed {
	u, neg := absNeg(int64(x))
	return applySign((u+uint64(Half))&^fracMask, neg)
}

// Frac returns the fractional part x - x.Floor(), in [0, 1): it is never
// negative (the fractional part of -0.25 is 0.75).
func (x Fixed) Frac() Fixed {
	return x & fracMask
}

// Add returns x + y; it is exact, and overflow wraps.
func (x Fixed) Add(y Fixed) Fixed { return x + y }

// Sub returns x - y; it is exact, and overflow wraps.
func (x Fixed) Sub(y Fixed) Fixed { return x - y }

// Neg returns -x. It is exact except that -MinFixed wraps to MinFixed.
func (x Fixed) Neg() Fixed { return -x }

// Abs returns |x|. It is exact except that Abs(MinFixed) wraps to MinFixed.
func (x Fixed) Abs() Fixed {
	if x < 0 {
		return -x
	}
	return x
}

// Mul returns x·y rounded to the nearest multiple of 2^-32, ties away from
// zero. The product is formed exactly in 128 bits; a result outside the Fixed
// range wraps (the rounded product modulo 2^64). Mul is commutative and
// Mul(-x, y) == -Mul(x, y) (except where MinFixed wraps).
func (x Fixed) Mul(y Fixed) Fixed {
	ux, nx := absNeg(int64(x))
	uy, ny := absNeg(int64(y))
	hi, lo := bits.Mul64(ux, uy)
	return applySign(shiftRound(hi, lo), nx != ny)
}

// shiftRound returns (hi:lo + 2^31) >> 32 modulo 2^64: the unsigned 128-bit
// value hi:lo divided by 2^32 and rounded to nearest, ties up.
func shiftRound(hi, lo uint64) uint64 {
	lo, c := bits.Add64(lo, 1<<(FracBits-1), 0)
	hi += c
	return hi<<(64-FracBits) | lo>>FracBits
}

// Div returns x/y rounded to the nearest multiple of 2^-32, ties away from
// zero. The quotient (x·2^32)/y is computed exactly with a 128-bit dividend;
// a result outside the Fixed range wraps (the rounded quotient modulo 2^64).
// It panics if y is 0.
func (x Fixed) Div(y Fixed) Fixed {
	if y == 0 {
		panic("determinism: Fixed division by zero")
	}
	ux, nx := absNeg(int64(x))
	uy, ny := absNeg(int64(y))
	return applySign(divRound(ux>>(64-FracBits), ux<<FracBits, uy), nx != ny)
}

// MulInt returns x·n exactly; overflow wraps.
func (x Fixed) MulInt(n int64) Fixed {
	return Fixed(int64(x) * n)
}

// DivInt returns x/n rounded to the nearest multiple of 2^-32, ties away from
// zero. MinFixed.DivInt(-1) wraps to MinFixed. It panics if n is 0.
func (x Fixed) DivInt(n int64) Fixed {
	if n == 0 {
		panic("determinism: Fixed division by zero")
	}
	ux, nx := absNeg(int64(x))
	un, nn := absNeg(n)
	return applySign(divRound(0, ux, un), nx != nn)
}

// Cmp returns -1 if x < y, 0 if x == y and +1 if x > y.
func (x Fixed) Cmp(y Fixed) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// Min returns the smaller of a and b.
func Min(a, b Fixed) Fixed {
	if b < a {
		return b
	}
	return a
}

// Max returns the larger of a and b.
func Max(a, b Fixed) Fixed {
	if b > a {
		return b
	}
	return a
}

// Clamp returns x limited to [lo, hi]: lo if x < lo, hi if x > hi, x
// otherwise. It panics if lo > hi.
func Clamp(x, lo, hi Fixed) Fixed {
	if lo > hi {
		panic("determinism: Clamp with lo > hi")
	}
	switch {
	case x < lo:
		return lo
	case x > hi:
		return hi
	}
	return x
}

// String returns the exact decimal value of x, without exponent, trailing
// zeros or floating point: "1", "1.5", "-0.25", "0.00000000023283064365386962890625"
// for [Epsilon]. Every Fixed has a finite decimal expansion of at most 32
// fractional digits.
func (x Fixed) String() string {
	var buf [48]byte
	return string(x.appendDecimal(buf[:0]))
}

// appendDecimal appends the exact decimal rendering of x to b.
func (x Fixed) appendDecimal(b []byte) []byte {
	u, neg := absNeg(int64(x))
	if neg {
		b = append(b, '-')
	}
	b = strconv.AppendUint(b, u>>FracBits, 10)
	frac := u & fracMask
	if frac != 0 {
		b = append(b, '.')
		for frac != 0 {
			frac *= 10
			b = append(b, byte('0'+frac>>FracBits))
			frac &= fracMask
		}
	}
	return b
}

// absNeg returns |v| as a uint64 (exact also for math.MinInt64) and whether
// v is negative.
func absNeg(v int64) (uint64, bool) {
	if v < 0 {
		return -uint64(v), true
	}
	return uint64(v), false
}

// applySign returns u, negated if neg, as a Fixed (modulo 2^64).
func applySign(u uint64, neg bool) Fixed {
	if neg {
		u = -u
	}
	return Fixed(u)
}

// divRound returns the unsigned 128-bit value hi:lo divided by d (d > 0),
// rounded to nearest with ties up, modulo 2^64.
func divRound(hi, lo, d uint64) uint64 {
	if hi >= d {
		hi %= d // drops quotient bits at or above 2^64
	}
	q, r := bits.Div64(hi, lo, d)
	if r >= d-r {
		q++
	}
	return q
}
