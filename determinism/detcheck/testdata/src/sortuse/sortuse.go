// Package sortuse exercises the sort rule: unstable sorts are reported when
// their comparator can tie.
//
//phalanx:deterministic
package sortuse

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

type Unit struct {
	ID    int
	HP    int
	Name  string
	Owner int
}

type byHP []Unit

func (s byHP) Len() int           { return len(s) }
func (s byHP) Less(i, j int) bool { return s[i].HP < s[j].HP }
func (s byHP) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

type byID []Unit

func (s byID) Len() int           { return len(s) }
func (s byID) Less(i, j int) bool { return s[i].ID < s[j].ID }
func (s byID) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

func Sorts(units []Unit, names []string, scores []int) {
	sort.Slice(units, func(i, j int) bool { return units[i].HP < units[j].HP })          // want `sort.Slice is not stable and its comparator can tie \(it ends comparing units\[i\].HP\).*\[sort\]`
	slices.SortFunc(units, func(a, b Unit) int { return cmp.Compare(a.Owner, b.Owner) }) // want `slices.SortFunc is not stable and its comparator can tie.*\[sort\]`
	sort.Sort(byHP(units))                                                               // want `sort.Sort is not stable and its comparator can tie.*\[sort\]`
	slices.SortFunc(units, func(a, b Unit) int {                                         // want `slices.SortFunc is not stable and its comparator can tie \(it ends comparing a.Name\)`
		if a.HP != b.HP {
			return b.HP - a.HP
		}
		return strings.Compare(a.Name, b.Name)
	})

	// Ties broken on a unique key, whole values compared, or stable sorts:
	// nothing to report.
	sort.Slice(units, func(i, j int) bool { return units[i].ID < units[j].ID })
	slices.SortFunc(units, func(a, b Unit) int {
		return cmp.Or(cmp.Compare(a.HP, b.HP), cmp.Compare(a.ID, b.ID))
	})
	sort.Sort(byID(units))
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	slices.SortFunc(scores, func(a, b int) int { return b - a })
	sort.SliceStable(units, func(i, j int) bool { return units[i].HP < units[j].HP })
	slices.SortStableFunc(units, func(a, b Unit) int { return cmp.Compare(a.HP, b.HP) })
	sort.Stable(byHP(units))
	slices.Sort(names)
	sort.Strings(names)
	slices.SortFunc(names, strings.Compare)
	slices.SortFunc(scores, cmp.Compare[int])
}
