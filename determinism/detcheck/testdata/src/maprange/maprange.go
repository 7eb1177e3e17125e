// Package maprange exercises the maprange rule: loops whose result depends
// on the order are reported, order-independent loops are not.
//
//phalanx:deterministic
package maprange

import (
	"maps"
	"reflect"
	"slices"
	"sort"
	"sync"

	"mapkeys"
)

type Unit struct {
	ID, HP, Owner int
	Moved         bool
	X, VX         int
}

type World struct {
	Units map[int]*Unit
	Order []int
	Log   []string
}

// Orderless holds loops whose result cannot depend on the order.
func Orderless(w *World, m map[string]int, hp map[int]int) int {
	total, count, best, least := 0, 0, 0, 1<<62
	for _, v := range m { // integer sum
		total += v
	}
	for _, u := range w.Units { // counting with a condition
		if u.Owner == 1 {
			count++
		}
	}
	for _, v := range m { // max and min of integers
		best = max(best, v)
		least = min(least, v)
	}
	for _, v := range m { // max through an if
		if v > best {
			best = v
		}
	}
	copied := make(map[string]int)
	for k, v := range m { // copying into another map
		copied[k] = v * 2
	}
	seen := make(map[int]bool)
	for _, u := range w.Units { // a set
		seen[u.Owner] = true
	}
	perOwner := make(map[int]int)
	for _, u := range w.Units { // counting into a map
		perOwner[u.Owner] += u.HP
	}
	for id, u := range w.Units { // deleting
		if u.HP <= 0 {
			delete(w.Units, id)
		}
	}
	for _, u := range w.Units { // each element on its own
		u.Moved = false
		u.X += u.VX
	}
	var keys []string
	for k := range m { // keys sorted on the next line
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ids := make([]int, 0, len(hp))
	for id := range hp {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		total += m[k]
	}
	sorted := mapkeys.Keys(m) // map order from a helper, sorted next
	slices.Sort(sorted)
	total += mapkeys.Total(m) + len(mapkeys.Ordered(m))
	total += len(mapkeys.Any(m)) // allowed in the helper: not followed
	for _, u := range w.Units {  // a pure method of the package
		total += u.cost(2)
	}
	return total + count + best + least + len(copied) + len(seen) + len(perOwner) + len(keys)
}

// Ordered holds loops and calls whose result depends on the order.
func Ordered(w *World, m map[string]int, f map[string]float64) float64 {
	for id := range w.Units { // want `range over map: iteration order is random and this loop depends on it; use determinism.SortedKeys \[maprange\]`
		w.Order = append(w.Order, id)
	}
	sum := 0.0
	for _, v := range f { // want `range over map.*\[maprange\]`
		sum += v // want `float computation \(\+=\) is returned by maprange.Ordered.*\[float\]`
	}
	first := ""
	for k := range m { // want `range over map.*\[maprange\]`
		first = k
		break
	}
	for k, v := range m { // want `range over map.*\[maprange\]`
		if v > 3 {
			w.Log = append(w.Log, k)
		}
	}
	last := 0
	for _, u := range w.Units { // want `range over map.*\[maprange\]`
		last = u.ID // the last one wins
	}
	a, b := 0, 0
	for _, v := range m { // want `range over map.*\[maprange\]`
		a += b // reads what an earlier iteration wrote
		b += v
	}
	capped := 0
	for _, v := range m { // want `range over map.*\[maprange\]`
		if capped < 10 { // the sum so far decides
			capped += v
		}
	}
	last += a + capped
	partner := map[string]string{}
	for k := range m { // want `range over map.*\[maprange\]`
		delete(m, partner[k]) // another key: visited or not, by order
	}
	gone := map[string]bool{"x": true}
	for k := range m { // want `range over map.*\[maprange\]`
		if gone[k] {
			delete(gone, "x") // read and deleted: the first to see it decides
			last++
		}
	}
	inverse := make(map[int]string)
	for k, v := range m { // want `range over map.*\[maprange\]`
		inverse[v] = k // equal values: the last key wins
	}
	for range maps.Keys(m) { // want `maps.Keys iterates a map in random order.*\[maprange\]`
		last++
	}
	w.Log = append(w.Log, mapkeys.Keys(m)...) // want `map order via mapkeys.Keys: range over map at mapkeys/mapkeys.go:13 \[maprange\]`
	for k := range mapkeys.All(m) {           // want `map order via mapkeys.All: range over map at mapkeys/mapkeys.go:22 \[maprange\]`
		w.Log = append(w.Log, k)
	}
	for _, u := range w.Units { // want `range over map.*\[maprange\]`
		last += u.bump() // changes the state: not pure
	}
	names := mapkeys.Names(map[string]bool{}) // want `map order via mapkeys.Names → mapkeys.Keys: range over map at mapkeys/mapkeys.go:13 \[maprange\]`
	w.Log = append(w.Log, names...)
	return sum + float64(len(first)+last+len(inverse)) // want `float computation \(\+\) is returned`
}

// cost is pure.
func (u *Unit) cost(k int) int {
	c := u.HP * k
	if u.Moved {
		c++
	}
	return max(c, 1)
}

// bump is not pure: it stores into the unit.
func (u *Unit) bump() int {
	u.HP++
	return u.HP
}

// Hidden iterates maps through sync.Map and reflect.
func Hidden(s *sync.Map, v reflect.Value, w *World) {
	s.Range(func(k, _ any) bool { // want `sync.Map.Range iterates in random order.*\[maprange\]`
		w.Log = append(w.Log, k.(string))
		return true
	})
	for _, k := range v.MapKeys() { // want `reflect.Value.MapKeys iterates a map in random order \[maprange\]`
		w.Log = append(w.Log, k.String())
	}
	it := v.MapRange() // want `reflect.Value.MapRange iterates a map in random order \[maprange\]`
	for it.Next() {
		w.Log = append(w.Log, it.Key().String())
	}
}

// Generic ranges over a type parameter whose core type is a map.
func Generic[M ~map[K]V, K comparable, V any](m M, out *[]K) {
	for k := range m { // want `range over map.*\[maprange\]`
		*out = append(*out, k)
	}
}
