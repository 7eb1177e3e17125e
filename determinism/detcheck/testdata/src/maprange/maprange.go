//phalanx:deterministic

// Package maprange exercises the maprange rule.
package maprange

import (
	"maps"
	"slices"
)

type Table map[string]int

func Sum(m map[string]int, t Table) int {
	total := 0
	for _, v := range m { // want `range over map: iteration order is random; use determinism.SortedKeys \[maprange\]`
		total += v
	}
	for k := range t { // want `range over map`
		total += len(k)
	}
	for range maps.Keys(m) { // want `maps.Keys iterates a map in random order`
		total++
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		total += m[k]
	}
	for range slices.Collect(maps.Values(m)) { // want `maps.Values iterates a map in random order`
		total++
	}
	s := []int{1, 2}
	for _, v := range s {
		total += v
	}
	for i := range 3 {
		total += i
	}
	return total
}

func Generic[M ~map[K]V, K comparable, V any](m M) int {
	n := 0
	for range m { // want `range over map`
		n++
	}
	return n
}
