package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Panel is one plot area: axes, labels and what is drawn on them.
type Panel struct {
	Title          string
	XLabel, YLabel string
	// XMin, XMax, YMin and YMax fix the axes' ranges where Fixed is set;
	// otherwise the ranges follow the data.
	XMin, XMax, YMin, YMax float64
	Fixed                  bool
	// LogY draws the y axis in powers of ten; every y value drawn must be
	// positive (values at or below YMin are drawn at YMin). A panel with
	// bars and LogY needs Fixed and 0 < YMin < YMax: bars rise from YMin.
	LogY bool
	// YTicks formats the y axis' tick labels; nil keeps gonum's.
	YTicks func(v float64) string
	// Groups names the x positions 0, 1, 2… of a bar chart.
	Groups []string

	Lines []Line
	Bars  []Bars
	Marks []Mark
}

// Line is a polyline through Points, in data coordinates.
type Line struct {
	Label  string // shown in the legend when not empty
	Color  string // "#rrggbb"
	Width  float64
	Dashed bool
	Dotted bool
	Points [][2]float64
	// Circles draws the points as open circles instead of joining them.
	Circles bool
}

// Bars is one bar per group, side by side with the panel's other Bars.
type Bars struct {
	Label   string
	Color   string
	Opacity float64 // 0 means opaque
	Values  []float64
}

// Mark is a straight dashed rule with a label: vertical at X, or
// horizontal at Y when Horizontal is set.
type Mark struct {
	X, Y       float64
	Horizontal bool
	Label      string
	Color      string
}

