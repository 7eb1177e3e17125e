package rng

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"slices"
)

// Seed is a 256-bit session seed, agreed by every member. It selects both the
// seed and the stream of the session's generator (see [Seed.PCG]).
type Seed [32]byte

const (
	commitDomain = "phalanx-seed-commit"
	seedDomain   = "phalanx-seed"
)

// Commit returns the commitment a member publishes before revealing its
// contribution in a commit-then-reveal seed agreement:
// SHA-256("phalanx-seed-commit" || uvarint(len(contribution)) || contribution).
// Once every commitment is known, each member reveals its contribution and the
// others check it with [VerifyCommit], so no member can choose its
// contribution after seeing the others'.
func Commit(contribution []byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(commitDomain))
	h.Write(binary.AppendUvarint(nil, uint64(len(contribution))))
	h.Write(contribution)
	var c [32]byte
	h.Sum(c[:0])
	return c
}

// VerifyCommit reports whether contribution matches the commitment c.
func VerifyCommit(c [32]byte, contribution []byte) bool {
	return Commit(contribution) == c
}

// SharedSeed derives the session seed from every member's contribution.
// The result does not depend on the order of contributions: they are sorted
// bytewise, then hashed as SHA-256("phalanx-seed" || for each contribution:
// uvarint(len) || contribution). The length prefixes keep distinct sets of
// contributions from hashing the same bytes. contributions is not modified.
func SharedSeed(contributions [][]byte) Seed {
	sorted := slices.Clone(contributions)
	slices.SortFunc(sorted, bytes.Compare)
	h := sha256.New()
	h.Write([]byte(seedDomain))
	var lenBuf [binary.MaxVarintLen64]byte
	for _, c := range sorted {
		h.Write(lenBuf[:binary.PutUvarint(lenBuf[:], uint64(len(c)))])
		h.Write(c)
	}
	var s Seed
	h.Sum(s[:0])
	return s
}

// SeedFromUint64 expands a plain 64-bit seed (a command-line --seed, a test
// seed) into a Seed: SHA-256("phalanx-seed" || seed as 8 bytes big-endian).
func SeedFromUint64(seed uint64) Seed {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], seed)
	h := sha256.New()
	h.Write([]byte(seedDomain))
	h.Write(buf[:])
	var s Seed
	h.Sum(s[:0])
	return s
}

// PCG returns the generator the seed names: New(big-endian uint64 of s[0:8],
// big-endian uint64 of s[8:16]).
func (s Seed) PCG() *PCG {
	return New(binary.BigEndian.Uint64(s[0:8]), binary.BigEndian.Uint64(s[8:16]))
}

// Uint64 returns the first 8 bytes of the seed as a big-endian integer, a
// short form for logs and for configurations that take a 64-bit seed.
func (s Seed) Uint64() uint64 {
	return binary.BigEndian.Uint64(s[0:8])
}
