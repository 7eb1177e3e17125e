package determinism

import (
	"testing"

	"github.com/phalanx-net/phalanx/rng"
)

func TestUnit(t *testing.T) {
	a, b := rng.New(42, 54), rng.New(42, 54)
	for range 1000 {
		u := Unit(a)
		requireEqual(t, Fixed(b.Uint32()), u, "Unit is the raw Uint32 draw")
		requireTrue(t, u >= 0 && u < One, "Unit in [0, 1)")
	}
}

// refUniformRange is the documented draw procedure written out with plain
// Uint32 and Uint64 draws: threshold rejection, then modulo.
func refUniformRange(r *rng.PCG, lo, hi Fixed) Fixed {
	span := uint64(hi) - uint64(lo)
	if span < 1<<32 {
		n := uint32(span)
		threshold := -n % n
		for {
			if x := r.Uint32(); x >= threshold {
				return Fixed(uint64(lo) + uint64(x%n))
			}
		}
	}
	threshold := -span % span
	for {
		if x := r.Uint64(); x >= threshold {
			return Fixed(uint64(lo) + x%span)
		}
	}
}

func TestUniformRange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi Fixed
	}{
		{"one value", Half, Half + 1},
		{"two values", -1, 1},
		{"unit", 0, One},
		{"small odd span", -FromInt(3), FromInt(1000) + 7},
		{"span 2^32-1", 0, One - 1},
		{"span 2^32", -Half, Half},
		{"span 2^32+1", 0, One + 1},
		{"large", FromInt(-1000), FromInt(1 << 30)},
		{"everything", MinFixed, MaxFixed},
		{"near the top", MaxFixed - 3, MaxFixed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := rng.New(7, 11), rng.New(7, 11)
			for range 2000 {
				got := UniformRange(a, tc.lo, tc.hi)
				requireTrue(t, got >= tc.lo && got < tc.hi, "%v outside [%v, %v)", got, tc.lo, tc.hi)
				requireEqual(t, refUniformRange(b, tc.lo, tc.hi), got)
			}
			// Both generators consumed the same draws.
			requireEqual(t, b.Uint32(), a.Uint32(), "draws consumed")
		})
	}
	r := rng.New(1, 1)
	assertPanics(t, "determinism: UniformRange with hi <= lo", func() { UniformRange(r, One, One) })
	assertPanics(t, "determinism: UniformRange with hi <= lo", func() { UniformRange(r, One, 0) })
}

func TestUniformRangeCoversSmallSpan(t *testing.T) {
	r := rng.New(3, 3)
	var seen [5]int
	for range 5000 {
		seen[UniformRange(r, 10, 15)-10]++
	}
	for i, n := range seen {
		if n < 850 || n > 1150 {
			t.Errorf("raw value %d drawn %d times in 5000, want about 1000", 10+i, n)
		}
	}
}
