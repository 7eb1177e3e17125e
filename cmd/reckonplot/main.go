// Command reckonplot draws the picture of docs/dead-reckoning.md: the four
// convergence methods of package reckon taking the display of an entity from
// its old predicted track to a new one after an update, position and
// velocity over time. It writes an SVG, drawn by hand (no plotting library).
//
// Usage:
//
//	go run ./cmd/reckonplot -o docs/images/convergence.svg
//
// Without -o it writes to standard output. The output depends on nothing but
// the code, so running it again gives the same bytes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-net/phalanx/reckon"
)

func main() {
	out := flag.String("o", "", "write the SVG to this file instead of standard output")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "reckonplot:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	if path == "" {
		return render(os.Stdout)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := render(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The correction drawn: the display shows the entity moving up at 2 units/s
// along x = 2t. At t0 = 1 s an update arrives, sent at 0.9 s: the entity
// was at 1.6 then and moving down at 1 unit/s. Every method converges in T.
var (
	oldTrack = reckon.State2{Pos: reckon.Vec2{}, Vel: reckon.Vec2{X: 2}, At: 0}
	newTrack = reckon.State2{Pos: reckon.Vec2{X: 1.6}, Vel: reckon.Vec2{X: -1}, At: 900 * time.Millisecond}
	arrival  = time.Second
	converge = 400 * time.Millisecond

	from, to = 600 * time.Millisecond, 1800 * time.Millisecond
	step     = 5 * time.Millisecond
)

// curve is one line of the picture: its name, colour, dash pattern and
// points (time in seconds, value).
type curve struct {
	name, colour, dash string
	width              float64
	pos, vel           [][2]float64
}

// curves samples the old and new predictions and the display of each method.
func curves() []curve {
	track := func(name, colour string, s reckon.State2, start time.Duration) curve {
		c := curve{name: name, colour: colour, dash: "6 5", width: 1.5}
		for t := start; t <= to; t += step {
			p := s.Predict(reckon.ConstantVelocity, t)
			c.pos = append(c.pos, [2]float64{t.Seconds(), p.Pos.X})
			c.vel = append(c.vel, [2]float64{t.Seconds(), p.Vel.X})
		}
		return c
	}
	out := []curve{
		track("old prediction", "#9a9a9a", oldTrack, from),
		track("new prediction", "#222222", newTrack, newTrack.At),
	}
	// Okabe–Ito colours, distinguishable with every common colour-vision
	// deficiency.
	colours := map[reckon.Method]string{
		reckon.Snap:      "#D55E00",
		reckon.Linear:    "#E69F00",
		reckon.Quadratic: "#009E73",
		reckon.Cubic:     "#0072B2",
	}
	for _, m := range []reckon.Method{reckon.Snap, reckon.Linear, reckon.Quadratic, reckon.Cubic} {
		s := reckon.NewSmoother[reckon.Vec2](reckon.Smoothing{Method: m, Converge: converge})
		s.Correct(0, oldTrack)
		shown := s.At(arrival)
		s.Correct(arrival, newTrack)
		c := curve{name: m.String(), colour: colours[m], width: 2.5}
		// From the display just before the update, so that a jump shows.
		c.pos = append(c.pos, [2]float64{arrival.Seconds(), shown.Pos.X})
		c.vel = append(c.vel, [2]float64{arrival.Seconds(), shown.Vel.X})
		sample := func(t time.Duration) {
			d := s.At(t)
			c.pos = append(c.pos, [2]float64{t.Seconds(), d.Pos.X})
			c.vel = append(c.vel, [2]float64{t.Seconds(), d.Vel.X})
		}
		for t := arrival; t <= to; t += step {
			if t == arrival+converge {
				sample(t - time.Microsecond) // so that a jump at the end is drawn upright
			}
			sample(t)
		}
		out = append(out, c)
	}
	return out
}

// Layout, in SVG user units (pixels).
const (
	width      = 940
	height     = 710
	plotLeft   = 70
	plotRight  = 700
	legendLeft = 725
	posTop     = 84
	posBottom  = 404
	velTop     = 450
	velBottom  = 650
)

// panel maps data to one of the two stacked plots.
type panel struct {
	top, bottom float64
	lo, hi      float64 // value range
}

func (p panel) y(v float64) float64 { return p.bottom - (v-p.lo)/(p.hi-p.lo)*(p.bottom-p.top) }

func x(t float64) float64 {
	return plotLeft + (t-from.Seconds())/(to-from).Seconds()*(plotRight-plotLeft)
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func render(w io.Writer) error {
	bw := bufio.NewWriter(w)
	cs := curves()
	pos := panel{top: posTop, bottom: posBottom, lo: 0.5, hi: 3.5}
	vel := panel{top: velTop, bottom: velBottom, lo: -7, hi: 3}

	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">`+"\n", width, height, width, height)
	p(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	p(`<text x="%d" y="28" font-size="17" font-weight="bold">Converging on a correction (T = %v)</text>`+"\n", plotLeft, converge)
	p(`<text x="%d" y="48" fill="#555555">The display follows the old prediction until t0 = %v, when an update arrives: the entity turned at %v.</text>`+"\n",
		plotLeft, arrival, newTrack.At)

	for _, pan := range []struct {
		panel
		label string
		ticks []float64
		vel   bool
	}{
		{pos, "position (units)", []float64{0.5, 1, 1.5, 2, 2.5, 3, 3.5}, false},
		{vel, "velocity (units/s)", []float64{-6, -4, -2, 0, 2}, true},
	} {
		// Grid and value axis.
		for _, v := range pan.ticks {
			y := pan.y(v)
			p(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="#e6e6e6"/>`+"\n", plotLeft, num(y), plotRight, num(y))
			p(`<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", plotLeft-8, num(y+4), strconv.FormatFloat(v, 'g', -1, 64))
		}
		for t := from; t <= to; t += 200 * time.Millisecond {
			xx := x(t.Seconds())
			p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e6e6e6"/>`+"\n", num(xx), num(pan.top), num(xx), num(pan.bottom))
			p(`<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(xx), num(pan.bottom+18), strconv.FormatFloat(t.Seconds(), 'f', 1, 64))
		}
		// The correction's start and end.
		for _, mark := range []struct {
			at   time.Duration
			text string
		}{{arrival, "t0: update arrives"}, {arrival + converge, "t0 + T"}} {
			xx := num(x(mark.at.Seconds()))
			p(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#555555" stroke-dasharray="2 3"/>`+"\n", xx, num(pan.top), xx, num(pan.bottom))
			if !pan.vel {
				p(`<text x="%s" y="%s" text-anchor="middle" fill="#555555">%s</text>`+"\n", xx, num(pan.top-6), mark.text)
			}
		}
		p(`<rect x="%d" y="%s" width="%d" height="%s" fill="none" stroke="#333333"/>`+"\n", plotLeft, num(pan.top), plotRight-plotLeft, num(pan.bottom-pan.top))
		mid := (pan.top + pan.bottom) / 2
		p(`<text transform="translate(20 %s) rotate(-90)" text-anchor="middle">%s</text>`+"\n", num(mid), pan.label)
		// Curves, clipped to the panel.
		clip := "pos"
		if pan.vel {
			clip = "vel"
		}
		p(`<clipPath id="%s"><rect x="%d" y="%s" width="%d" height="%s"/></clipPath>`+"\n", clip, plotLeft, num(pan.top), plotRight-plotLeft, num(pan.bottom-pan.top))
		p(`<g clip-path="url(#%s)" fill="none" stroke-linejoin="round">`+"\n", clip)
		for _, c := range cs {
			pts := c.pos
			if pan.vel {
				pts = c.vel
			}
			var d strings.Builder
			for i, pt := range pts {
				if i > 0 {
					d.WriteByte(' ')
				}
				d.WriteString(num(x(pt[0])) + "," + num(pan.y(pt[1])))
			}
			dash := ""
			if c.dash != "" {
				dash = fmt.Sprintf(` stroke-dasharray="%s"`, c.dash)
			}
			p(`<polyline stroke="%s" stroke-width="%s"%s points="%s"/>`+"\n", c.colour, strconv.FormatFloat(c.width, 'f', -1, 64), dash, d.String())
		}
		p("</g>\n")
	}
	p(`<text x="%d" y="%d" text-anchor="middle">time (s)</text>`+"\n", (plotLeft+plotRight)/2, velBottom+40)

	// Legend, beside the plots.
	p(`<text x="%d" y="%d" font-weight="bold">display</text>`+"\n", legendLeft, posTop+10)
	y := posTop + 34
	for _, c := range cs[2:] {
		legendLine(p, y, c)
		y += 24
	}
	y += 14
	p(`<text x="%d" y="%d" font-weight="bold">tracks</text>`+"\n", legendLeft, y-10)
	y += 14
	for _, c := range cs[:2] {
		legendLine(p, y, c)
		y += 24
	}
	y += 14
	for _, line := range []string{
		"snap: jumps at t0",
		"linear: straight line; velocity",
		"  jumps at t0 and t0 + T",
		"quadratic: keeps the velocity",
		"  at t0; jumps at t0 + T",
		"cubic: velocity continuous",
		"  at both ends",
	} {
		p(`<text x="%d" y="%d" fill="#555555" font-size="12" xml:space="preserve">%s</text>`+"\n", legendLeft, y, line)
		y += 17
	}
	p("</svg>\n")
	return bw.Flush()
}

func legendLine(p func(string, ...any), y int, c curve) {
	dash := ""
	if c.dash != "" {
		dash = fmt.Sprintf(` stroke-dasharray="%s"`, c.dash)
	}
	w := strconv.FormatFloat(c.width, 'f', -1, 64)
	p(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>`+"\n", legendLeft, y-4, legendLeft+34, y-4, c.colour, w, dash)
	p(`<text x="%d" y="%d">%s</text>`+"\n", legendLeft+44, y, c.name)
}
