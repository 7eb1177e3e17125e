package determinism

import (
	"cmp"
	"iter"
	"slices"
)

// SortedKeys returns the keys of m in ascending order (as [cmp.Compare]
// orders them), in a newly allocated slice. Map keys are distinct, so the
// order is fully determined, except that floating-point NaN keys, which
// should not be used, end up first in an unspecified order.
func SortedKeys[M ~map[K]V, K cmp.Ordered, V any](m M) []K {
	keys := make([]K, 0, len(m))
	for k := range m { //phalanx:allow maprange (sorted below)
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Sorted returns an iterator over the key-value pairs of m in ascending key
// order. Each iteration takes a snapshot of the keys when it starts (one
// allocation, as [SortedKeys]) and looks each value up when it is yielded:
// a key deleted meanwhile is skipped, a key added meanwhile is not visited,
// and a changed value is seen with its new value. NaN keys are never
// yielded.
func Sorted[M ~map[K]V, K cmp.Ordered, V any](m M) iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for _, k := range SortedKeys(m) {
			v, ok := m[k]
			if !ok {
				continue
			}
			if !yield(k, v) {
				return
			}
		}
	}
}
