// Package uuidgen is a third-party-style identifier generator, not marked,
// that reads crypto/rand.
package uuidgen

import "crypto/rand"

// New returns a random 16-byte identifier.
func New() [16]byte { // want New:`rand: via uuidgen.New: rand.Read at uuidgen/uuidgen.go:10`
	var id [16]byte
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40
	return id
}

// Must returns New's identifier as a string.
func Must() string { // want Must:`rand: via uuidgen.Must → uuidgen.New`
	id := New()
	return string(id[:])
}

// Nil returns the zero identifier: no fact.
func Nil() [16]byte { return [16]byte{} }
