package chart

import (
	"bytes"
	"strings"
	"testing"
)

func panels() []Panel {
	return []Panel{
		{
			Title: "lines", XLabel: "x", YLabel: "y",
			Fixed: true, XMax: 10, YMin: 1e-4, YMax: 1, LogY: true,
			Lines: []Line{
				{Label: "falling", Color: "#1b9e77", Width: 2, Points: [][2]float64{{0, 1}, {5, 0.01}, {10, 0}}},
				{Label: "dots", Color: "#d95f02", Circles: true, Points: [][2]float64{{2, 0.1}}},
			},
			Marks: []Mark{{X: 3, Label: "floor", Color: "#cc0000"}},
		},
		{
			Title: "bars", YLabel: "rate", Groups: []string{"a", "b\nsecond line"},
			Fixed: true, XMin: -0.5, XMax: 1.5, YMin: 1e-5, YMax: 1, LogY: true,
			Bars: []Bars{
				{Label: "one", Color: "#7570b3", Values: []float64{0, 0.5}},
				{Label: "two", Color: "#e7298a", Opacity: 0.35, Values: []float64{1e-3, 1}},
			},
		},
	}
}

// CheckSVG refuses what is not an SVG document.
func TestCheckSVG(t *testing.T) {
	for _, bad := range []string{"", "<svg>", "<html></html>", "<svg></svg><"} {
		if err := CheckSVG(strings.NewReader(bad)); err == nil {
			t.Errorf("%q passed", bad)
		}
	}
}

func TestSVGIsWellFormedAndRepeatable(t *testing.T) {
	a, err := SVG(400, 600, panels()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSVG(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"falling", "floor", "one", "two", "second line"} {
		if !bytes.Contains(a, []byte(label)) {
			t.Errorf("the SVG does not contain %q", label)
		}
	}
	b, err := SVG(400, 600, panels()...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("drawing the same figure twice gave different bytes")
	}
}

func TestLogBarsNeedAFixedRange(t *testing.T) {
	p := panels()[1]
	p.Fixed = false
	if _, err := SVG(400, 300, p); err == nil || !strings.Contains(err.Error(), "fixed range") {
		t.Fatalf("err = %v, want one about the fixed range", err)
	}
	if _, err := SVG(400, 300); err == nil {
		t.Fatal("no panel: want an error")
	}
}

func TestColor(t *testing.T) {
	if c := Color("#1b9e77"); c.R != 0x1b || c.G != 0x9e || c.B != 0x77 || c.A != 255 {
		t.Fatalf("Color(#1b9e77) = %v", c)
	}
	for _, bad := range []string{"1b9e77", "#1b9e7", "#zzzzzz"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Color(%q) did not panic", bad)
				}
			}()
			Color(bad)
		}()
	}
}
