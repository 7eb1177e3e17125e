// Package skirmish is a small lockstep RTS simulation written as a game
// would be: integer state, a few float habits, drawing next to the
// simulation, helpers in another package.
//
//phalanx:deterministic
package skirmish

import (
	"fmt"
	"math"
	"slices"

	"draw"
	"gridutil"
	"vec"
)

type Unit struct {
	ID       int
	Owner    int
	HP       int
	Cell     gridutil.Cell
	Target   int
	Cooldown int
	Heading  float64
	Pos      vec.V
	Speed    float64
	Path     []gridutil.Cell
}

type Game struct {
	Frame  int
	Units  map[int]*Unit
	Occ    map[gridutil.Cell]int
	Score  map[int]int
	Events []string
	Zoom   float64
}

// Step advances one frame.
func (g *Game) Step() {
	g.Frame++
	for _, u := range g.Units { // cooldowns tick per unit
		if u.Cooldown > 0 {
			u.Cooldown--
		}
	}
	for id, u := range g.Units { // the dead leave
		if u.HP <= 0 {
			delete(g.Units, id)
		}
	}
	alive := make(map[int]int)
	for _, u := range g.Units { // units per owner
		alive[u.Owner]++
	}
	for owner, n := range alive { // score per owner
		g.Score[owner] += n
	}
	for _, c := range gridutil.Sorted(g.Occ) { // sorted by the helper
		g.Events = append(g.Events, fmt.Sprint(c))
	}
	for _, c := range gridutil.Occupied(g.Occ) { // want `map order via gridutil.Occupied: range over map at gridutil/gridutil.go:13 \[maprange\]`
		g.Events = append(g.Events, fmt.Sprint(c))
	}
	for owner, n := range gridutil.Count(g.Occ) { // want `range over map: iteration order is random.*\[maprange\]`
		g.Events = append(g.Events, fmt.Sprint(owner, n))
	}
	ids := make([]int, 0, len(g.Units))
	for id := range g.Units {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		g.fight(g.Units[id])
	}
}

// fight picks the weakest enemy in range: ties on HP go to the first one
// met, which is map order.
func (g *Game) fight(u *Unit) {
	var best *Unit
	for _, e := range g.Units { // want `range over map.*\[maprange\]`
		if e.Owner != u.Owner && (best == nil || e.HP < best.HP) {
			best = e
		}
	}
	if best != nil {
		best.HP -= 10
	}
}

// PathCost sums integer-valued float costs: exact, not reported.
func PathCost(path []gridutil.Cell, rough map[gridutil.Cell]bool) float64 {
	cost := 0.0
	for _, c := range path {
		step := 1.0
		if rough[c] {
			step = 3
		}
		cost += step + float64(c.X%2)
	}
	return cost
}

// Turn changes a unit's heading and moves it with floats: reported.
func (g *Game) Turn(u *Unit, da float64) {
	u.Heading += da                       // want `float computation \(\+=\) is stored in u.Heading.*\[float\]`
	u.Pos = u.Pos.Add(vec.Dir(u.Heading)) // want `float computation \(vec.Dir \(math.Sincos at vec/vec.go:16\), vec.V.Add \(float arithmetic on vec.V at vec/vec.go:11\)\) is stored in u.Pos.*\[float\]`
	u.Cell = gridutil.Cell{X: int(math.Round(u.Pos.X)), Y: int(math.Round(u.Pos.Y))}
	if dist := math.Hypot(u.Pos.X, u.Pos.Y); dist > 100 { // want `float computation \(math.Hypot\) decides a branch.*\[float\]`
		u.HP = 0
	}
}

// Draw renders the game: floats for the screen only, not reported.
func (g *Game) Draw(s *draw.Screen) {
	for _, id := range slices.Sorted(mapsKeys(g.Units)) {
		u := g.Units[id]
		op := &draw.Options{Scale: g.Zoom}
		x, y := float64(u.Cell.X)*32*g.Zoom, float64(u.Cell.Y)*32*g.Zoom
		op.Translate(x+math.Cos(u.Heading)*4, y+math.Sin(u.Heading)*4)
		s.Image("unit", op)
		s.Text(fmt.Sprintf("%d%%", u.HP), x, y-8)
		frac := float64(u.HP) / 100
		s.Text(healthBar(frac), x, y+40)
	}
}

func healthBar(frac float64) string {
	n := int(frac * 10)
	return fmt.Sprint(n)
}

func mapsKeys(m map[int]*Unit) func(func(int) bool) {
	return func(yield func(int) bool) {
		for id := range m { // want `range over map.*\[maprange\]`
			if !yield(id) {
				return
			}
		}
	}
}