// Color parses "#rrggbb"; it panics on anything else, since every colour
// is a constant of the caller's.
func Color(hex string) color.NRGBA {
	if len(hex) != 7 || hex[0] != '#' {
		panic(fmt.Sprintf("chart: colour %q is not #rrggbb", hex))
	}
	v, err := strconv.ParseUint(hex[1:], 16, 32)
	if err != nil {
		panic(fmt.Sprintf("chart: colour %q is not #rrggbb", hex))
	}
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

// SVG draws panels stacked top to bottom on a width × height canvas, in
// points, each panel with its legend below it, and returns the SVG
// document.
func SVG(width, height float64, panels ...Panel) ([]byte, error) {
	if len(panels) == 0 {
		return nil, fmt.Errorf("chart: no panel to draw")
	}
	c := vgsvg.New(vg.Length(width), vg.Length(height))
	dc := draw.New(c)
	const pad = 6
	slot := vg.Length(height / float64(len(panels)))
	for i, p := range panels {
		pl, err := p.plot()
		if err != nil {
			return nil, err
		}
		legend := pl.Legend
		pl.Legend = plot.NewLegend()
		// This panel's slot, from the top down.
		area := draw.Crop(dc, pad, -pad, slot*vg.Length(len(panels)-1-i)+pad, -slot*vg.Length(i)-pad)
		legendHeight := vg.Length(0)
		if n := len(p.Lines) + len(p.Bars) + len(p.Marks); n > 0 {
			legendHeight = legend.Rectangle(area).Size().Y + pad
		}
		pl.Draw(draw.Crop(area, 0, 0, legendHeight, 0))
		legend.Top, legend.Left = true, true
		legend.Draw(draw.Crop(area, 0, 0, 0, legendHeight-area.Size().Y))
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// plot builds the gonum plot of one panel.
func (p Panel) plot() (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = p.XLabel
	pl.Y.Label.Text = p.YLabel
	pl.Add(plotter.NewGrid())
	// floor maps a y value to the axis: clamped at YMin on a log axis and,
	// for bars (which gonum draws up from 0), as decades above YMin on a
	// linear axis.
	floor := func(y float64) float64 { return y }
	yfmt := p.YTicks
	barsLog := p.LogY && len(p.Bars) > 0
	switch {
	case barsLog:
		if !p.Fixed || p.YMin <= 0 || p.YMax <= p.YMin {
			return nil, fmt.Errorf("chart: %q: log bars need a fixed range with 0 < YMin < YMax", p.Title)
		}
		lo := math.Log10(p.YMin)
		floor = func(y float64) float64 { return math.Log10(max(y, p.YMin)) - lo }
		var ticks plot.ConstantTicks
		for k := 0.0; k <= math.Log10(p.YMax)-lo+1e-9; k++ {
			ticks = append(ticks, plot.Tick{Value: k, Label: strconv.FormatFloat(math.Pow(10, k+lo), 'g', -1, 64)})
		}
		pl.Y.Tick.Marker = ticks
		if yfmt != nil {
			pl.Y.Tick.Marker = labelled{inner: ticks, format: func(v float64) string { return yfmt(math.Pow(10, v+lo)) }}
		}
	case p.LogY:
		pl.Y.Scale = plot.LogScale{}
		pl.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		floor = func(y float64) float64 { return max(y, p.YMin) }
		if yfmt == nil {
			yfmt = func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
		}
		fallthrough
	default:
		if yfmt != nil {
			pl.Y.Tick.Marker = labelled{inner: pl.Y.Tick.Marker, format: yfmt}
		}
	}
	for _, l := range p.Lines {
		xys := make(plotter.XYs, len(l.Points))
		for i, pt := range l.Points {
			xys[i] = plotter.XY{X: pt[0], Y: floor(pt[1])}
		}
		if l.Circles {
			s, err := plotter.NewScatter(xys)
			if err != nil {
				return nil, fmt.Errorf("chart: %s: %w", l.Label, err)
			}
			s.GlyphStyle = draw.GlyphStyle{Color: Color(l.Color), Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
			pl.Add(s)
			if l.Label != "" {
				pl.Legend.Add(l.Label, s)
			}
			continue
		}
		ln, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("chart: %s: %w", l.Label, err)
		}
		ln.LineStyle = lineStyle(l.Color, l.Width, l.Dashed, l.Dotted)
		pl.Add(ln)
		if l.Label != "" {
			pl.Legend.Add(l.Label, ln)
		}
	}
	if err := p.addBars(pl, floor); err != nil {
		return nil, err
	}
	if p.Fixed {
		pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = p.XMin, p.XMax, floor(p.YMin), floor(p.YMax)
	}
	for _, m := range p.Marks {
		m.Y = floor(m.Y)
		p.addMark(pl, m)
	}
	return pl, nil
}

// addBars draws the panel's bar series side by side within each group.
func (p Panel) addBars(pl *plot.Plot, floor func(float64) float64) error {
	if len(p.Bars) == 0 {
		return nil
	}
	width := vg.Points(max(4, 300/float64(len(p.Bars)*max(1, len(p.Groups)))))
	for i, b := range p.Bars {
		vs := make(plotter.Values, len(b.Values))
		for j, v := range b.Values {
			vs[j] = floor(v)
		}
		bc, err := plotter.NewBarChart(vs, width)
		if err != nil {
			return fmt.Errorf("chart: %s: %w", b.Label, err)
		}
		c := Color(b.Color)
		if b.Opacity > 0 {
			c.A = uint8(math.Round(255 * b.Opacity))
		}
		bc.Color = c
		bc.LineStyle.Width = 0
		bc.Offset = width * vg.Length(float64(i)-float64(len(p.Bars)-1)/2)
		pl.Add(bc)
		if b.Label != "" {
			pl.Legend.Add(b.Label, bc)
		}
	}
	if len(p.Groups) > 0 {
		pl.NominalX(p.Groups...)
	}
	return nil
}

// addMark draws a labelled rule across the panel's fixed range.
func (p Panel) addMark(pl *plot.Plot, m Mark) {
	var pts plotter.XYs
	if m.Horizontal {
		pts = plotter.XYs{{X: pl.X.Min, Y: m.Y}, {X: pl.X.Max, Y: m.Y}}
	} else {
		pts = plotter.XYs{{X: m.X, Y: pl.Y.Min}, {X: m.X, Y: pl.Y.Max}}
	}
	ln, err := plotter.NewLine(pts)
	if err != nil {
		panic(fmt.Sprintf("chart: mark %q: %v", m.Label, err)) // two finite points always make a line
	}
	ln.LineStyle = lineStyle(m.Color, 1.2, false, true)
	pl.Add(ln)
	if m.Label != "" {
		pl.Legend.Add(m.Label, ln)
	}
}

func lineStyle(hex string, width float64, dashed, dotted bool) draw.LineStyle {
	s := draw.LineStyle{Color: Color(hex), Width: vg.Points(max(width, 1))}
	switch {
	case dashed:
		s.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	case dotted:
		s.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
	}
	return s
}

// labelled relabels the major ticks of another ticker.
type labelled struct {
	inner  plot.Ticker
	format func(float64) string
}

func (l labelled) Ticks(lo, hi float64) []plot.Tick {
	ts := l.inner.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = l.format(ts[i].Value)
		}
	}
	return ts
}
