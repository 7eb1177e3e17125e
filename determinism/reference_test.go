package determinism

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sync"
)

// Reference implementations in math/big, deliberately simple and slow, that
// the integer code is checked against.

const refPrec = 512

// refPi returns π to about 600 bits, by Machin's formula
// π = 16·atan(1/5) - 4·atan(1/239) in big integers.
var refPi = sync.OnceValue(func() *big.Float {
	const scale = 640
	atanInv := func(n int64) *big.Int {
		sum := new(big.Int)
		term := new(big.Int).Lsh(big.NewInt(1), scale)
		term.Quo(term, big.NewInt(n))
		n2 := big.NewInt(n * n)
		for k := int64(1); term.Sign() != 0; k += 2 {
			t := new(big.Int).Quo(term, big.NewInt(k))
			if k%4 == 1 {
				sum.Add(sum, t)
			} else {
				sum.Sub(sum, t)
			}
			term.Quo(term, n2)
		}
		return sum
	}
	p := new(big.Int).Mul(atanInv(5), big.NewInt(16))
	p.Sub(p, new(big.Int).Mul(atanInv(239), big.NewInt(4)))
	f := new(big.Float).SetPrec(refPrec).SetInt(p)
	return f.SetMantExp(f, -scale)
})

func newFloat() *big.Float { return new(big.Float).SetPrec(refPrec) }

// bigOf returns the exact value of x.
func bigOf(x Fixed) *big.Float {
	f := newFloat().SetInt64(int64(x))
	return f.SetMantExp(f, -FracBits)
}

// ldexp returns f·2^e.
func ldexp(f *big.Float, e int) *big.Float { return newFloat().SetMantExp(f, e) }

// roundBig rounds a non-negative f to the nearest integer, ties up.
func roundBig(f *big.Float) *big.Int {
	i, _ := newFloat().Add(f, big.NewFloat(0.5)).Int(nil)
	return i
}

// reduced returns the exact value of x minus the nearest multiple of 2π, as
// a float64 in [-π, π].
func reduced(x Fixed) float64 {
	f := bigOf(x)
	twoPi := ldexp(refPi(), 1)
	q := newFloat().Quo(f, twoPi)
	qi, _ := newFloat().Add(q, big.NewFloat(0.5)).Int(nil)
	if q.Sign() < 0 {
		qi, _ = newFloat().Sub(q, big.NewFloat(0.5)).Int(nil)
	}
	r := newFloat().Sub(f, newFloat().Mul(newFloat().SetInt(qi), twoPi))
	v, _ := r.Float64()
	return v
}

func refSin(x Fixed) float64 { return math.Sin(reduced(x)) }
func refCos(x Fixed) float64 { return math.Cos(reduced(x)) }

// refAtan returns atan(x) for 0 <= x <= 1 to about refPrec bits: three
// halvings x -> x/(1+sqrt(1+x²)) bring x below 0.1, then the Taylor series.
func refAtan(x *big.Float) *big.Float {
	one := newFloat().SetInt64(1)
	y := newFloat().Set(x)
	for range 3 {
		s := newFloat().Mul(y, y)
		s.Add(s, one).Sqrt(s).Add(s, one)
		y.Quo(y, s)
	}
	sum := newFloat()
	y2 := newFloat().Mul(y, y)
	term := newFloat().Set(y)
	for k := int64(1); k < 400; k += 2 {
		t := newFloat().Quo(term, newFloat().SetInt64(k))
		if k%4 == 1 {
			sum.Add(sum, t)
		} else {
			sum.Sub(sum, t)
		}
		term.Mul(term, y2)
	}
	return ldexp(sum, 3)
}

// refDivRound returns num/den rounded to nearest, ties away from zero, then
// wrapped modulo 2^64 into an int64.
func refDivRound(num, den *big.Int) int64 {
	q, r := new(big.Int).QuoRem(num, den, new(big.Int)) // truncated
	r2 := new(big.Int).Abs(r)
	r2.Lsh(r2, 1)
	if r2.Cmp(new(big.Int).Abs(den)) >= 0 {
		if (num.Sign() < 0) != (den.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return wrap(q)
}

// wrap reduces v modulo 2^64 into the int64 range.
func wrap(v *big.Int) int64 {
	m := new(big.Int).Lsh(big.NewInt(1), 64)
	u := new(big.Int).Mod(v, m)
	return int64(u.Uint64())
}

// randRaw returns a random raw value whose magnitude is spread over all
// scales: a full 64-bit random value shifted right by a random amount.
func randRaw(r *rand.Rand) Fixed {
	return Fixed(int64(r.Uint64()) >> r.IntN(64))
}

func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }
