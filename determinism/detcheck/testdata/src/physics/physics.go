// Package physics is a helper package, not marked, that writes float
// results through a pointer.
package physics

// Point is a float position.
type Point struct{ X, Y float64 }

// Push moves p by d along x.
func Push(p *Point, d float64) { p.X += d }

// Weight is a pure function of hit points.
func Weight(hp int) int { return hp * 2 }
