// Package vec is a third-party-style float vector type, not marked.
package vec

import "math"

// V is a 2-D vector of float64.
type V struct{ X, Y float64 }

// Add returns v+w.
func (v V) Add(w V) V { // want Add:`float: via vec.V.Add: float arithmetic on vec.V`
	return V{v.X + w.X, v.Y + w.Y}
}

// Rotated returns v rotated by a radians.
func (v V) Rotated(a float64) V { // want Rotated:`float: via vec.V.Rotated: math.Sincos at vec/vec.go:16`
	s, c := math.Sincos(a)
	return V{v.X*c - v.Y*s, v.X*s + v.Y*c}
}

// Dir returns the unit vector at angle a, through Rotated.
func Dir(a float64) V { // want Dir:`float: via vec.Dir → vec.V.Rotated: math.Sincos`
	return V{1, 0}.Rotated(a)
}

// P is an integer point: its methods compute nothing in floats.
type P struct{ X, Y int }

// Add returns p+q.
func (p P) Add(q P) P { return P{p.X + q.X, p.Y + q.Y} }

// Dist returns the distance between v and w.
func Dist(v, w V) float64 { // want Dist:`float: via vec.Dist: float arithmetic in vec.Dist at vec/vec.go:33`
	dx, dy := v.X-w.X, v.Y-w.Y
	return math.Sqrt(dx*dx + dy*dy)
}
