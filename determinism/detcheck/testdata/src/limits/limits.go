// Package limits holds game-like code on which the analyzer is known to be
// wrong: misses (lines labelled "desync: RULE" that are not reported) and
// false alarms (reported lines that cannot make members diverge, labelled
// "safe"). It is not checked by // want comments; the precision and recall
// test counts it.
//
//phalanx:deterministic
package limits

import (
	"slices"
	"sync"

	"physics"
	"roster"
	"uuidgen"
)

type Unit struct {
	Name  string
	Pos   physics.Point
	HP    int
	ID    [16]byte
	Alpha float64
}

type World struct {
	Units   []*Unit
	Players []string
	Results []int
}

// Lister is satisfied by roster.Names: the call through the interface
// is not followed.
type Lister interface{ List() []string }

func Join(w *World, l Lister) {
	w.Players = append(w.Players, l.List()...) // desync: maprange (a map-backed Lister, through an interface)
	_ = roster.Names{}
}

// Nudge computes a float and hands it to another package that stores it
// through a pointer: the store is not seen.
func Nudge(u *Unit, dt float64) {
	physics.Push(&u.Pos, dt*0.5) // desync: float
}

// newID holds a random generator as a value: the call is not followed.
var newID = uuidgen.New

func Spawn(w *World, name string) {
	u := &Unit{Name: name}
	u.ID = newID() // desync: rand
	w.Units = append(w.Units, u)
}

// ByName sorts by name; names are unique in this game, which the analyzer
// cannot know.
func ByName(w *World) {
	slices.SortFunc(w.Units, func(a, b *Unit) int { // safe: sort (names are unique)
		return compareNames(a.Name, b.Name)
	})
}

func compareNames(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Fade is drawing code that branches on a computed float: the branch only
// decides what is drawn.
func Fade(u *Unit, draw func(string)) {
	a := u.Alpha * 0.9
	if a > 0.5 { // safe: float (decides what is drawn, not the state)
		draw(u.Name)
	}
}

// Total calls a pure helper of another package in its loop body: purity
// is proven only for functions of the package itself.
func Total(hp map[string]*Unit) int {
	n := 0
	for _, u := range hp { // safe: maprange (physics.Weight is pure, the sum commutes)
		n += physics.Weight(u.HP)
	}
	return n
}

// Parallel computes results in workers that store by index under a lock:
// the result is the same whatever the scheduling, but only lock-free
// workers that call nothing but pure functions are recognised.
func Parallel(w *World, inputs []int) {
	byIndex := make(map[int]int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, in := range inputs {
		wg.Add(1)
		go func() { // safe: goroutine (each stores its own index)
			mu.Lock()
			byIndex[i] = in * in
			mu.Unlock()
			wg.Done()
		}()
	}
	wg.Wait()
	for i := range inputs {
		w.Results = append(w.Results, byIndex[i])
	}
}
