package determinism

import (
	"math"
	"math/big"
	"testing"
)

func TestConstants(t *testing.T) {
	pi := refPi()
	for _, tc := range []struct {
		name  string
		got   Fixed
		exact *big.Float
	}{
		{"One", One, big.NewFloat(1)},
		{"Half", Half, big.NewFloat(0.5)},
		{"Pi", Pi, pi},
		{"TwoPi", TwoPi, ldexp(pi, 1)},
		{"HalfPi", HalfPi, ldexp(pi, -1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := roundBig(ldexp(tc.exact, FracBits))
			assertEqual(t, want.Int64(), tc.got.Raw())
		})
	}
	assertEqual(t, int64(math.MaxInt64), MaxFixed.Raw())
	assertEqual(t, int64(math.MinInt64), MinFixed.Raw())
	assertEqual(t, int64(1), Epsilon.Raw())
}

func TestFromInt(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want Fixed
	}{
		{0, 0},
		{1, One},
		{-1, -One},
		{1<<31 - 1, MaxFixed &^ fracMask},
		{-1 << 31, MinFixed},
		{1 << 31, MinFixed}, // wraps
		{1<<32 + 5, FromInt(5)},
	} {
		assertEqual(t, tc.want, FromInt(tc.n), "FromInt(%d)", tc.n)
	}
	assertEqual(t, Fixed(-7), FromRaw(-7))
	assertEqual(t, int64(-7), Fixed(-7).Raw())
}

func TestFromFraction(t *testing.T) {
	for _, tc := range []struct {
		num, den int64
		want     Fixed
	}{
		{1, 2, Half},
		{-1, 2, -Half},
		{1, -2, -Half},
		{-1, -2, Half},
		{3, 1, FromInt(3)},
		{1, 3, 1431655765},     // 2^32/3 = 1431655765.33
		{2, 3, 2863311531},     // 2^33/3 = 2863311530.67
		{-2, 3, -2863311531},   // symmetric
		{1, 1 << 33, 1},        // 0.5 raw: tie, away from zero
		{-1, 1 << 33, -1},      // tie, away from zero
		{1, 3 << 32, 0},        // 0.33 raw
		{0, -5, 0},             //
		{1 << 31, 1, MinFixed}, // wraps
		{math.MinInt64, -1, 0}, // 2^95 wraps to 0
		{math.MaxInt64, math.MaxInt64, One},
		{math.MinInt64, math.MinInt64, One},
	} {
		assertEqual(t, tc.want, FromFraction(tc.num, tc.den), "FromFraction(%d, %d)", tc.num, tc.den)
	}
	assertPanics(t, "determinism: FromFraction with zero denominator", func() { FromFraction(1, 0) })

	r := newTestRand(1)
	for range 20000 {
		num, den := int64(randRaw(r)), int64(randRaw(r))
		if den == 0 {
			continue
		}
		want := refDivRound(new(big.Int).Lsh(big.NewInt(num), FracBits), big.NewInt(den))
		requireEqual(t, want, FromFraction(num, den).Raw(), "FromFraction(%d, %d)", num, den)
	}
}

func TestFloat64Boundary(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want Fixed
	}{
		{0, 0},
		{1.5, One + Half},
		{-0.25, -One / 4},
		{0x1p-33, 1},        // tie, away from zero
		{-0x1p-33, -1},      // tie, away from zero
		{0x1.8p-32, 2},      // 1.5 raw: tie, away from zero
		{0x1p-34, 0},        // below half a raw unit
		{0x1p31, MaxFixed},  // saturates
		{-0x1p31, MinFixed}, // exact
		{-0x1.00001p31, MinFixed},
		{0x1p31 - 0x1p-22, FromRaw(1<<63 - 1<<10)}, // largest float64 below 2^31
		{math.Inf(1), MaxFixed},
		{math.Inf(-1), MinFixed},
		{math.NaN(), 0},
		{1e300, MaxFixed},
		{-1e300, MinFixed},
	} {
		assertEqual(t, tc.want, FromFloat64(tc.f), "FromFloat64(%v)", tc.f)
	}
	for _, x := range []Fixed{0, 1, -1, One, -Half, Pi, 1 << 52, -1 << 53} {
		assertEqual(t, x, FromFloat64(x.Float64()), "round trip of %v", x)
	}
	assertEqual(t, -0x1p31, MinFixed.Float64())
	assertEqual(t, 0x1p31, MaxFixed.Float64()) // rounds up in float64
}

