package rts

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/phalanx-net/phalanx/determinism"
)

// ErrSnapshot is returned by Restore for data it cannot read.
var ErrSnapshot = errors.New("rts: bad snapshot")

// snapshotVersion opens every snapshot; Restore refuses others.
const snapshotVersion = 1

// AppendSnapshot appends the world's whole state to dst: what changes as
// it steps (the frame, the generator, every unit, the players, the spatial
// grid, the routes in use by target). The static map is not written: a
// world restored from it is made from the same Config. Little-endian
// fixed-size integers throughout, so a snapshot is the same on every
// machine.
func (w *World) AppendSnapshot(dst []byte) []byte {
	le := binary.LittleEndian
	dst = append(dst, snapshotVersion)
	dst = le.AppendUint64(dst, uint64(w.frame))
	dst = le.AppendUint64(dst, w.strikes)
	rs, _ := w.rng.AppendBinary(nil) // never fails
	dst = le.AppendUint32(dst, uint32(len(rs)))
	dst = append(dst, rs...)
	dst = le.AppendUint32(dst, uint32(len(w.units)))
	for i := range w.units {
		u := &w.units[i]
		for _, v := range [...]int64{int64(u.pos.X), int64(u.pos.Y), int64(u.vel.X), int64(u.vel.Y)} {
			dst = le.AppendUint64(dst, uint64(v))
		}
		for _, v := range [...]int32{u.id, u.hp, u.tile, u.route, u.target, u.auto, u.next, u.prev, u.cell} {
			dst = le.AppendUint32(dst, uint32(v))
		}
		dst = le.AppendUint32(dst, u.life)
		dst = le.AppendUint32(dst, u.tLife)
		dst = le.AppendUint32(dst, u.aLife)
		dst = le.AppendUint16(dst, u.cooldown)
		alive := byte(0)
		if u.alive {
			alive = 1
		}
		dst = append(dst, byte(u.order), u.segLeft, u.owner, u.kind, alive)
	}
	dst = le.AppendUint32(dst, uint32(len(w.players)))
	for _, p := range w.players {
		for _, v := range [...]int{p.alive, p.kills, p.losses, p.trained, p.trainLeft} {
			dst = le.AppendUint64(dst, uint64(int64(v)))
		}
	}
	dst = le.AppendUint32(dst, uint32(len(w.cellHead)))
	for i := range w.cellHead {
		dst = le.AppendUint32(dst, uint32(w.cellHead[i]))
		dst = le.AppendUint16(dst, w.cellCount[i])
	}
	dst = le.AppendUint32(dst, uint32(len(w.cellPlayers)))
	for _, v := range w.cellPlayers {
		dst = le.AppendUint16(dst, v)
	}
	dst = le.AppendUint32(dst, uint32(len(w.routes.list)))
	for _, r := range w.routes.list {
		inUse := byte(0)
		if r.inUse {
			inUse = 1
		}
		dst = le.AppendUint32(dst, uint32(r.target))
		dst = le.AppendUint32(dst, uint32(r.refs))
		dst = append(dst, inUse)
	}
	dst = le.AppendUint32(dst, uint32(len(w.routes.free)))
	for _, f := range w.routes.free {
		dst = le.AppendUint32(dst, uint32(f))
	}
	return dst
}

// snapReader reads a snapshot, remembering the first shortfall.
type snapReader struct {
	b   []byte
	bad bool
}

