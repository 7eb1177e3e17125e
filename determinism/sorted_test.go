package determinism

import (
	"slices"
	"testing"
)

type unitID uint16

type roster map[unitID]string

func TestSortedKeys(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"nil map", SortedKeys(map[int]bool(nil)), []int{}},
		{"ints", SortedKeys(map[int]string{3: "c", -1: "a", 2: "b", 10: "d"}), []int{-1, 2, 3, 10}},
		{"strings", SortedKeys(map[string]int{"b": 1, "a": 2, "B": 3, "": 4}), []string{"", "B", "a", "b"}},
		{"named map and key types", SortedKeys(roster{9: "x", 1: "y", 5: "z"}), []unitID{1, 5, 9}},
		{"floats", SortedKeys(map[float64]int{0.5: 1, -2: 2, 1e9: 3}), []float64{-2, 0.5, 1e9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			switch got := tc.got.(type) {
			case []int:
				assertEqual(t, true, slices.Equal(tc.want.([]int), got), "%v", got)
			case []string:
				assertEqual(t, true, slices.Equal(tc.want.([]string), got), "%q", got)
			case []unitID:
				assertEqual(t, true, slices.Equal(tc.want.([]unitID), got), "%v", got)
			case []float64:
				assertEqual(t, true, slices.Equal(tc.want.([]float64), got), "%v", got)
			default:
				t.Fatalf("unexpected type %T", got)
			}
		})
	}
	// The same every time, for a map large enough that range order varies.
	m := make(map[int]int)
	for i := range 1000 {
		m[i*7919%1000] = i
	}
	first := SortedKeys(m)
	assertEqual(t, true, slices.IsSorted(first))
	assertEqual(t, 1000, len(first))
	for range 10 {
		assertEqual(t, true, slices.Equal(first, SortedKeys(m)))
	}
}

func TestSorted(t *testing.T) {
	type pair struct {
		k unitID
		v string
	}
	collect := func(m roster, stopAfter int, mutate func(m roster)) []pair {
		var out []pair
		for k, v := range Sorted(m) {
			out = append(out, pair{k, v})
			if mutate != nil {
				mutate(m)
				mutate = nil
			}
			if len(out) == stopAfter {
				break
			}
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		m         roster
		stopAfter int
		mutate    func(m roster)
		want      []pair
	}{
		{"empty", roster{}, -1, nil, nil},
		{"all", roster{3: "c", 1: "a", 2: "b"}, -1, nil, []pair{{1, "a"}, {2, "b"}, {3, "c"}}},
		{"break", roster{3: "c", 1: "a", 2: "b"}, 2, nil, []pair{{1, "a"}, {2, "b"}}},
		{"delete during iteration skips", roster{3: "c", 1: "a", 2: "b"}, -1,
			func(m roster) { delete(m, 2) }, []pair{{1, "a"}, {3, "c"}}},
		{"add during iteration is not visited", roster{3: "c", 1: "a"}, -1,
			func(m roster) { m[2] = "new" }, []pair{{1, "a"}, {3, "c"}}},
		{"change during iteration is seen", roster{3: "c", 1: "a"}, -1,
			func(m roster) { m[3] = "C" }, []pair{{1, "a"}, {3, "C"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := collect(tc.m, tc.stopAfter, tc.mutate)
			assertEqual(t, true, slices.Equal(tc.want, got), "got %v, want %v", got, tc.want)
		})
	}
	// An iterator may be used more than once.
	seq := Sorted(map[string]int{"b": 2, "a": 1})
	for range 2 {
		var keys []string
		for k := range seq {
			keys = append(keys, k)
		}
		assertEqual(t, true, slices.Equal([]string{"a", "b"}, keys))
	}
}
