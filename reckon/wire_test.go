package reckon

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// docExampleUpdate is the worked example of docs/dead-reckoning.md.
func docExampleUpdate() Update[Vec2] {
	return Update[Vec2]{Entity: 7, Seq: 0x0102, State: State2{
		Pos: Vec2{12.5, -3.25}, Vel: Vec2{4, 0.5}, At: 1234500 * time.Microsecond,
	}}
}

func updates2() []Update[Vec2] {
	return []Update[Vec2]{
		docExampleUpdate(),
		{},
		{Entity: math.MaxUint64, Seq: 0xFFFF, State: State2{Pos: Vec2{-0x1p100, 0x1p-100}, Vel: Vec2{0, -7}, Acc: Vec2{0.125, 0}, At: -90 * time.Minute}},
		{Entity: 300, Seq: 1, State: State2{Pos: Vec2{1, 2}, Acc: Vec2{3, 4}, At: 123456789 * Tick}},
	}
}

func updates3() []Update[Vec3] {
	return []Update[Vec3]{
		{Entity: 1, Seq: 2, State: State3{Pos: Vec3{1, 2, 3}, Vel: Vec3{-1, 0, 1}, Acc: Vec3{0, -9.75, 0}, At: time.Hour}},
		{State: State3{Pos: Vec3{0, 0, -0.5}}},
	}
}

func TestUpdateRoundTrip(t *testing.T) {
	for _, u := range updates2() {
		roundTrip(t, u)
	}
	for _, u := range updates3() {
		roundTrip(t, u)
	}
}

func roundTrip[V Vector[V]](t *testing.T, u Update[V]) {
	t.Helper()
	b := AppendUpdate([]byte{0xAA}, u)[1:]
	if len(b) > MaxUpdateSize || len(b) < 14 {
		t.Errorf("%+v: %d bytes", u, len(b))
	}
	got, err := ParseUpdate[V](b)
	if err != nil {
		t.Fatalf("%+v: %v\n%s", u, err, golden.HexDump(b))
	}
	// Every value chosen is exact in float32 and in ticks.
	if got != u {
		t.Errorf("round trip\n got %+v\nwant %+v", got, u)
	}
}

func TestUpdateSizes(t *testing.T) {
	for _, tt := range []struct {
		b    []byte
		want int
	}{
		{AppendUpdate(nil, Update[Vec2]{}), 14},
		{AppendUpdate(nil, docExampleUpdate()), 24},
		{AppendUpdate(nil, updates3()[0]), 45},
		{AppendUpdate(nil, Update[Vec3]{Entity: math.MaxUint64, State: State3{Pos: Vec3{1, 1, 1}, Vel: Vec3{1, 1, 1}, Acc: Vec3{1, 1, 1}, At: math.MinInt64}}), MaxUpdateSize},
	} {
		if len(tt.b) != tt.want {
			t.Errorf("%d bytes, want %d:\n%s", len(tt.b), tt.want, golden.HexDump(tt.b))
		}
	}
}

func TestQuantizeIsWhatTheWireDelivers(t *testing.T) {
	r := splitmix{1}
	f := func() float64 { return (r.float() - 0.5) * 1000 }
	for range 1000 {
		s := State2{Pos: Vec2{f(), f()}, Vel: Vec2{f(), f()}, Acc: Vec2{f(), f()}, At: time.Duration(r.next() >> 20)}
		for _, p := range []Predictor{ConstantVelocity, ConstantAcceleration} {
			q := quantize(s, p)
			got, err := ParseUpdate[Vec2](AppendUpdate(nil, Update[Vec2]{State: q}))
			if err != nil || got.State != q {
				t.Fatalf("%v: quantized %+v, decoded %+v, %v", p, q, got.State, err)
			}
			if q.At%Tick != 0 || (q.At-s.At).Abs() > Tick/2 {
				t.Fatalf("%v: %v rounded to %v", p, s.At, q.At)
			}
			// Moving to the rounded time keeps the state on its track.
			if d := dist(q.Pos, s.Predict(p, q.At).Pos); d > 1e-4 {
				t.Fatalf("%v: quantized position %v off the track", p, d)
			}
		}
	}
}

func TestParseUpdateRejectsEveryTruncation(t *testing.T) {
	var all [][]byte
	for _, u := range updates2() {
		all = append(all, AppendUpdate(nil, u))
	}
	for _, u := range updates3() {
		all = append(all, AppendUpdate(nil, u))
	}
	for _, b := range all {
		for n := range len(b) {
			var err error
			if b[1]&flag3D != 0 {
				_, err = ParseUpdate[Vec3](b[:n])
			} else {
				_, err = ParseUpdate[Vec2](b[:n])
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%d of %d bytes: error %v, want ErrMalformed\n%s", n, len(b), err, golden.HexDump(b))
			}
		}
	}
}

func TestParseUpdateRejects(t *testing.T) {
	good := AppendUpdate(nil, docExampleUpdate())
	with := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	nan := math.Float32bits(float32(math.NaN()))
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"lockstep kind", with(func(b []byte) []byte { b[0] = 0x01; return b }), ErrMalformed},
		{"reserved flag", with(func(b []byte) []byte { b[1] |= 0x80; return b }), ErrMalformed},
		{"3D into 2D", with(func(b []byte) []byte { b[1] |= flag3D; return b }), ErrDimensions},
		{"trailing byte", with(func(b []byte) []byte { return append(b, 0) }), ErrMalformed},
		{"velocity flag without velocity", with(func(b []byte) []byte { b[1] |= flagAcc; return b }), ErrMalformed},
		{"NaN", with(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[len(b)-4:], nan); return b }), ErrMalformed},
		{"infinity", with(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-12:], math.Float32bits(float32(math.Inf(-1))))
			return b
		}), ErrMalformed},
		{"entity overflows", append([]byte{DatagramKind, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, good[3:]...), ErrMalformed},
		{"timestamp out of range", binary.AppendVarint([]byte{DatagramKind, 0, 7, 0, 0}, math.MaxInt64/int64(Tick)+1), ErrMalformed},
	}
	for _, tt := range tests {
		if _, err := ParseUpdate[Vec2](tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := ParseUpdate[Vec3](good); !errors.Is(err, ErrDimensions) {
		t.Errorf("2D into 3D: error %v, want ErrDimensions", err)
	}
}

// TestUpdateDocExample checks the worked example of docs/dead-reckoning.md
// against the encoder: the golden dump in testdata must be what AppendUpdate
// produces, and the document must contain it verbatim. Run with -update to
// rewrite the golden file after a deliberate format change, then paste it
// into the document.
func TestUpdateDocExample(t *testing.T) {
	b := AppendUpdate(nil, docExampleUpdate())
	got := golden.HexDump(b)
	golden.Check(t, filepath.Join("testdata", "update_example.hex"), []byte(got), *update)
	golden.InDoc(t, filepath.Join("..", "docs", "dead-reckoning.md"), got, fmt.Sprintf("(%d bytes)", len(b)))
}
