package determinism

import (
	"math"
	"math/big"
	"testing"
)

// Accuracy bounds checked by the tests: half a unit of 2^-32 (the final
// rounding) plus the documented intermediate error, plus 1e-15 for the
// float64 reference itself. The package promises far less than the 1e-7 the
// simulations need.
var (
	sinCosBound = 0x1p-33 + 1e-13 + 1e-15
	atan2Bound  = 0x1p-33 + 2e-15
	// atan2ClampBound applies where Atan2 moves -Pi to -Pi+Epsilon.
	atan2ClampBound = 0.53*0x1p-32 + 2e-15
)

// TestTrigConstants recomputes every constant of trig.go from a math/big π
// and series.
func TestTrigConstants(t *testing.T) {
	pi := refPi()
	q63 := func(f *big.Float) uint64 { return roundBig(ldexp(f, 63)).Uint64() }

	turns := roundBig(newFloat().Quo(ldexp(newFloat().SetInt64(1), 129), pi))
	hi := new(big.Int).Rsh(turns, 64).Uint64()
	lo := new(big.Int).And(turns, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	assertEqual(t, uint64(turnsHi), hi, "turnsHi")
	assertEqual(t, uint64(turnsLo), lo, "turnsLo")
	assertEqual(t, uint64(piOver4Q63), q63(ldexp(pi, -2)), "piOver4Q63")
	assertEqual(t, uint64(halfPiQ63), q63(ldexp(pi, -1)), "halfPiQ63")
	assertEqual(t, uint64(piQ62), roundBig(ldexp(pi, 62)).Uint64(), "piQ62")

	invFact := map[int]uint64{2: invFact2, 3: invFact3, 4: invFact4, 5: invFact5,
		6: invFact6, 7: invFact7, 8: invFact8, 9: invFact9, 10: invFact10,
		11: invFact11, 12: invFact12, 13: invFact13, 14: invFact14}
	fact := big.NewInt(1)
	for n := 2; n <= 14; n++ {
		fact.Mul(fact, big.NewInt(int64(n)))
		want := q63(newFloat().Quo(newFloat().SetInt64(1), newFloat().SetInt(fact)))
		assertEqual(t, invFact[n], want, "invFact%d", n)
	}
	assertEqual(t, uint64(inv3Q63), q63(newFloat().Quo(newFloat().SetInt64(1), newFloat().SetInt64(3))), "inv3Q63")
	assertEqual(t, uint64(inv5Q63), q63(newFloat().Quo(newFloat().SetInt64(1), newFloat().SetInt64(5))), "inv5Q63")

	for i := range atanTable {
		x := newFloat().Quo(newFloat().SetInt64(int64(i)), newFloat().SetInt64(64))
		assertEqual(t, atanTable[i], q63(refAtan(x)), "atanTable[%d]", i)
	}
	assertEqual(t, atanTable[64], uint64(piOver4Q63), "atan(1) = π/4")
}

func TestPhaseOf(t *testing.T) {
	// The phase against an exact math/big reduction: within 1.01 units.
	r := newTestRand(20)
	twoPi := ldexp(refPi(), 1)
	for range 3000 {
		x := randRaw(r)
		turns := newFloat().Quo(bigOf(x), twoPi)
		fl, _ := newFloat().Set(turns).Int(nil)
		if turns.Sign() < 0 {
			fl.Sub(fl, big.NewInt(1)) // floor
		}
		frac := newFloat().Sub(turns, newFloat().SetInt(fl))
		want, _ := ldexp(frac, 64).Float64()
		got := phaseOf(x)
		d := float64(got) - want
		if d > 0x1p63 {
			d -= 0x1p64
		} else if d < -0x1p63 {
			d += 0x1p64
		}
		// float64 holds the phase to 2^11 units; allow that much.
		if math.Abs(d) > 2048+1.01 {
			t.Fatalf("phaseOf(raw %d) = %d, want %.0f", x, got, want)
		}
	}
	assertEqual(t, uint64(0), phaseOf(0))
	assertEqual(t, uint64(1<<63), phaseOf(Pi)&^(1<<30-1), "Pi is half a turn")
}

func TestTrigIdentities(t *testing.T) {
	for _, tc := range []struct {
		x, sin, cos Fixed
	}{
		{0, 0, One},
		{HalfPi, One, 0},
		{Pi, 0, -One},
		{-HalfPi, -One, 0},
		{-Pi, 0, -One},
		{TwoPi, 0, One},
		{Epsilon, Epsilon, One},
		{-Epsilon, -Epsilon, One},
	} {
		assertEqual(t, tc.sin, Sin(tc.x), "Sin(%v)", tc.x)
		assertEqual(t, tc.cos, Cos(tc.x), "Cos(%v)", tc.x)
		s, c := SinCos(tc.x)
		assertEqual(t, tc.sin, s, "SinCos(%v) sin", tc.x)
		assertEqual(t, tc.cos, c, "SinCos(%v) cos", tc.x)
	}
	r := newTestRand(21)
	for range 20000 {
		x := randRaw(r)
		requireEqual(t, -Sin(x), Sin(-x), "Sin(-x) == -Sin(x), x = raw %d", x)
		requireEqual(t, Cos(x), Cos(-x), "Cos(-x) == Cos(x), x = raw %d", x)
	}
}

// trigErrors tracks the largest error seen.
type trigErrors struct {
	max float64
	at  Fixed
}

func (e *trigErrors) add(t *testing.T, name string, x, got Fixed, want, bound float64) {
	t.Helper()
	d := math.Abs(got.Float64() - want)
	if d > e.max {
		e.max, e.at = d, x
	}
	if d > bound {
		t.Fatalf("%s(raw %d) = %v, want %.17g (error %.3g > %.3g)", name, x, got, want, d, bound)
	}
}

func TestSinCosSweep(t *testing.T) {
	// Dense sweep of [-4π, 4π] with an odd step so every low-bit pattern is
	// visited; |x| < 2^21 converts to float64 exactly and math.Sin is
	// accurate there.
	const n = 1 << 17
	step := (4 * TwoPi / n) | 1
	var es, ec trigErrors
	for x := -4 * TwoPi; x <= 4*TwoPi; x += step {
		s, c := SinCos(x)
		es.add(t, "Sin", x, s, math.Sin(x.Float64()), sinCosBound)
		ec.add(t, "Cos", x, c, math.Cos(x.Float64()), sinCosBound)
	}
	// Around every multiple of π/4 (octant boundaries).
	for k := int64(-32); k <= 32; k++ {
		c := FromFraction(k*13493037705, 4<<32) // k·Pi/4
		for d := Fixed(-300); d <= 300; d++ {
			x := c + d
			es.add(t, "Sin", x, Sin(x), math.Sin(x.Float64()), sinCosBound)
			ec.add(t, "Cos", x, Cos(x), math.Cos(x.Float64()), sinCosBound)
		}
	}
	t.Logf("max |error| over [-4π, 4π]: Sin %.3g at %v, Cos %.3g at %v", es.max, es.at, ec.max, ec.at)
}

func TestSinCosFullRange(t *testing.T) {
	// Random values over the whole int64 range at every scale, against an
	// exact math/big reduction.
	r := newTestRand(22)
	var es, ec trigErrors
	for range 12000 {
		x := randRaw(r)
		es.add(t, "Sin", x, Sin(x), refSin(x), sinCosBound)
		ec.add(t, "Cos", x, Cos(x), refCos(x), sinCosBound)
	}
	for _, x := range []Fixed{MaxFixed, MinFixed, MaxFixed - 1, MinFixed + 1, FromInt(1 << 30), FromInt(123456789)} {
		es.add(t, "Sin", x, Sin(x), refSin(x), sinCosBound)
		ec.add(t, "Cos", x, Cos(x), refCos(x), sinCosBound)
	}
	t.Logf("max |error| over the full range: Sin %.3g at %v, Cos %.3g at %v", es.max, es.at, ec.max, ec.at)
}

func TestAtan2Special(t *testing.T) {
	for _, tc := range []struct {
		y, x, want Fixed
	}{
		{0, 0, 0},
		{0, One, 0},
		{0, MaxFixed, 0},
		{0, -One, Pi},
		{0, MinFixed, Pi},
		{One, 0, HalfPi},
		{-One, 0, -HalfPi},
		{MinFixed, 0, -HalfPi},
		{One, One, 3373259426},             // π/4
		{MinFixed, MinFixed, -10119778278}, // -3π/4
		{MaxFixed, MinFixed, 10119778278},  // 3π/4 - 2^-63
		{-Epsilon, MinFixed, -Pi + 1},      // -π + 2^-63: clamped into (-Pi, Pi]
		{Epsilon, MinFixed, Pi},
		{-Epsilon, -One, -Pi + 1}, // -π + 2^-32
	} {
		assertEqual(t, tc.want, Atan2(tc.y, tc.x), "Atan2(%v, %v)", tc.y, tc.x)
	}
}

func TestAtan2(t *testing.T) {
	var e, clamped trigErrors
	check := func(y, x Fixed) {
		t.Helper()
		got := Atan2(y, x)
		if got <= -Pi || got > Pi {
			t.Fatalf("Atan2(raw %d, raw %d) = %v, outside (-Pi, Pi]", y, x, got)
		}
		want := math.Atan2(y.Float64(), x.Float64())
		if got == -Pi+1 {
			clamped.add(t, "Atan2", y, got, want, atan2ClampBound)
		} else {
			e.add(t, "Atan2", y, got, want, atan2Bound)
		}
	}
	r := newTestRand(23)
	// Random raw pairs at independent scales: every quadrant, every ratio.
	for range 100000 {
		check(randRaw(r), randRaw(r))
	}
	// Points on circles of every radius from 2^-31 to 2^30, all angles.
	for k := -31; k <= 30; k++ {
		for i := range 1024 {
			a := 2 * math.Pi * (float64(i) + r.Float64()) / 1024
			rad := math.Ldexp(1, k)
			check(FromFloat64(rad*math.Sin(a)), FromFloat64(rad*math.Cos(a)))
		}
	}
	// Ratios near each table point i/64, where the correction changes sign.
	for i := int64(0); i <= 64; i++ {
		for d := int64(-50); d <= 50; d++ {
			x := FromInt(1 << 20)
			y := Fixed(i<<46 + d)
			check(y, x)
			check(-x, y)
		}
	}
	t.Logf("max |error| of Atan2: %.3g (%.3g where clamped to -Pi+Epsilon)", e.max, clamped.max)
}

func TestMulQ63(t *testing.T) {
	r := newTestRand(24)
	for range 1000 {
		a, b := r.Uint64(), r.Uint64()>>1
		want := new(big.Int).Rsh(new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b)), 63)
		requireEqual(t, want.Uint64(), mulQ63(a, b))
	}
}
