package rts

import (
	"slices"
	"testing"
	"time"
)

// benchStart and benchWindow: the benchmarks step frames benchStart to
// benchStart+benchWindow of the default game over and over: armies on the
// move and the first battles, with about 1,500 of the 1,600 units alive.
const (
	benchStart  = 600
	benchWindow = 200
)

// midGame returns the default world at frame benchStart, fed by every
// player's generator, and the inputs of the next benchWindow frames.
func midGame(b *testing.B) (*World, [][]Input) {
	b.Helper()
	cfg := DefaultConfig()
	w := newWorld(b, cfg)
	inputsAt := generated(cfg)
	for f := range int64(benchStart) {
		w.Step(inputsAt(f))
	}
	window := make([][]Input, benchWindow)
	for i := range window {
		window[i] = inputsAt(benchStart + int64(i))
	}
	return w, window
}

// BenchmarkStep measures one Step of the default game (8 players × 200
// units) in mid-game, inputs included. Besides ns/op it reports the median
// and 99th percentile of single steps.
func BenchmarkStep(b *testing.B) {
	base, window := midGame(b)
	w := base.Clone()
	// Warm the route pool so that steady-state Steps allocate nothing.
	for _, in := range window {
		w.Step(in)
	}
	w = base.Clone()
	times := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if i == benchWindow {
			b.StopTimer()
			w.restore(base)
			i = 0
			b.StartTimer()
		}
		start := time.Now()
		w.Step(window[i])
		if len(times) < cap(times) {
			times = append(times, time.Since(start))
		}
		i++
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(base.Stats().TotalAlive()), "units")
}

// BenchmarkHash measures the state hash of the mid-game world.
func BenchmarkHash(b *testing.B) {
	w, _ := midGame(b)
	b.ReportAllocs()
	for b.Loop() {
		w.Hash()
	}
}

// BenchmarkGenerator measures one player's generator over a frame.
func BenchmarkGenerator(b *testing.B) {
	g := NewGenerator(DefaultConfig(), 0, 1)
	b.ReportAllocs()
	f := int64(0)
	for b.Loop() {
		g.Next(f)
		f++
	}
}

// restore makes w a copy of from (a world of the same Config) reusing w's
// memory, so that a benchmark can rewind without allocating.
func (w *World) restore(from *World) {
	w.frame, w.strikes, w.reroutes = from.frame, from.strikes, from.reroutes
	*w.rng = *from.rng
	copy(w.units, from.units)
	copy(w.players, from.players)
	copy(w.cellHead, from.cellHead)
	copy(w.cellCount, from.cellCount)
	copy(w.cellPlayers, from.cellPlayers)
	for len(w.routes.list) < len(from.routes.list) {
		w.routes.list = append(w.routes.list, route{dist: make([]uint16, len(w.open)), queue: make([]int32, len(w.open))})
	}
	w.routes.list = w.routes.list[:len(from.routes.list)]
	for i := range w.routes.list {
		r, f := &w.routes.list[i], &from.routes.list[i]
		r.target, r.refs, r.inUse, r.head, r.tail = f.target, f.refs, f.inUse, f.head, f.tail
		copy(r.dist, f.dist)
		copy(r.queue, f.queue)
	}
	w.routes.free = append(w.routes.free[:0], from.routes.free...)
}

// BenchmarkRoute measures the flow field of one order across the default
// map, the whole field (as a unit at the farthest tile reads it).
func BenchmarkRoute(b *testing.B) {
	w := newWorld(b, DefaultConfig())
	b.ReportAllocs()
	t := w.index(64, 64)
	for b.Loop() {
		r := w.acquireRoute(t)
		w.routes.hold(r)
		rt := &w.routes.list[r]
		for i := range w.open {
			w.reach(rt, int32(i))
		}
		w.routes.release(r)
	}
}
