// Package draw is a third-party-style drawing API, not marked: it takes
// floats and draws; nothing it does reaches a simulation.
package draw

// Screen is a drawing target.
type Screen struct{ ops int }

// Options positions an image.
type Options struct{ X, Y, Scale float64 }

// Translate moves the options by (x, y).
func (o *Options) Translate(x, y float64) { // want Translate:`float: via draw.Options.Translate: float arithmetic on draw.Options`
	o.X += x
	o.Y += y
}

// Image draws an image at o.
func (s *Screen) Image(name string, o *Options) { s.ops++ }

// Text draws a string at (x, y).
func (s *Screen) Text(text string, x, y float64) { s.ops++ }
