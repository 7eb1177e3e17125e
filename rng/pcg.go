package rng

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// multiplier is the 64-bit LCG multiplier of the reference implementation.
const multiplier = 6364136223846793005

// PCG is a PCG32 generator: a 64-bit linear congruential state advanced with
// an odd increment (which selects one of 2^63 streams), output through the
// XSH-RR permutation.
//
// The zero value is a valid generator with state 0 and increment 0; it is not
// the same generator as New(0, 0) and, because its increment is even, its
// period is shorter. Use [New] or [PCG.Seed].
//
// A PCG is not safe for concurrent use.
type PCG struct {
	state uint64
	inc   uint64
}

// New returns a generator seeded as the reference pcg32_srandom_r(&r, seed, stream):
// the same sequence of [PCG.Uint32] values follows.
func New(seed, stream uint64) *PCG {
	p := &PCG{}
	p.Seed(seed, stream)
	return p
}

// Seed resets p exactly as the reference pcg32_srandom_r(&r, seed, stream):
// state = 0, inc = stream<<1 | 1, one step, state += seed, one step.
func (p *PCG) Seed(seed, stream uint64) {
	p.state = 0
	p.inc = stream<<1 | 1
	p.step()
	p.state += seed
	p.step()
}

func (p *PCG) step() {
	p.state = p.state*multiplier + p.inc
}

// Uint32 returns the next 32-bit output, as the reference pcg32_random_r:
// the output permutes the state before the step (XSH-RR: xorshift high bits,
// then a random rotation by the top five bits).
func (p *PCG) Uint32() uint32 {
	old := p.state
	p.step()
	xorshifted := uint32(((old >> 18) ^ old) >> 27)
	rot := int(old >> 59)
	return bits.RotateLeft32(xorshifted, -rot)
}

// Uint64 returns a 64-bit value made of two outputs: the first becomes the
// high 32 bits and the second the low 32 bits.
func (p *PCG) Uint64() uint64 {
	hi := uint64(p.Uint32())
	return hi<<32 | uint64(p.Uint32())
}

// Uint32N returns a uniformly distributed value in [0, n) without modulo
// bias, using the reference pcg32_boundedrand_r algorithm so that a port
// matches it exactly: threshold = (2^32 - n) mod n; draw outputs r until
// r >= threshold; return r mod n. For n a power of two this consumes exactly
// one output; otherwise the expected number of outputs is below 2.
//
// It panics if n is 0.
func (p *PCG) Uint32N(n uint32) uint32 {
	if n == 0 {
		panic("rng: Uint32N called with n == 0")
	}
	threshold := -n % n
	for {
		r := p.Uint32()
		if r >= threshold {
			return r % n
		}
	}
}

// Uint64N returns a uniformly distributed value in [0, n) without modulo
// bias. For n < 2^32 it is exactly Uint32N(uint32(n)). For larger n it applies
// the same threshold rejection to 64-bit values: threshold = (2^64 - n) mod n;
// draw r = [PCG.Uint64] until r >= threshold; return r mod n.
//
// It panics if n is 0.
func (p *PCG) Uint64N(n uint64) uint64 {
	if n == 0 {
		panic("rng: Uint64N called with n == 0")
	}
	if n <= 1<<32-1 {
		return uint64(p.Uint32N(uint32(n)))
	}
	threshold := -n % n
	for {
		r := p.Uint64()
		if r >= threshold {
			return r % n
		}
	}
}

// IntN returns a uniformly distributed value in [0, n), drawn exactly as
// Uint64N(uint64(n)) (so as Uint32N for n < 2^32).
//
// It panics if n <= 0.
func (p *PCG) IntN(n int) int {
	if n <= 0 {
		panic("rng: IntN called with n <= 0")
	}
	return int(p.Uint64N(uint64(n)))
}

// Shuffle permutes n elements by Fisher-Yates from the last index down, as the
// reference demo shuffles its deck: for i from n-1 down to 1, j = IntN(i+1),
// swap(i, j). swap is called even when i == j.
//
// It panics if n < 0.
func (p *PCG) Shuffle(n int, swap func(i, j int)) {
	if n < 0 {
		panic("rng: Shuffle called with n < 0")
	}
	for i := n - 1; i > 0; i-- {
		swap(i, p.IntN(i+1))
	}
}

// Derive returns a new generator for a separate purpose, named by label. It
// depends only on p's current state and increment and on label, and does not
// advance p, so deriving streams in any order gives the same streams.
//
// Specification: d = SHA-256("phalanx-rng-derive" || state as 8 bytes
// big-endian || inc as 8 bytes big-endian || label); the child is
// New(big-endian uint64 of d[0:8], big-endian uint64 of d[8:16]).
func (p *PCG) Derive(label string) *PCG {
	h := sha256.New()
	var buf [16]byte
	binary.BigEndian.PutUint64(buf[0:8], p.state)
	binary.BigEndian.PutUint64(buf[8:16], p.inc)
	h.Write([]byte(deriveDomain))
	h.Write(buf[:])
	h.Write([]byte(label))
	var d [sha256.Size]byte
	h.Sum(d[:0])
	return New(binary.BigEndian.Uint64(d[0:8]), binary.BigEndian.Uint64(d[8:16]))
}

const deriveDomain = "phalanx-rng-derive"

// marshalPrefix starts every encoding produced by MarshalBinary.
const marshalPrefix = "pcg32:"

// ErrInvalidState is returned by UnmarshalBinary for data that
// MarshalBinary did not produce.
var ErrInvalidState = errors.New("rng: invalid PCG state encoding")

// MarshalBinary encodes the generator's full state: the 6 bytes "pcg32:"
// followed by the state and the increment, each 8 bytes big-endian. It never
// returns an error.
func (p *PCG) MarshalBinary() ([]byte, error) {
	return p.AppendBinary(make([]byte, 0, len(marshalPrefix)+16))
}

// AppendBinary appends the encoding of MarshalBinary to b.
func (p *PCG) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, marshalPrefix...)
	b = binary.BigEndian.AppendUint64(b, p.state)
	b = binary.BigEndian.AppendUint64(b, p.inc)
	return b, nil
}

// UnmarshalBinary restores a state encoded by MarshalBinary. It returns an
// error wrapping ErrInvalidState, and leaves p unchanged, when data has the
// wrong length or prefix or an even increment.
func (p *PCG) UnmarshalBinary(data []byte) error {
	if len(data) != len(marshalPrefix)+16 || string(data[:len(marshalPrefix)]) != marshalPrefix {
		return fmt.Errorf("%w: want %d bytes starting %q, got %d bytes", ErrInvalidState, len(marshalPrefix)+16, marshalPrefix, len(data))
	}
	rest := data[len(marshalPrefix):]
	inc := binary.BigEndian.Uint64(rest[8:16])
	if inc&1 == 0 {
		return fmt.Errorf("%w: increment %#x is even", ErrInvalidState, inc)
	}
	p.state = binary.BigEndian.Uint64(rest[0:8])
	p.inc = inc
	return nil
}