func TestRounding(t *testing.T) {
	f := func(s string) Fixed { // exact decimal to Fixed, for readability
		r, ok := new(big.Rat).SetString(s)
		requireTrue(t, ok, s)
		return FromFraction(r.Num().Int64(), r.Denom().Int64())
	}
	for _, tc := range []struct {
		x                        Fixed
		floor, ceil, round, frac Fixed
		int                      int64
	}{
		{0, 0, 0, 0, 0, 0},
		{One, One, One, One, 0, 1},
		{f("2.5"), f("2"), f("3"), f("3"), f("0.5"), 2},
		{f("-2.5"), f("-3"), f("-2"), f("-3"), f("0.5"), -3},
		{f("2.25"), f("2"), f("3"), f("2"), f("0.25"), 2},
		{f("-2.25"), f("-3"), f("-2"), f("-2"), f("0.75"), -3},
		{f("-2.75"), f("-3"), f("-2"), f("-3"), f("0.25"), -3},
		{Epsilon, 0, One, 0, Epsilon, 0},
		{-Epsilon, -One, 0, 0, One - Epsilon, -1},
		{MinFixed, MinFixed, MinFixed, MinFixed, 0, -1 << 31},
		{MaxFixed, MaxFixed &^ fracMask, MinFixed, MinFixed, fracMask, 1<<31 - 1}, // Ceil, Round wrap
		{MaxFixed - Half, MaxFixed &^ fracMask, MinFixed, MaxFixed &^ fracMask, Half - 1, 1<<31 - 1},
		{MaxFixed&^fracMask + Half, MaxFixed &^ fracMask, MinFixed, MinFixed, Half, 1<<31 - 1}, // Round wraps
	} {
		t.Run(tc.x.String(), func(t *testing.T) {
			assertEqual(t, tc.floor, tc.x.Floor(), "Floor")
			assertEqual(t, tc.ceil, tc.x.Ceil(), "Ceil")
			assertEqual(t, tc.round, tc.x.Round(), "Round")
			assertEqual(t, tc.frac, tc.x.Frac(), "Frac")
			assertEqual(t, tc.int, tc.x.Int(), "Int")
		})
	}
}

func TestAddSubNegAbs(t *testing.T) {
	for _, tc := range []struct {
		x, y, sum, diff, neg, abs Fixed
	}{
		{One, Half, One + Half, Half, -One, One},
		{-One, Half, -Half, -One - Half, One, One},
		{MaxFixed, Epsilon, MinFixed, MaxFixed - 1, MinFixed + 1, MaxFixed},
		{MinFixed, Epsilon, MinFixed + 1, MaxFixed, MinFixed, MinFixed}, // wraps
	} {
		assertEqual(t, tc.sum, tc.x.Add(tc.y))
		assertEqual(t, tc.diff, tc.x.Sub(tc.y))
		assertEqual(t, tc.neg, tc.x.Neg())
		assertEqual(t, tc.abs, tc.x.Abs())
	}
}

func TestMul(t *testing.T) {
	for _, tc := range []struct {
		x, y, want Fixed
	}{
		{One + Half, FromInt(2), FromInt(3)},
		{-Half, Half, -One / 4},
		{Half, -Half, -One / 4},
		{-Half, -Half, One / 4},
		{Epsilon, Half, Epsilon},                       // 0.5 raw: tie, away from zero
		{-Epsilon, Half, -Epsilon},                     // tie, away from zero
		{Epsilon, Half - 1, 0},                         // below the tie
		{3, Half, 2},                                   // 1.5 raw: tie, away from zero
		{MaxFixed, One, MaxFixed},                      //
		{MinFixed, One, MinFixed},                      //
		{MinFixed, -One, MinFixed},                     // wraps
		{MaxFixed, FromInt(2), -2},                     // wraps
		{MinFixed, MinFixed, 0},                        // 2^62 wraps to 0
		{FromInt(1 << 16), FromInt(1 << 15), MinFixed}, // 2^31 wraps
	} {
		assertEqual(t, tc.want, tc.x.Mul(tc.y), "%v * %v", tc.x, tc.y)
		assertEqual(t, tc.want, tc.y.Mul(tc.x), "%v * %v", tc.y, tc.x)
	}
	r := newTestRand(2)
	for range 50000 {
		x, y := randRaw(r), randRaw(r)
		p := new(big.Int).Mul(big.NewInt(int64(x)), big.NewInt(int64(y)))
		want := refDivRound(p, big.NewInt(1<<FracBits))
		requireEqual(t, want, x.Mul(y).Raw(), "%d * %d (raw)", x, y)
	}
}

