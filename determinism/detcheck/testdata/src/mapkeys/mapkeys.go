// Package mapkeys is a helper package, not marked, that hides map order
// behind functions, the way a game's utility package does.
package mapkeys

import (
	"iter"
	"slices"
)

// Keys returns the keys of m in map order.
func Keys[K comparable, V any](m map[K]V) []K { // want Keys:`maprange: via mapkeys.Keys: range over map at mapkeys/mapkeys.go:13`
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// All yields the entries of m in map order.
func All[K comparable, V any](m map[K]V) iter.Seq2[K, V] { // want All:`maprange: via mapkeys.All: range over map`
	return func(yield func(K, V) bool) {
		for k, v := range m {
			if !yield(k, v) {
				return
			}
		}
	}
}

// Ordered returns the keys of m sorted: no fact.
func Ordered(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Total sums the values of m: the order does not matter, no fact.
func Total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Names reaches map order through Keys, one call further.
func Names(m map[string]bool) []string { // want Names:`maprange: via mapkeys.Names → mapkeys.Keys: range over map`
	return Keys(m)
}

// Any returns some key of m, or the zero key: the helper's author allows
// it, so its callers are not told.
//
//phalanx:allow maprange any key will do for the callers of this helper
func Any[K comparable, V any](m map[K]V) K {
	for k := range m {
		return k
	}
	var zero K
	return zero
}
