package rts

import (
	"encoding/binary"

	"github.com/phalanx-net/phalanx/determinism"
)

// Hash returns the hash of the world's state: the Sum64 of a fresh
// [determinism.Hasher] after [World.HashSections]. It allocates nothing.
func (w *World) Hash() uint64 {
	w.hasher.Reset()
	w.HashSections(w.hasher)
	return w.hasher.Sum64()
}

// HashSections writes the whole state into h, in these sections:
//
//   - "frame": the frame number;
//   - "map": width, height and the digest of the static map;
//   - "units": one WriteBytes of every unit in ID order: a dead unit is the
//     byte 0 and its life number (4 bytes); a living unit is the byte 1, its order and its ticks left in
//     its step (1 byte each), its position and velocity (4 × 8 bytes), hit
//     points (4), cooldown (2), padded tile index, route target tile index
//     (or -1), Attack target and self-acquired target (or -1), then the
//     unit's life number and the life numbers of its two targets (4 each),
//     all little-endian;
//   - "rng": the world generator's state (its MarshalBinary encoding);
//   - "players": for each player, units alive, kills, losses, units
//     trained and ticks until the next is trained, then the total number of
//     strikes.
//
// Routes are written only as their target: a route's field is a function of
// the map and its target.
func (w *World) HashSections(h *determinism.Hasher) {
	h.Section("frame")
	h.WriteInt64(w.frame)

	h.Section("map")
	h.WriteInt(w.width)
	h.WriteInt(w.height)
	h.WriteUint64(w.digest)

	h.Section("units")
	// The units are packed into one buffer, written with one WriteBytes.
	b := w.hashBuf[:0]
	for i := range w.units {
		u := &w.units[i]
		if !u.alive {
			b = append(b, 0)
			b = binary.LittleEndian.AppendUint32(b, u.life)
			continue
		}
		rt := int32(-1)
		if u.route >= 0 {
			rt = w.routes.list[u.route].target
		}
		b = append(b, 1, byte(u.order), u.segLeft)
		b = binary.LittleEndian.AppendUint64(b, uint64(u.pos.X))
		b = binary.LittleEndian.AppendUint64(b, uint64(u.pos.Y))
		b = binary.LittleEndian.AppendUint64(b, uint64(u.vel.X))
		b = binary.LittleEndian.AppendUint64(b, uint64(u.vel.Y))
		b = binary.LittleEndian.AppendUint32(b, uint32(u.hp))
		b = binary.LittleEndian.AppendUint16(b, u.cooldown)
		b = binary.LittleEndian.AppendUint32(b, uint32(u.tile))
		b = binary.LittleEndian.AppendUint32(b, uint32(rt))
		b = binary.LittleEndian.AppendUint32(b, uint32(u.target))
		b = binary.LittleEndian.AppendUint32(b, uint32(u.auto))
		b = binary.LittleEndian.AppendUint32(b, u.life)
		b = binary.LittleEndian.AppendUint32(b, u.tLife)
		b = binary.LittleEndian.AppendUint32(b, u.aLife)
	}
	h.WriteBytes(b)
	w.hashBuf = b

	h.Section("rng")
	w.hashBuf, _ = w.rng.AppendBinary(w.hashBuf[:0])
	h.WriteBytes(w.hashBuf)

	h.Section("players")
	for _, p := range w.players {
		h.WriteInt(p.alive)
		h.WriteInt(p.kills)
		h.WriteInt(p.losses)
		h.WriteInt(p.trained)
		h.WriteInt(p.trainLeft)
	}
	h.WriteUint64(w.strikes)
}

// Perturb deliberately changes one value of the state, so that tests can
// check that a desync is detected and located. Starting at unit ID r mod
// N (N the number of units) and wrapping around, it finds the first living
// unit and adds 1 to its hit points: the "units" section changes at once,
// and the simulation diverges later if that unit is struck. If no unit is
// alive it adds 1 to the kill count of player r mod Players instead (the
// "players" section changes). It never fails.
func (w *World) Perturb(r uint64) {
	n := uint64(len(w.units))
	for k := range n {
		u := &w.units[(r+k)%n]
		if u.alive {
			u.hp++
			return
		}
	}
	w.players[r%uint64(len(w.players))].kills++
}
