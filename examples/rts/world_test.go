package rts

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/phalanx-net/phalanx/determinism"
)

func TestConfigValidate(t *testing.T) {
	small := Config{Players: 2, UnitsPerPlayer: 10, MapWidth: 32, MapHeight: 32}
	tests := []struct {
		name string
		edit func(*Config)
		ok   bool
	}{
		{"default", func(c *Config) { *c = DefaultConfig() }, true},
		{"small", func(c *Config) {}, true},
		{"one player", func(c *Config) { c.Players = 1 }, true},
		{"max everything", func(c *Config) {
			*c = Config{Players: MaxPlayers, UnitsPerPlayer: MaxUnitsPerPlayer, MapWidth: MaxMapSide, MapHeight: MaxMapSide, ObstaclePct: MaxObstaclePct}
		}, true},
		{"min map", func(c *Config) { c.MapWidth, c.MapHeight, c.UnitsPerPlayer = MinMapSide, MinMapSide, 1 }, true},
		{"zero value", func(c *Config) { *c = Config{} }, false},
		{"no players", func(c *Config) { c.Players = 0 }, false},
		{"too many players", func(c *Config) { c.Players = MaxPlayers + 1 }, false},
		{"no units", func(c *Config) { c.UnitsPerPlayer = 0 }, false},
		{"too many units", func(c *Config) { c.UnitsPerPlayer = MaxUnitsPerPlayer + 1 }, false},
		{"narrow", func(c *Config) { c.MapWidth = MinMapSide - 1 }, false},
		{"too tall", func(c *Config) { c.MapHeight = MaxMapSide + 1 }, false},
		{"negative obstacles", func(c *Config) { c.ObstaclePct = -1 }, false},
		{"too many obstacles", func(c *Config) { c.ObstaclePct = MaxObstaclePct + 1 }, false},
		{"bases overlap", func(c *Config) { c.Players, c.UnitsPerPlayer = 16, 200 }, false},
		{"base too big", func(c *Config) { c.MapWidth, c.MapHeight, c.UnitsPerPlayer = 16, 16, 200 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := small
			tt.edit(&c)
			err := c.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate(%+v) = %v, want nil", c, err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("Validate(%+v) = %v, want ErrInvalidConfig", c, err)
			}
			if _, err := New(c); (err == nil) != tt.ok {
				t.Fatalf("New: error %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestMapConnected checks that every open tile is reachable from every
// base and that units start on open tiles, for several seeds and densities.
func TestMapConnected(t *testing.T) {
	for _, pct := range []int{0, 18, MaxObstaclePct} {
		for seed := range uint64(5) {
			cfg := DefaultConfig()
			cfg.Seed, cfg.ObstaclePct = seed, pct
			w := newWorld(t, cfg)
			open := 0
			for _, o := range w.open {
				if o {
					open++
				}
			}
			if pct > 0 && open > w.width*w.height*(100-pct/2)/100 {
				t.Errorf("seed %d, %d%%: only %d of %d tiles blocked", seed, pct, w.width*w.height-open, w.width*w.height)
			}
			r := &w.routes.list[w.acquireRoute(w.units[0].tile)]
			for i, o := range w.open {
				if o && w.reach(r, int32(i))[i] == 0 {
					t.Fatalf("seed %d, %d%%: tile (%d, %d) unreachable", seed, pct, w.tileX[i], w.tileY[i])
				}
			}
			for id := range w.units {
				if !w.open[w.units[id].tile] {
					t.Fatalf("unit %d starts on a blocked tile", id)
				}
			}
		}
	}
}

// run steps w for frames frames, feeding it every player's generator.
func run(t testing.TB, w *World, gens []*Generator, frames int64) {
	t.Helper()
	var in []Input
	for range frames {
		in = in[:0]
		for p, g := range gens {
			for _, b := range g.Next(w.Frame()) {
				in = append(in, Input{Player: p, Data: b})
			}
		}
		if errs := w.Step(in); errs != nil {
			t.Fatalf("frame %d: %v", w.Frame()-1, errs)
		}
	}
}

func generators(cfg Config, seed uint64) []*Generator {
	gens := make([]*Generator, cfg.Players)
	for p := range gens {
		gens[p] = NewGenerator(cfg, p, seed)
	}
	return gens
}

func smallConfig() Config {
	return Config{Players: 4, UnitsPerPlayer: 40, MapWidth: 64, MapHeight: 64, Seed: 9, ObstaclePct: 20}
}

// newWorld returns New(cfg), and fails the test if cfg is invalid.
func newWorld(t testing.TB, cfg Config) *World {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestSameInputsSameHash(t *testing.T) {
	cfg := smallConfig()
	a := newWorld(t, cfg)
	b := newWorld(t, cfg)
	if a.Hash() != b.Hash() {
		t.Fatal("fresh worlds differ")
	}
	ga, gb := generators(cfg, 3), generators(cfg, 3)
	for range 20 {
		run(t, a, ga, 100)
		run(t, b, gb, 100)
		if a.Hash() != b.Hash() {
			t.Fatalf("frame %d: hashes differ", a.Frame())
		}
	}
	ha, hb := determinism.NewHasher(), determinism.NewHasher()
	a.HashSections(ha)
	b.HashSections(hb)
	if ha.Sum64() != a.Hash() {
		t.Fatal("Hash differs from the Sum64 of HashSections")
	}
	var names []string
	for i, s := range ha.Sections() {
		names = append(names, s.Name)
		if s != hb.Sections()[i] {
			t.Fatalf("section %q differs", s.Name)
		}
	}
	want := []string{"frame", "map", "units", "rng", "players"}
	if len(names) != len(want) {
		t.Fatalf("sections %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("sections %v, want %v", names, want)
		}
	}
	s := a.Stats()
	if s.Strikes == 0 || s.TotalAlive() == 0 {
		t.Fatalf("no fighting in 2000 frames: %+v", s)
	}
}

func TestDifferentSeedsDiffer(t *testing.T) {
	cfg := smallConfig()
	a := newWorld(t, cfg)
	cfg.Seed++
	b := newWorld(t, cfg)
	if a.Hash() == b.Hash() {
		t.Fatal("different seeds, same hash")
	}
}

func TestPerturb(t *testing.T) {
	cfg := smallConfig()
	a := newWorld(t, cfg)
	run(t, a, generators(cfg, 1), 300)
	b := a.Clone()
	if a.Hash() != b.Hash() {
		t.Fatal("clone differs")
	}
	b.Perturb(12345)
	if a.Hash() == b.Hash() {
		t.Fatal("Perturb did not change the hash")
	}
	ha, hb := determinism.NewHasher(), determinism.NewHasher()
	a.HashSections(ha)
	b.HashSections(hb)
	for i, s := range ha.Sections() {
		differs := s.Hash != hb.Sections()[i].Hash
		if differs != (s.Name == "units") {
			t.Errorf("section %q differs: %v", s.Name, differs)
		}
	}
}

func TestCloneIndependent(t *testing.T) {
	cfg := smallConfig()
	a := newWorld(t, cfg)
	ga := generators(cfg, 2)
	run(t, a, ga, 500)
	b := a.Clone()
	gb := generators(cfg, 2)
	for _, g := range gb { // bring gb to the same point as ga
		for f := range int64(500) {
			g.Next(f)
		}
	}
	run(t, a, ga, 500)
	run(t, b, gb, 500)
	if a.Hash() != b.Hash() {
		t.Fatal("clone diverged")
	}
}

// TestStepGarbage feeds random bytes, random mutations of valid commands
// and out-of-range players: Step must not panic, must report each bad
// input, and must stay deterministic.
func TestStepGarbage(t *testing.T) {
	cfg := smallConfig()
	a := newWorld(t, cfg)
	b := newWorld(t, cfg)
	r := rand.New(rand.NewPCG(1, 2))
	gens := generators(cfg, 5)
	var valid [][]byte
	for f := int64(0); f < 3000; f++ {
		valid = append(valid, gens[r.IntN(len(gens))].Next(f)...)
	}
	for frame := range 1500 {
		var in []Input
		for range r.IntN(6) {
			var d []byte
			switch r.IntN(4) {
			case 0: // random bytes
				d = make([]byte, r.IntN(12))
				for i := range d {
					d[i] = byte(r.UintN(256))
				}
			case 1: // a mutated valid command
				d = append([]byte(nil), valid[r.IntN(len(valid))]...)
				d[r.IntN(len(d))] ^= byte(1 + r.UintN(255))
			case 2: // a truncated or extended valid command
				d = valid[r.IntN(len(valid))]
				d = slices.Clone(d[:r.IntN(len(d)+1)])
				if r.IntN(2) == 0 {
					d = append(d, byte(r.UintN(256)))
				}
			default: // valid bytes
				d = valid[r.IntN(len(valid))]
			}
			in = append(in, Input{Player: r.IntN(cfg.Players+2) - 1, Data: d})
		}
		ea := a.Step(in)
		eb := b.Step(in)
		if len(ea) != len(eb) {
			t.Fatalf("frame %d: %d errors vs %d", frame, len(ea), len(eb))
		}
		for _, err := range ea {
			if !errors.Is(err, ErrMalformedCommand) && !errors.Is(err, ErrInvalidCommand) {
				t.Fatalf("frame %d: unexpected error %v", frame, err)
			}
		}
		if a.Hash() != b.Hash() {
			t.Fatalf("frame %d: hashes differ", frame)
		}
	}
}

func TestStepReportsBadInputs(t *testing.T) {
	cfg := smallConfig()
	w := newWorld(t, cfg)
	enc := func(c Command) []byte {
		b, err := c.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	in := []Input{
		{Player: 0, Data: enc(Command{Kind: Move, Units: []UnitID{0}, Target: Tile{1, 1}})}, // fine
		{Player: 0, Data: []byte{9}},                                                                      // malformed
		{Player: 4, Data: enc(Command{Kind: Stop, Units: []UnitID{0}})},                                   // no such player
		{Player: -1, Data: enc(Command{Kind: Stop, Units: []UnitID{0}})},                                  // no such player
		{Player: 0, Data: enc(Command{Kind: Move, Units: []UnitID{0}, Target: Tile{64, 0}})},              // off the map
		{Player: 0, Data: enc(Command{Kind: Attack, Units: []UnitID{0}, TargetUnit: 5})},                  // own unit
		{Player: 0, Data: enc(Command{Kind: Attack, Units: []UnitID{0}, TargetUnit: 160})},                // no such unit
		{Player: 0, Data: enc(Command{Kind: Attack, Units: []UnitID{0}, TargetUnit: 100})},                // fine
		{Player: 1, Data: enc(Command{Kind: Move, Units: []UnitID{0, 1, 2, 1000}, Target: Tile{60, 60}})}, // not its units: ignored
	}
	errs := w.Step(in)
	want := []error{ErrMalformedCommand, ErrInvalidCommand, ErrInvalidCommand, ErrInvalidCommand, ErrInvalidCommand, ErrInvalidCommand}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %d", errs, len(want))
	}
	for i, err := range errs {
		if !errors.Is(err, want[i]) {
			t.Errorf("error %d = %v, want %v", i, err, want[i])
		}
	}
	if u := w.units[0]; u.order != Attack || u.target != 100 {
		t.Errorf("unit 0: order %v target %d, want Attack on 100", u.order, u.target)
	}
	if u := w.units[1]; u.order != 0 {
		t.Errorf("unit 1 obeyed another player: order %v", u.order)
	}
	if errs := w.Step(nil); errs != nil {
		t.Fatalf("empty step: %v", errs)
	}
}

// TestMoveArrives orders units across an empty map and checks they arrive
// and become idle, and that a route is shared and released.
func TestMoveArrives(t *testing.T) {
	cfg := Config{Players: 2, UnitsPerPlayer: 4, MapWidth: 40, MapHeight: 40}
	w := newWorld(t, cfg)
	target := Tile{30, 25}
	d, _ := Command{Kind: Move, Units: []UnitID{0, 1, 2, 3}, Target: target}.AppendBinary(nil)
	w.Step([]Input{{Player: 0, Data: d}})
	if got := w.routes.live(); got != 1 {
		t.Fatalf("%d routes live, want 1 shared route", got)
	}
	for range 400 {
		w.Step(nil)
	}
	want := w.index(target.X, target.Y)
	for id := range 4 {
		u := w.units[id]
		if u.tile != want || u.order != 0 || u.segLeft != 0 || u.pos != w.centre(want) {
			t.Errorf("unit %d at (%d, %d) order %v, want idle at %v", id, w.tileX[u.tile], w.tileY[u.tile], u.order, target)
		}
	}
	if got := w.routes.live(); got != 0 {
		t.Errorf("%d routes live after arrival, want 0", got)
	}
}

// TestAttackKills sends one player's army against one enemy unit.
func TestAttackKills(t *testing.T) {
	cfg := Config{Players: 2, UnitsPerPlayer: 4, MapWidth: 40, MapHeight: 40}
	w := newWorld(t, cfg)
	d, _ := Command{Kind: Attack, Units: []UnitID{0, 1, 2, 3}, TargetUnit: 6}.AppendBinary(nil)
	w.Step([]Input{{Player: 0, Data: d}})
	for range 2000 {
		w.Step(nil)
		if !w.units[6].alive {
			break
		}
	}
	if w.units[6].alive {
		t.Fatal("target survived 2000 frames")
	}
	s := w.Stats()
	if s.Kills[0] == 0 || s.Losses[1] == 0 {
		t.Fatalf("stats %+v", s)
	}
	// A command naming the dead unit is ignored.
	d, _ = Command{Kind: Attack, Units: []UnitID{0}, TargetUnit: 6}.AppendBinary(nil)
	if errs := w.Step([]Input{{Player: 0, Data: d}}); errs != nil {
		t.Fatal(errs)
	}
	d, _ = Command{Kind: Move, Units: []UnitID{6}, Target: Tile{1, 1}}.AppendBinary(nil)
	if errs := w.Step([]Input{{Player: 1, Data: d}}); errs != nil || w.units[6].alive {
		t.Fatalf("errors %v, unit 6 alive %v", errs, w.units[6].alive)
	}
}

// TestGeneratorDeterministic checks that generators depend only on their
// arguments and stay within a human action rate.
func TestGeneratorDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	a, b := NewGenerator(cfg, 2, 7), NewGenerator(cfg, 2, 7)
	other := NewGenerator(cfg, 3, 7)
	n, same := 0, 0
	const frames = 12000
	for f := int64(0); f < frames; f++ {
		ca, cb, co := a.Next(f), b.Next(f), other.Next(f)
		if len(ca) != len(cb) {
			t.Fatalf("frame %d: generators differ", f)
		}
		for i := range ca {
			if string(ca[i]) != string(cb[i]) {
				t.Fatalf("frame %d: generators differ", f)
			}
			if _, err := DecodeCommand(ca[i]); err != nil {
				t.Fatal(err)
			}
			if len(co) == 1 && string(co[0]) == string(ca[i]) {
				same++
			}
		}
		n += len(ca)
	}
	apm := n * 60 * 20 / frames
	if apm < 40 || apm > 120 {
		t.Errorf("%d actions per minute, want 40 to 120", apm)
	}
	if same > n/10 {
		t.Errorf("players 2 and 3 issue the same commands %d times of %d", same, n)
	}
	if g := NewGenerator(Config{}, 0, 1); g.Next(100) != nil {
		t.Error("generator of an invalid config issues commands")
	}
}

// FuzzStep feeds arbitrary bytes, cut into inputs, to a small world: Step
// must never panic and must report only the package's errors.
func FuzzStep(f *testing.F) {
	cfg := Config{Players: 3, UnitsPerPlayer: 12, MapWidth: 32, MapHeight: 32, Seed: 4, ObstaclePct: 25}
	base, err := New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	g := NewGenerator(cfg, 1, 1)
	for fr := int64(0); fr < 500; fr++ {
		for _, b := range g.Next(fr) {
			f.Add(append([]byte{1, byte(len(b))}, b...))
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 3, 1, 2, 3, 7, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		w := base.Clone()
		// data is a sequence of (player byte, length byte, bytes); a player
		// byte of 0xff ends the frame.
		var in []Input
		for len(data) >= 2 {
			p, n := int(int8(data[0])), int(data[1])
			data = data[2:]
			if p == -1 {
				w.Step(in)
				in = in[:0]
				continue
			}
			n = min(n, len(data))
			in = append(in, Input{Player: p, Data: data[:n]})
			data = data[n:]
		}
		for range 50 {
			for _, err := range w.Step(in) {
				if !errors.Is(err, ErrMalformedCommand) && !errors.Is(err, ErrInvalidCommand) {
					t.Fatalf("unexpected error %v", err)
				}
			}
			in = nil
		}
	})
}

// Sim hashes once per frame, and its hash is the World's; stepping or
// perturbing invalidates what it cached.
func TestSimHashMatchesWorld(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Players, cfg.UnitsPerPlayer = 2, 20
	s, err := NewSim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Hash()
	if before != s.World().Hash() {
		t.Fatal("Sim.Hash differs from World.Hash")
	}
	s.Step(0, nil)
	if h := s.Hash(); h == before || h != s.World().Hash() {
		t.Fatalf("after Step: %x (before %x, world %x)", h, before, s.World().Hash())
	}
	stepped := s.Hash()
	s.Perturb(1)
	if h := s.Hash(); h == stepped || h != s.World().Hash() {
		t.Fatalf("after Perturb: %x (before %x, world %x)", h, stepped, s.World().Hash())
	}
	secs := s.SectionHashes(nil)
	if len(secs) != 5 || secs[0].Name != "frame" {
		t.Fatalf("sections %v", secs)
	}
}
