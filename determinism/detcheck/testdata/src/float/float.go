// Package float exercises the float rule: float values computed on that
// reach the simulation are reported, once per statement; constants,
// values never computed on, and drawing code are not.
//
//phalanx:deterministic
package float

import (
	"draw"
	"fmt"
	"math"

	"vec"
)

type Unit struct {
	Pos, Vel vec.V
	X, Y     float64
	Speed    float64
	Cell     int
	HP       int
	Label    string
	Facing   float64
	Path     []int
}

type World struct {
	Units []*Unit
	Zoom  float64
	Tick  int
}

// Constants assigned to float fields and values copied as they are: no
// computation, nothing to report.
func Spawn(w *World, kind int) *Unit {
	u := &Unit{Speed: 1.5, Facing: 0}
	u.X = 2
	u.Y = float64(kind) // an integer converted: exact
	if kind == 2 {
		u.Speed = 0.25
	}
	w.Units = append(w.Units, u)
	return u
}

// Step computes on floats into the state.
func Step(w *World, dt float64) {
	for _, u := range w.Units {
		u.X = u.X + u.Speed*dt    // want `float computation \(\*, \+\) is stored in u.X; use determinism fixed-point \[float\]`
		u.Y += dt                 // want `float computation \(\+=\) is stored in u.Y`
		d := math.Hypot(u.X, u.Y) // want `float computation \(math.Hypot\) decides a branch`
		if d > 10 {
			u.HP--
		}
		u.Cell = int(u.X / 4)                      // want `float computation \(/\) is stored in u.Cell`
		u.Pos = u.Pos.Add(u.Vel.Rotated(u.Facing)) // want `float computation \(vec.V.Rotated \(math.Sincos at vec/vec.go:16\), vec.V.Add \(float arithmetic on vec.V at vec/vec.go:11\)\) is stored in u.Pos`
		if vec.Dist(u.Pos, vec.V{}) > 50 {         // want `float computation \(vec.Dist \(float arithmetic in vec.Dist at vec/vec.go:33\)\) decides a branch`
			u.HP = 0
		}
		u.Label = fmt.Sprintf("%.1f", u.Speed*2) // want `float computation \(\*\) is stored in u.Label`
	}
}

// cost is unexported: its float result is followed to its callers.
func cost(a, b float64) float64 {
	return a*a + b*b // want `float computation \(\*, \+\) flows into float.Nearest, where it decides a branch`
}

// Nearest picks a unit by a float distance: a decision.
func Nearest(w *World, x, y float64) int {
	best := -1
	for i, u := range w.Units {
		if best < 0 || cost(u.X-x, u.Y-y) < 1 { // want `float computation \(-\) decides a branch`
			best = i
		}
	}
	return best
}

// Heading returns a float computed by an exported function: it may reach
// any caller's state.
func Heading(u *Unit) float64 {
	return math.Atan2(u.Y, u.X) // want `float computation \(math.Atan2\) is returned by float.Heading`
}

// Draw is drawing code: floats computed for the screen only.
func Draw(w *World, s *draw.Screen) {
	for _, u := range w.Units {
		op := &draw.Options{Scale: w.Zoom}
		op.Translate(u.X*w.Zoom, u.Y*w.Zoom)
		s.Image("unit", op)
		x, y := screen(w, u)
		s.Text(fmt.Sprintf("%d", u.HP), x+4, y-2)
		bar := float64(u.HP) / 100 * 32
		s.Text("hp", bar, y)
		p := u.Pos.Add(vec.V{X: 1}) // a vec computation for the screen only
		s.Text("p", p.X, p.Y)
		s.Text("d", vec.Dist(u.Pos, p), 0) // drawing only
	}
}

// screen is an unexported drawing helper: its result only reaches drawing.
func screen(w *World, u *Unit) (float64, float64) {
	return u.X * w.Zoom, u.Y * w.Zoom
}

// Move passes a computed value to a helper that stores it.
func Move(u *Unit, dt float64) {
	setX(u, u.X+dt) // want `float computation \(\+\) flows into float.setX, where it is stored in u.X`
}

func setX(u *Unit, x float64) {
	u.X = x
}

// Ints is integer code: nothing to report.
func Ints(w *World) {
	for _, u := range w.Units {
		u.HP = u.HP * 3 / 2
		u.Cell = u.HP % 7
	}
	w.Tick++
}

// Drift is a package variable initialised by float arithmetic.
var Drift = math.Pi * 2 // constant arithmetic: exact, not reported

// Scale is a package variable initialised by computation.
var Scale = math.Sqrt(Drift) * 2 // want `float computation \(\*\) initialises a package variable`
