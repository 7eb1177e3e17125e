//phalanx:deterministic

// Package maphashuse exercises the maphash rule.
package maphashuse

import "hash/maphash" // want `import of hash/maphash: its seed is random per process`

func Hash(b []byte) uint64 {
	return maphash.Bytes(maphash.MakeSeed(), b) // want `maphash.Bytes: hash/maphash is seeded at random` `maphash.MakeSeed`
}
