package determinism

import (
	"math"
	"math/big"
	"testing"
)

func TestVec2Basics(t *testing.T) {
	a, b := V2(One, FromInt(2)), V2(Half, -One)
	for _, tc := range []struct {
		name      string
		got, want Vec2
	}{
		{"Add", a.Add(b), V2(One+Half, One)},
		{"Sub", a.Sub(b), V2(Half, FromInt(3))},
		{"Scale", a.Scale(Half), V2(Half, One)},
		{"Scale rounds", V2(3, -3).Scale(Half), V2(2, -2)},
		{"Neg", a.Neg(), V2(-One, FromInt(-2))},
		{"Neg wraps", V2(MinFixed, 0).Neg(), V2(MinFixed, 0)},
	} {
		assertEqual(t, tc.want, tc.got, tc.name)
	}
	for _, tc := range []struct {
		name      string
		got, want Fixed
	}{
		{"Dot", a.Dot(b), -One - Half},
		{"Cross", a.Cross(b), FromInt(-2)},
		{"Cross of x and y axes", V2(One, 0).Cross(V2(0, One)), One},
		{"LenSq", a.LenSq(), FromInt(5)},
		{"Len", V2(FromInt(3), FromInt(-4)).Len(), FromInt(5)},
		{"Len floors", V2(One, One).Len(), 6074000999}, // floor(√2·2^32)
		{"Dist", V2(One, One).Dist(V2(FromInt(4), FromInt(5))), FromInt(5)},
		{"DistSq", V2(One, One).DistSq(V2(FromInt(4), FromInt(5))), FromInt(25)},
		{"Dot ties away from zero", V2(1, 0).Dot(V2(Half, 0)), 1},
		{"Dot ties away from zero, negative", V2(-1, 0).Dot(V2(Half, 0)), -1},
		{"LenSq wraps", V2(FromInt(1<<16), 0).LenSq(), 0},
		{"Len of extreme vector", V2(MinFixed, 0).Len(), MinFixed}, // 2^31 wraps
	} {
		assertEqual(t, tc.want, tc.got, tc.name)
	}
	assertEqual(t, true, a.Eq(V2(One, FromInt(2))))
	assertEqual(t, false, a.Eq(b))
	assertEqual(t, "(1.5, -2)", V2(One+Half, FromInt(-2)).String())
}

