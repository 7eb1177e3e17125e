// Command reckonplot draws the picture of docs/dead-reckoning.md: the four
// convergence methods of package reckon taking the display of an entity from
// its old predicted track to a new one after an update, position and
// velocity over time. It writes an SVG drawn by internal/chart.
//
// Usage:
//
//	go run ./cmd/reckonplot -o docs/images/convergence.svg
//
// Without -o it writes to standard output. The output depends on nothing but
// the code, so running it again gives the same bytes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/phalanx-net/phalanx/internal/chart"
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

// render draws position and velocity over time, one panel each.
func render(w io.Writer) error {
	cs := curves()
	marks := func(labelled bool) []chart.Mark {
		ms := []chart.Mark{
			{X: arrival.Seconds(), Label: "t0: the update arrives", Color: "#555555"},
			{X: (arrival + converge).Seconds(), Label: fmt.Sprintf("t0 + T: converged (T = %v)", converge), Color: "#555555"},
		}
		if !labelled {
			for i := range ms {
				ms[i].Label = ""
			}
		}
		return ms
	}
	panel := func(title, ylabel string, lo, hi float64, vel bool) chart.Panel {
		p := chart.Panel{
			Title: title, XLabel: "time (s)", YLabel: ylabel,
			Fixed: true, XMin: from.Seconds(), XMax: to.Seconds(), YMin: lo, YMax: hi,
			Marks: marks(!vel),
		}
		for _, c := range cs {
			l := chart.Line{Color: c.colour, Width: c.width, Dashed: c.dash != "", Points: c.pos}
			if vel {
				l.Points = c.vel
			} else {
				l.Label = c.name
			}
			p.Lines = append(p.Lines, l)
		}
		return p
	}
	b, err := chart.SVG(620, 720,
		panel(fmt.Sprintf("Converging on a correction (update sent at %v, arrived at t0 = %v)", newTrack.At, arrival), "position (units)", 0.5, 3.5, false),
		panel("The same correction, velocity", "velocity (units/s)", -7, 3, true),
	)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