func (r *snapReader) take(n int) []byte {
	if r.bad || len(r.b) < n {
		r.bad = true
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *snapReader) u8() byte    { return r.take(1)[0] }
func (r *snapReader) u16() uint16 { return binary.LittleEndian.Uint16(r.take(2)) }
func (r *snapReader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *snapReader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }

// count reads a length and checks it against want.
func (r *snapReader) count(want int) bool { return int(r.u32()) == want && !r.bad }

// Restore replaces w's state with a snapshot AppendSnapshot wrote of a world
// of the same Config. It returns an error wrapping ErrSnapshot for data it
// cannot read or that belongs to another configuration; w is then
// unspecified.
func (w *World) Restore(data []byte) error {
	r := &snapReader{b: data}
	if r.u8() != snapshotVersion {
		return fmt.Errorf("%w: not a version %d snapshot", ErrSnapshot, snapshotVersion)
	}
	w.frame = int64(r.u64())
	w.strikes = r.u64()
	rs := r.take(int(r.u32()))
	if r.bad || w.rng.UnmarshalBinary(rs) != nil {
		return fmt.Errorf("%w: generator state", ErrSnapshot)
	}
	if !r.count(len(w.units)) {
		return fmt.Errorf("%w: unit count", ErrSnapshot)
	}
	for i := range w.units {
		u := &w.units[i]
		u.pos.X, u.pos.Y = determinism.Fixed(r.u64()), determinism.Fixed(r.u64())
		u.vel.X, u.vel.Y = determinism.Fixed(r.u64()), determinism.Fixed(r.u64())
		for _, v := range [...]*int32{&u.id, &u.hp, &u.tile, &u.route, &u.target, &u.auto, &u.next, &u.prev, &u.cell} {
			*v = int32(r.u32())
		}
		u.life, u.tLife, u.aLife = r.u32(), r.u32(), r.u32()
		u.cooldown = r.u16()
		u.order, u.segLeft, u.owner, u.kind, u.alive = CommandKind(r.u8()), r.u8(), r.u8(), r.u8(), r.u8() == 1
	}
	if !r.count(len(w.players)) {
		return fmt.Errorf("%w: player count", ErrSnapshot)
	}
	for i := range w.players {
		p := &w.players[i]
		for _, v := range [...]*int{&p.alive, &p.kills, &p.losses, &p.trained, &p.trainLeft} {
			*v = int(int64(r.u64()))
		}
	}
	if !r.count(len(w.cellHead)) {
		return fmt.Errorf("%w: grid size", ErrSnapshot)
	}
	for i := range w.cellHead {
		w.cellHead[i] = int32(r.u32())
		w.cellCount[i] = r.u16()
	}
	if !r.count(len(w.cellPlayers)) {
		return fmt.Errorf("%w: grid size", ErrSnapshot)
	}
	for i := range w.cellPlayers {
		w.cellPlayers[i] = r.u16()
	}
	n := int(r.u32())
	if r.bad || n > len(w.open) {
		return fmt.Errorf("%w: route count", ErrSnapshot)
	}
	w.routes.list = w.routes.list[:0]
	for range n {
		rt := route{target: int32(r.u32()), refs: int32(r.u32()), inUse: r.u8() == 1, dist: make([]uint16, len(w.open))}
		if r.bad || rt.target < 0 || int(rt.target) >= len(w.open) {
			return fmt.Errorf("%w: route target", ErrSnapshot)
		}
		w.routes.list = append(w.routes.list, rt)
	}
	for i := range w.routes.list {
		if w.routes.list[i].inUse {
			w.fillRoute(&w.routes.list[i])
		}
	}
	nf := int(r.u32())
	if r.bad || nf > n {
		return fmt.Errorf("%w: free routes", ErrSnapshot)
	}
	w.routes.free = w.routes.free[:0]
	for range nf {
		w.routes.free = append(w.routes.free, int32(r.u32()))
	}
	if r.bad || len(r.b) != 0 {
		return fmt.Errorf("%w: %d bytes left over or cut short", ErrSnapshot, len(r.b))
	}
	return w.checkRestored()
}

// checkRestored refuses a restored state whose indices point outside the
// world, so that a damaged snapshot fails here rather than panicking in
// Step.
func (w *World) checkRestored() error {
	units, routes, cells := int32(len(w.units)), int32(len(w.routes.list)), int32(len(w.cellHead))
	tiles := int32(len(w.open))
	in := func(v, n int32) bool { return v >= -1 && v < n }
	for i := range w.units {
		u := &w.units[i]
		if !in(u.route, routes) || !in(u.target, units) || !in(u.auto, units) || !in(u.next, units) || !in(u.prev, units) ||
			!in(u.cell, cells) || u.tile < 0 || u.tile >= tiles || int(u.owner) >= len(w.players) || int(u.kind) >= len(kinds) {
			return fmt.Errorf("%w: unit %d out of range", ErrSnapshot, i)
		}
	}
	for _, h := range w.cellHead {
		if !in(h, units) {
			return fmt.Errorf("%w: grid out of range", ErrSnapshot)
		}
	}
	for _, f := range w.routes.free {
		if f < 0 || f >= routes {
			return fmt.Errorf("%w: free route out of range", ErrSnapshot)
		}
	}
	return nil
}

// AppendSnapshot appends the world's state (lockstep.Snapshotter; see
// World.AppendSnapshot).
func (s *Sim) AppendSnapshot(dst []byte) []byte { return s.world.AppendSnapshot(dst) }

// Restore replaces the world's state with a snapshot's (lockstep.Snapshotter;
// see World.Restore).
func (s *Sim) Restore(data []byte) error {
	s.hashed = false
	return s.world.Restore(data)
}
