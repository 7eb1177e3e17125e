package determinism

import "github.com/phalanx-net/phalanx/rng"

// Unit returns a value uniformly distributed over the 2^32 Fixed values in
// [0, 1). It consumes exactly one draw, r.Uint32(), and returns it as the raw
// value: Fixed(r.Uint32()).
func Unit(r *rng.PCG) Fixed {
	return Fixed(r.Uint32())
}

// UniformRange returns a value uniformly distributed over the Fixed values
// in [lo, hi), every raw value equally likely. It consumes exactly the draws
// of r.Uint64N(span) with span = raw(hi) - raw(lo) as an unsigned 64-bit
// integer (never 0), and returns lo + that offset: for span < 2^32 those are
// the draws of r.Uint32N(span), one Uint32 output per attempt; for larger
// spans, two outputs (one Uint64) per attempt; see [rng.PCG.Uint64N].
//
// It panics if hi <= lo.
func UniformRange(r *rng.PCG, lo, hi Fixed) Fixed {
	if hi <= lo {
		panic("determinism: UniformRange with hi <= lo")
	}
	span := uint64(hi) - uint64(lo)
	return Fixed(uint64(lo) + r.Uint64N(span))
}
