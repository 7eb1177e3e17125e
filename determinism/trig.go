package determinism

import "math/bits"

// Notation for the specifications below. A Q1.63 value is a uint64 v read as
// v / 2^63; a Q2.62 value is read as v / 2^62. mulQ63(a, b) is
// floor(a·b / 2^63) of two Q1.63 values, computed exactly in 128 bits. A
// phase is a uint64 p read as the angle 2π·p / 2^64 (a fraction of a turn);
// phase arithmetic wraps modulo 2^64, that is modulo one turn.

// Constants of the trigonometric functions. Each is the stated real number
// rounded to the nearest integer.
const (
	// turnsHi:turnsLo is 2^129/π (= 2^130/(2π)), a 128-bit integer.
	turnsHi = 0xa2f9836e4e441529
	turnsLo = 0xfc2757d1f534ddc1
	// piOver4Q63 is π/4 in Q1.63.
	piOver4Q63 = 0x6487ed5110b4611a
	// halfPiQ63 is π/2 in Q1.63.
	halfPiQ63 = 0xc90fdaa22168c235
	// piQ62 is π in Q2.62.
	piQ62 = 0xc90fdaa22168c235
	// oneQ63 is 1 in Q1.63.
	oneQ63 = 1 << 63

	// invFactN is 1/N! in Q1.63.
	invFact2  = 0x4000000000000000
	invFact3  = 0x1555555555555555
	invFact4  = 0x0555555555555555
	invFact5  = 0x0111111111111111
	invFact6  = 0x002d82d82d82d82e
	invFact7  = 0x0006806806806807
	invFact8  = 0x0000d00d00d00d01
	invFact9  = 0x0000171de3a556c7
	invFact10 = 0x0000024fc9f6ef14
	invFact11 = 0x00000035cc8acfeb
	invFact12 = 0x000000047bb63bfe
	invFact13 = 0x000000005849184f
	invFact14 = 0x00000000064e5d2a

	// inv3Q63 and inv5Q63 are 1/3 and 1/5 in Q1.63.
	inv3Q63 = 0x2aaaaaaaaaaaaaab
	inv5Q63 = 0x199999999999999a
)

// atanTable[i] is atan(i/64) in Q1.63, for i = 0..64.
var atanTable = [65]uint64{
	0x0000000000000000, 0x01fff555bbb729ab, 0x03ffaab7752ec495, 0x05fee0610c368a7e,
	0x07fd56edcb3f7a72, 0x09facf873e2aceb6, 0x0bf70c1301788746, 0x0df1cf5f3783e1bf,
	0x0feadd4d5617b6e3, 0x11e1fafb043726e5, 0x13d6eee8c6626c58, 0x15c9811e3ec269df,
	0x17b97b4bce5b0227, 0x19a6a8e96c86261d, 0x1b90d7529260a204, 0x1d77d5df20573672,
	0x1f5b75f92c80dd63, 0x213b8b2fb0c6c4b1, 0x2317eb4617e2f04c, 0x24f06e40afde8b7c,
	0x26c4ee6e0fd7979a, 0x2895486d855e1351, 0x2a615b32a39a93b7, 0x2c290806139fc32c,
	0x2dec3283c9bde11d, 0x2faac096c767eeb5, 0x31649a7294364adb, 0x3319aa8a9ad630cf,
	0x34c9dd879847f96e, 0x3675223b4cb8d8d7, 0x381b69929d93df1a, 0x39bca6865826a12f,
	0x3b58ce0ac3769ed1, 0x3cefd6fe2eb46887, 0x3e81ba16a8282f97, 0x400e71cf06902e4d,
	0x4195fa536cc33f15, 0x4318516d6d0f6833, 0x4495766fef4aa3db, 0x460d6a22f9f04dc6,
	0x47802eaf7bfacfce, 0x48edc78b3279a871, 0x4a563964c238c37b, 0x4bb98a101b2f29c6,
	0x4d17c07338deed10, 0x4e70e473505c66dd, 0x4fc4fee27a5bd0f6, 0x5114196de56d5704,
	0x525e3e8c9a7b8492, 0x53a3796edbb0114a, 0x54e3d5ee24187ae4, 0x561f607dccbeeb51,
	0x5756261c5a6c6040, 0x5888344575ee37b5, 0x59b598e48f821b49, 0x5ade62482cf66258,
	0x5c029f15e118cf3a, 0x5d225e3eea383c18, 0x5e3daef574c57940, 0x5f54a0a27e824d56,
	0x606742dc56293320, 0x6175a55db30b145b, 0x627fd7fd5fc7deaa, 0x6385eaa67301770a,
	0x6487ed5110b4611a,
}

// mulQ63 returns floor(a·b / 2^63).
func mulQ63(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi<<1 | lo>>63
}

// phaseOf returns the phase of the angle x (in radians):
// frac(x / 2π) as a fraction of 2^64.
//
// Specification: let U = |raw(x)| as an unsigned 64-bit integer (2^63 for
// MinFixed) and T = 2^129/π rounded to nearest (turnsHi:turnsLo, 128 bits).
// The phase is floor(U·T / 2^98) mod 2^64, computed exactly from the 192-bit
// product, and negated modulo 2^64 if x < 0. It is within 1.01 phase units
// (2π/2^64 rad, about 3.4e-19 rad) of the exact phase for every x: the
// reduction loses nothing that a Fixed result could show.
func phaseOf(x Fixed) uint64 {
	u, neg := absNeg(int64(x))
	// U·T = U·turnsHi·2^64 + U·turnsLo; bits 98..161 are wanted.
	h1, h0 := bits.Mul64(u, turnsHi)
	l1, _ := bits.Mul64(u, turnsLo)
	mid, carry := bits.Add64(h0, l1, 0)
	top := h1 + carry
	p := top<<30 | mid>>34
	if neg {
		p = -p
	}
	return p
}

// sinPhase returns sin(2π·p/2^64) rounded to a Fixed.
//
// Specification: the octant is o = p >> 61 and f = p mod 2^61; for odd o,
// f = 2^61 - f (so 0 <= f <= 2^61). The reduced angle θ = f·π/(4·2^61) in
// [0, π/4] is the Q1.63 value floor(f·piOver4Q63 / 2^61). For o in {0, 3, 4, 7}
// the magnitude is v = sinQ63(θ), for o in {1, 2, 5, 6} it is v = cosQ63(θ).
// The result's raw value is (v + 2^30) >> 31 (Q1.63 to Q32.32, rounded to
// nearest, ties away from zero), negated for o >= 4.
func sinPhase(p uint64) Fixed {
	o := p >> 61
	f := p & (1<<61 - 1)
	if o&1 == 1 {
		f = 1<<61 - f
	}
	hi, lo := bits.Mul64(f, piOver4Q63)
	theta := hi<<3 | lo>>61
	var v uint64
	switch o {
	case 0, 3, 4, 7:
		v = sinQ63(theta)
	default:
		v = cosQ63(theta)
	}
	r := Fixed((v + 1<<30) >> 31)
	if o >= 4 {
		r = -r
	}
	return r
}

// sinQ63 returns sin(θ) in Q1.63 for θ in [0, π/4] in Q1.63, by the Taylor
// polynomial through θ^13 in Horner form, every step an unsigned mulQ63 or
// subtraction (all intermediate values are non-negative):
//
//	z = mulQ63(θ, θ)
//	q = invFact13
//	q = invFactN - mulQ63(z, q)   for N = 11, 9, 7, 5, 3 in turn
//	result = θ - mulQ63(θ, mulQ63(z, q))
//
// The truncation error is below (π/4)^15/15! < 3e-14, the rounding error a
// few units of 2^-63.
func sinQ63(theta uint64) uint64 {
	z := mulQ63(theta, theta)
	q := hornerQ63(z, invFact13, invFact11, invFact9, invFact7, invFact5, invFact3)
	return theta - mulQ63(theta, mulQ63(z, q))
}

// cosQ63 returns cos(θ) in Q1.63 for θ in [0, π/4] in Q1.63, by the Taylor
// polynomial through θ^14 in Horner form:
//
//	z = mulQ63(θ, θ)
//	q = invFact14
//	q = invFactN - mulQ63(z, q)   for N = 12, 10, 8, 6, 4, 2 in turn
//	result = 2^63 - mulQ63(z, q)
//
// The truncation error is below (π/4)^16/16! < 2e-15.
func cosQ63(theta uint64) uint64 {
	z := mulQ63(theta, theta)
	q := hornerQ63(z, invFact14, invFact12, invFact10, invFact8, invFact6, invFact4, invFact2)
	return oneQ63 - mulQ63(z, q)
}

// hornerQ63 is the Horner step both polynomials share: q = c[0], then
// q = c[k] - mulQ63(z, q) for each following coefficient, in Q1.63.
func hornerQ63(z uint64, c ...uint64) uint64 {
	q := c[0]
	for _, ck := range c[1:] {
		q = ck - mulQ63(z, q)
	}
	return q
}

