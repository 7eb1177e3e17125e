// Package debugfmt is a helper package, not marked, that formats pointers
// and hashes with a per-process seed.
package debugfmt

import (
	"fmt"
	"hash/maphash"
)

// Tag names an object by its address.
func Tag(p any) string { // want Tag:`pointer: via debugfmt.Tag: %p or uintptr of a pointer at debugfmt/debugfmt.go:12`
	return fmt.Sprintf("obj-%p", p)
}

var seed = maphash.MakeSeed()

// Bucket spreads names over n buckets.
func Bucket(name string, n int) int { // want Bucket:`maphash: via debugfmt.Bucket: maphash.String`
	return int(maphash.String(seed, name) % uint64(n))
}

// Label names an object by a number it is given: no fact.
func Label(id int) string { return fmt.Sprintf("obj-%d", id) }