func TestVec2Wide(t *testing.T) {
	// Dot, Cross, LenSq, Len against math/big on random raw values at every
	// scale, including products that wrap.
	r := newTestRand(30)
	bi := func(x Fixed) *big.Int { return big.NewInt(int64(x)) }
	scale := big.NewInt(1 << FracBits)
	for range 20000 {
		v, w := V2(randRaw(r), randRaw(r)), V2(randRaw(r), randRaw(r))
		dot := new(big.Int).Add(new(big.Int).Mul(bi(v.X), bi(w.X)), new(big.Int).Mul(bi(v.Y), bi(w.Y)))
		requireEqual(t, refDivRound(dot, scale), v.Dot(w).Raw(), "%v.Dot(%v)", v, w)
		cross := new(big.Int).Sub(new(big.Int).Mul(bi(v.X), bi(w.Y)), new(big.Int).Mul(bi(v.Y), bi(w.X)))
		requireEqual(t, refDivRound(cross, scale), v.Cross(w).Raw(), "%v.Cross(%v)", v, w)
		sq := new(big.Int).Add(new(big.Int).Mul(bi(v.X), bi(v.X)), new(big.Int).Mul(bi(v.Y), bi(v.Y)))
		requireEqual(t, refDivRound(sq, scale), v.LenSq().Raw(), "%v.LenSq()", v)
		requireEqual(t, wrap(new(big.Int).Sqrt(sq)), v.Len().Raw(), "%v.Len()", v)
	}
	extremes := []Fixed{MinFixed, MaxFixed, MinFixed + 1, -1, 0, 1}
	for _, x := range extremes {
		for _, y := range extremes {
			v := V2(x, y)
			sq := new(big.Int).Add(new(big.Int).Mul(bi(x), bi(x)), new(big.Int).Mul(bi(y), bi(y)))
			assertEqual(t, wrap(new(big.Int).Sqrt(sq)), v.Len().Raw(), "%v.Len()", v)
			assertEqual(t, refDivRound(sq, scale), v.Dot(v).Raw(), "%v.Dot(itself)", v)
		}
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		v, want Vec2
	}{
		{Vec2{}, Vec2{}},
		{V2(FromInt(3), FromInt(4)), V2(FromFraction(3, 5), FromFraction(4, 5))},
		{V2(FromInt(-3), FromInt(4)), V2(FromFraction(-3, 5), FromFraction(4, 5))},
		{V2(1, 1), V2(3037000500, 3037000500)}, // √2/2, even for the tiniest vector
		{V2(MinFixed, MinFixed), V2(-3037000500, -3037000500)},
		{V2(MinFixed, 0), V2(-One, 0)},
		{V2(0, 7), V2(0, One)},
	} {
		assertEqual(t, tc.want, tc.v.Normalize(), "%v.Normalize()", tc.v)
	}
	// Each component within 2^-32 of exact, at every scale.
	r := newTestRand(31)
	var worst float64
	for range 10000 {
		v := V2(randRaw(r), randRaw(r))
		if v.X == 0 && v.Y == 0 {
			continue
		}
		n := v.Normalize()
		x, y := bigOf(v.X), bigOf(v.Y)
		l := newFloat().Add(newFloat().Mul(x, x), newFloat().Mul(y, y))
		l.Sqrt(l)
		for _, c := range []struct {
			got   Fixed
			exact *big.Float
		}{{n.X, x}, {n.Y, y}} {
			e := newFloat().Sub(bigOf(c.got), newFloat().Quo(c.exact, l))
			d, _ := e.Float64()
			worst = max(worst, math.Abs(d))
			if math.Abs(d) > 0x1p-32 {
				t.Fatalf("%v.Normalize() = %v: component error %.3g", v, n, d)
			}
		}
		if d := math.Abs(n.Len().Float64() - 1); d > 0x1p-31 {
			t.Fatalf("%v.Normalize() = %v has length %v", v, n, n.Len())
		}
	}
	t.Logf("max component error of Normalize: %.3g (%.2f units)", worst, worst*0x1p32)
}

func TestRotate(t *testing.T) {
	for _, tc := range []struct {
		v     Vec2
		angle Fixed
		want  Vec2
	}{
		{V2(One, 0), 0, V2(One, 0)},
		{V2(One, 0), HalfPi, V2(0, One)},
		{V2(One, 0), Pi, V2(-One, 0)},
		{V2(One, 0), -HalfPi, V2(0, -One)},
		{V2(FromInt(3), FromInt(4)), Pi, V2(FromInt(-3), FromInt(-4))},
	} {
		assertEqual(t, tc.want, tc.v.Rotate(tc.angle), "%v.Rotate(%v)", tc.v, tc.angle)
	}
	// The components are the exactly rounded sums with Sin and Cos.
	r := newTestRand(32)
	bi := func(x Fixed) *big.Int { return big.NewInt(int64(x)) }
	scale := big.NewInt(1 << FracBits)
	for range 5000 {
		v, a := V2(randRaw(r), randRaw(r)), randRaw(r)
		s, c := Sin(a), Cos(a)
		x := new(big.Int).Sub(new(big.Int).Mul(bi(v.X), bi(c)), new(big.Int).Mul(bi(v.Y), bi(s)))
		y := new(big.Int).Add(new(big.Int).Mul(bi(v.X), bi(s)), new(big.Int).Mul(bi(v.Y), bi(c)))
		want := V2(Fixed(refDivRound(x, scale)), Fixed(refDivRound(y, scale)))
		requireEqual(t, want, v.Rotate(a), "%v.Rotate(%v)", v, a)
	}
}