// Sin returns the sine of x radians, for any x, rounded to a Fixed.
//
// Algorithm (integers only; see the source for every constant): x is reduced
// exactly to a 64-bit phase, frac(x/2π)·2^64, by multiplying |raw(x)| with a
// 128-bit 2^129/π; the top three phase bits select an octant and the rest an
// angle θ in [0, π/4], whose sine or cosine is a Taylor polynomial evaluated
// in Q1.63; the Q1.63 magnitude is rounded to nearest into Q32.32 and given
// the octant's sign.
//
// Accuracy: the intermediate result is within 1e-13 of the true sine of the
// exact value of x, so the returned value is the correctly rounded sine
// except when the sine lies within 1e-13 of a tie between two Fixed values;
// the absolute error is below 2^-33 + 1e-13 (about 1.2e-10) for every x. The
// tests check this bound against a math/big range reduction and math.Sin
// over [-4π, 4π] densely and over the whole Fixed range at random.
//
// Exact identities: Sin(-x) == -Sin(x), Sin(0) == 0, Sin(HalfPi) == One,
// Sin(Pi) == 0.
func Sin(x Fixed) Fixed {
	return sinPhase(phaseOf(x))
}

// Cos returns the cosine of x radians, for any x, rounded to a Fixed. It is
// computed exactly as [Sin] with the phase advanced by a quarter turn
// (2^62 added modulo 2^64), and has the same accuracy.
//
// Exact identities: Cos(-x) == Cos(x), Cos(0) == One, Cos(HalfPi) == 0,
// Cos(Pi) == -One.
func Cos(x Fixed) Fixed {
	return sinPhase(phaseOf(x) + 1<<62)
}

// SinCos returns Sin(x) and Cos(x), reducing x only once.
func SinCos(x Fixed) (sin, cos Fixed) {
	p := phaseOf(x)
	return sinPhase(p), sinPhase(p + 1<<62)
}

// Atan2 returns the angle of the point (x, y) from the positive x axis, in
// radians, in (-Pi, Pi] (that is, raw in [-raw(Pi)+1, raw(Pi)]).
// Atan2(0, 0) is 0, Atan2(0, x) is Pi for x < 0 and 0 for x > 0, and
// Atan2(y, 0) is ±HalfPi. Only the ratio of y and x matters, so no input
// overflows.
//
// Algorithm (integers only), with ax = |raw(x)|, ay = |raw(y)| as unsigned:
//
//  1. If ay <= ax, n, d = ay, ax; otherwise n, d = ax, ay (swapped).
//     t = floor(n·2^63 / d), the ratio in Q1.63, in [0, 2^63].
//  2. i = (t + 2^56) >> 57, the nearest multiple of 1/64 (0..64); c = i << 57.
//  3. den = 2^62 + floor(t·c / 2^64) (1 + t·c in Q2.62) and
//     e = floor(|t - c|·2^62 / den) (|t-c|/(1+t·c) in Q1.63, at most 1/128).
//  4. w = mulQ63(e, e); q = inv3Q63 - mulQ63(w, inv5Q63);
//     a = e - mulQ63(e, mulQ63(w, q)) (atan(e) by its Taylor polynomial
//     through e^5).
//  5. a = atanTable[i] + a if t >= c, else atanTable[i] - a (the identity
//     atan(t) = atan(c) + atan((t-c)/(1+t·c)); a is atan(n/d) in Q1.63).
//  6. If swapped, a = halfPiQ63 - a. Then a = a >> 1 (Q2.62); if x < 0,
//     a = piQ62 - a.
//  7. r = (a + 2^29) >> 30 (Q2.62 to Q32.32, nearest, ties away from zero);
//     if y < 0, r = -r, and if then r == -raw(Pi), r = -raw(Pi) + 1.
//
// Accuracy: the intermediate angle is within 1e-15 of the true angle of the
// exact inputs, so the absolute error is below 2^-33 + 1e-15 (about
// 1.2e-10), and below 0.53·2^-32 where the clamp of step 7 applies. The
// tests check this against math.Atan2 over all quadrants and magnitudes.
func Atan2(y, x Fixed) Fixed {
	ax, _ := absNeg(int64(x))
	ay, _ := absNeg(int64(y))
	if ax == 0 && ay == 0 {
		return 0
	}
	n, d, swapped := ay, ax, false
	if ay > ax {
		n, d, swapped = ax, ay, true
	}
	t, _ := bits.Div64(n>>1, n<<63, d)
	i := (t + 1<<56) >> 57
	c := i << 57
	hi, _ := bits.Mul64(t, c)
	den := 1<<62 + hi
	var diff uint64
	if t >= c {
		diff = t - c
	} else {
		diff = c - t
	}
	e, _ := bits.Div64(diff>>2, diff<<62, den)
	w := mulQ63(e, e)
	q := inv3Q63 - mulQ63(w, inv5Q63)
	a := e - mulQ63(e, mulQ63(w, q))
	if t >= c {
		a = atanTable[i] + a
	} else {
		a = atanTable[i] - a
	}
	if swapped {
		a = halfPiQ63 - a
	}
	a >>= 1
	if x < 0 {
		a = piQ62 - a
	}
	r := Fixed((a + 1<<29) >> 30)
	if y < 0 {
		r = -r
		if r == -Pi {
			r = -Pi + 1
		}
	}
	return r
}
