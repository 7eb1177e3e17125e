package determinism

import (
	"encoding/binary"
	"math/bits"
)

// xxHash64 (XXH64) as published by Yann Collet in the xxHash specification
// (doc/xxhash_spec.md of the xxHash repository), always with seed 0.

const (
	xxPrime1 uint64 = 0x9e3779b185ebca87
	xxPrime2 uint64 = 0xc2b2ae3d27d4eb4f
	xxPrime3 uint64 = 0x165667b19e3779f9
	xxPrime4 uint64 = 0x85ebca77c2b2ae63
	xxPrime5 uint64 = 0x27d4eb2f165667c5
)

// XXHash64 returns the XXH64 hash of b with seed 0, the function [Hasher]
// is built on. It is safe for concurrent use.
func XXHash64(b []byte) uint64 {
	var d xxDigest
	d.reset()
	d.write(b)
	return d.sum()
}

// xxDigest is a streaming XXH64 state with seed 0.
type xxDigest struct {
	v1, v2, v3, v4 uint64
	total          uint64   // bytes written
	buf            [32]byte // pending bytes of an incomplete stripe
	n              int      // bytes used in buf
}

func (d *xxDigest) reset() {
	p1, p2 := xxPrime1, xxPrime2 // variables: the sums wrap modulo 2^64
	d.v1 = p1 + p2
	d.v2 = p2
	d.v3 = 0
	d.v4 = -p1
	d.total = 0
	d.n = 0
}

func xxRound(acc, lane uint64) uint64 {
	acc += lane * xxPrime2
	acc = bits.RotateLeft64(acc, 31)
	return acc * xxPrime1
}

func xxMerge(acc, v uint64) uint64 {
	acc ^= xxRound(0, v)
	return acc*xxPrime1 + xxPrime4
}

// stripes consumes whole 32-byte stripes of b and returns the rest.
func (d *xxDigest) stripes(b []byte) []byte {
	v1, v2, v3, v4 := d.v1, d.v2, d.v3, d.v4
	for len(b) >= 32 {
		v1 = xxRound(v1, binary.LittleEndian.Uint64(b[0:8]))
		v2 = xxRound(v2, binary.LittleEndian.Uint64(b[8:16]))
		v3 = xxRound(v3, binary.LittleEndian.Uint64(b[16:24]))
		v4 = xxRound(v4, binary.LittleEndian.Uint64(b[24:32]))
		b = b[32:]
	}
	d.v1, d.v2, d.v3, d.v4 = v1, v2, v3, v4
	return b
}

func (d *xxDigest) write(b []byte) {
	d.total += uint64(len(b))
	if d.n > 0 {
		c := copy(d.buf[d.n:], b)
		d.n += c
		b = b[c:]
		if d.n < 32 {
			return
		}
		d.stripes(d.buf[:])
		d.n = 0
	}
	b = d.stripes(b)
	d.n = copy(d.buf[:], b)
}

// sum returns the hash of everything written so far without changing d.
func (d *xxDigest) sum() uint64 {
	var h uint64
	if d.total >= 32 {
		h = bits.RotateLeft64(d.v1, 1) + bits.RotateLeft64(d.v2, 7) +
			bits.RotateLeft64(d.v3, 12) + bits.RotateLeft64(d.v4, 18)
		h = xxMerge(h, d.v1)
		h = xxMerge(h, d.v2)
		h = xxMerge(h, d.v3)
		h = xxMerge(h, d.v4)
	} else {
		h = xxPrime5
	}
	h += d.total
	b := d.buf[:d.n]
	for ; len(b) >= 8; b = b[8:] {
		h ^= xxRound(0, binary.LittleEndian.Uint64(b))
		h = bits.RotateLeft64(h, 27)*xxPrime1 + xxPrime4
	}
	if len(b) >= 4 {
		h ^= uint64(binary.LittleEndian.Uint32(b)) * xxPrime1
		h = bits.RotateLeft64(h, 23)*xxPrime2 + xxPrime3
		b = b[4:]
	}
	for _, c := range b {
		h ^= uint64(c) * xxPrime5
		h = bits.RotateLeft64(h, 11) * xxPrime1
	}
	h ^= h >> 33
	h *= xxPrime2
	h ^= h >> 29
	h *= xxPrime3
	h ^= h >> 32
	return h
}
