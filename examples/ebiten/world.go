package main

import (
	"encoding/binary"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/determinism"
	"github.com/phalanx-net/phalanx/rng"
)

// The game: each player steers a squad of four units with mouse clicks
// across a 320×240 field; a flag appears at a spot drawn from the shared
// seed, and the first unit to reach it scores for its player and moves the
// flag. Everything is integer or fixed-point arithmetic, so every member
// computes the same world.

const (
	fieldW, fieldH = 320, 240
	squad          = 4
	reach          = 6 // a unit within this many pixels of the flag takes it
)

var speed = determinism.FromFraction(3, 2) // pixels a frame

// unit is one unit of a player.
type unit struct {
	pos, target determinism.Vec2
}

// world is the simulation stepped by the lockstep session.
type world struct {
	units []unit // player p owns units p*squad to p*squad+squad-1
	score []int
	flag  determinism.Vec2
	r     *rng.PCG
}

func newWorld(seed uint64, players int) *world {
	w := &world{units: make([]unit, players*squad), score: make([]int, players), r: rng.New(seed, 0)}
	for i := range w.units {
		p, k := i/squad, i%squad
		at := v(40+int64(p%2)*240+int64(k%2)*12, 40+int64(p/2)*160+int64(k/2)*12)
		w.units[i] = unit{pos: at, target: at}
	}
	w.moveFlag()
	return w
}

func v(x, y int64) determinism.Vec2 {
	return determinism.V2(determinism.FromInt(x), determinism.FromInt(y))
}

func (w *world) moveFlag() {
	w.flag = v(int64(16+w.r.IntN(fieldW-32)), int64(16+w.r.IntN(fieldH-32)))
}

// order encodes a move order: the squad's new target on the field.
func order(x, y int) []byte {
	b := []byte{'m', 0, 0, 0, 0}
	binary.LittleEndian.PutUint16(b[1:], uint16(min(max(x, 0), fieldW-1)))
	binary.LittleEndian.PutUint16(b[3:], uint16(min(max(y, 0), fieldH-1)))
	return b
}

// Step applies the frame's orders, then moves every unit towards its target.
func (w *world) Step(_ bucket.Frame, cmds []bucket.Command) {
	for _, c := range cmds {
		if len(c.Payload) != 5 || c.Payload[0] != 'm' || int(c.Slot) >= len(w.score) {
			continue // not an order of this game: ignored alike everywhere
		}
		t := v(int64(binary.LittleEndian.Uint16(c.Payload[1:])), int64(binary.LittleEndian.Uint16(c.Payload[3:])))
		for k := range squad {
			w.units[int(c.Slot)*squad+k].target = t.Add(v(int64(k%2)*12-6, int64(k/2)*12-6))
		}
	}
	for i := range w.units {
		u := &w.units[i]
		d := u.target.Sub(u.pos)
		if d.Len().Cmp(speed) <= 0 {
			u.pos = u.target
		} else {
			u.pos = u.pos.Add(d.Normalize().Scale(speed))
		}
		if u.pos.Dist(w.flag).Cmp(determinism.FromInt(reach)) <= 0 {
			w.score[i/squad]++
			w.moveFlag()
		}
	}
}

// Hash hashes the whole state.
func (w *world) Hash() uint64 {
	h := determinism.NewHasher()
	for _, u := range w.units {
		h.WriteVec2(u.pos)
		h.WriteVec2(u.target)
	}
	for _, s := range w.score {
		h.WriteInt(s)
	}
	h.WriteVec2(w.flag)
	return h.Sum64()
}

// positions appends every unit's position, for drawing.
func (w *world) positions(dst []determinism.Vec2) []determinism.Vec2 {
	for _, u := range w.units {
		dst = append(dst, u.pos)
	}
	return dst
}