func TestDiv(t *testing.T) {
	for _, tc := range []struct {
		x, y, want Fixed
	}{
		{FromInt(3), FromInt(2), One + Half},
		{One, FromInt(3), 1431655765},
		{-One, FromInt(3), -1431655765},
		{FromInt(2), FromInt(3), 2863311531},
		{FromInt(-2), FromInt(-3), 2863311531},
		{Epsilon, FromInt(2), Epsilon},   // tie, away from zero
		{-Epsilon, FromInt(2), -Epsilon}, // tie, away from zero
		{Epsilon, FromInt(3), 0},
		{MinFixed, -One, MinFixed}, // wraps
		{One, Epsilon, 0},          // 2^64 wraps to 0
		{Half, Epsilon, MinFixed},  // 2^63 wraps
		{MaxFixed, MaxFixed, One},  //
		{MinFixed, MinFixed, One},  //
		{MinFixed, MaxFixed, -One}, // -1 - 2^-63 rounds to -1
		{FromInt(7), FromInt(-7), -One},
	} {
		assertEqual(t, tc.want, tc.x.Div(tc.y), "%v / %v", tc.x, tc.y)
	}
	assertPanics(t, "determinism: Fixed division by zero", func() { One.Div(0) })

	r := newTestRand(3)
	for range 50000 {
		x, y := randRaw(r), randRaw(r)
		if y == 0 {
			continue
		}
		want := refDivRound(new(big.Int).Lsh(big.NewInt(int64(x)), FracBits), big.NewInt(int64(y)))
		requireEqual(t, want, x.Div(y).Raw(), "%d / %d (raw)", x, y)
	}
}

func TestMulIntDivInt(t *testing.T) {
	for _, tc := range []struct {
		x        Fixed
		n        int64
		mul, quo Fixed
	}{
		{One + Half, 2, FromInt(3), FromInt(3) / 4},
		{-One, 3, FromInt(-3), -1431655765},
		{Epsilon, 2, 2, Epsilon},    // quotient: tie, away from zero
		{-Epsilon, 2, -2, -Epsilon}, // tie, away from zero
		{FromInt(5), -1, FromInt(-5), FromInt(-5)},
		{MinFixed, -1, MinFixed, MinFixed}, // both wrap
		{MaxFixed, 2, -2, 1 << 62},         // 2^62 - 0.5 rounds up
		{FromInt(10), math.MinInt64, 0, 0},
	} {
		assertEqual(t, tc.mul, tc.x.MulInt(tc.n), "%v.MulInt(%d)", tc.x, tc.n)
		assertEqual(t, tc.quo, tc.x.DivInt(tc.n), "%v.DivInt(%d)", tc.x, tc.n)
	}
	assertPanics(t, "determinism: Fixed division by zero", func() { One.DivInt(0) })
	r := newTestRand(4)
	for range 20000 {
		x, n := randRaw(r), int64(randRaw(r))
		if n == 0 {
			continue
		}
		requireEqual(t, refDivRound(big.NewInt(int64(x)), big.NewInt(n)), x.DivInt(n).Raw(), "%d.DivInt(%d)", x, n)
	}
}

func TestCmpMinMaxClamp(t *testing.T) {
	for _, tc := range []struct {
		a, b     Fixed
		cmp      int
		min, max Fixed
	}{
		{One, Half, 1, Half, One},
		{Half, One, -1, Half, One},
		{-One, -One, 0, -One, -One},
		{MinFixed, MaxFixed, -1, MinFixed, MaxFixed},
	} {
		assertEqual(t, tc.cmp, tc.a.Cmp(tc.b))
		assertEqual(t, tc.min, Min(tc.a, tc.b))
		assertEqual(t, tc.max, Max(tc.a, tc.b))
	}
	for _, tc := range []struct {
		x, lo, hi, want Fixed
	}{
		{Half, 0, One, Half},
		{-Half, 0, One, 0},
		{FromInt(2), 0, One, One},
		{FromInt(2), One, One, One},
	} {
		assertEqual(t, tc.want, Clamp(tc.x, tc.lo, tc.hi))
	}
	assertPanics(t, "determinism: Clamp with lo > hi", func() { Clamp(0, One, 0) })
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		x    Fixed
		want string
	}{
		{0, "0"},
		{One, "1"},
		{-One, "-1"},
		{One + Half, "1.5"},
		{-One / 4, "-0.25"},
		{Epsilon, "0.00000000023283064365386962890625"},
		{-Epsilon, "-0.00000000023283064365386962890625"},
		{MinFixed, "-2147483648"},
		{MaxFixed, "2147483647.99999999976716935634613037109375"},
		{Pi, "3.14159265370108187198638916015625"},
	} {
		assertEqual(t, tc.want, tc.x.String())
	}
	r := newTestRand(5)
	for range 5000 {
		x := randRaw(r)
		got, ok := new(big.Rat).SetString(x.String())
		requireTrue(t, ok, x.String())
		want := new(big.Rat).SetFrac(big.NewInt(int64(x)), big.NewInt(1<<FracBits))
		requireEqual(t, 0, got.Cmp(want), "String of raw %d = %s", x, x.String())
	}
}
