package reckon

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// DatagramKind is the first byte of a datagram that carries an entity
// update, beside the lockstep packet's 0x01.
const DatagramKind = 0x02

// Tick is the unit of an update's timestamp on the wire (the 100 µs tick of
// the lockstep protocol).
const Tick = 100 * time.Microsecond

// MaxUpdateSize is the largest encoded update: kind, flags, a 10-byte
// entity, sequence number, a 7-byte timestamp (any time.Duration is under
// 2^47 ticks) and nine float32s.
const MaxUpdateSize = 1 + 1 + binary.MaxVarintLen64 + 2 + 7 + 9*4

// Errors of ParseUpdate; the returned errors wrap one of them.
var (
	ErrMalformed  = errors.New("reckon: malformed update")
	ErrDimensions = errors.New("reckon: update has other dimensions")
)

// Flags byte.
const (
	flag3D      = 0x01 // three components per vector, else two
	flagVel     = 0x02 // a velocity follows the position
	flagAcc     = 0x04 // an acceleration follows
	flagsUnused = 0xF8
)

// AppendUpdate appends the datagram that carries u to b and returns the
// extended slice. The layout (docs/dead-reckoning.md):
//
//	u8      kind 0x02
//	u8      flags: 0x01 3D, 0x02 velocity present, 0x04 acceleration present
//	varint  Entity
//	u16     Seq, little-endian
//	varint  zigzag(State.At in ticks of 100 µs, rounded to nearest)
//	float32 position components (2 or 3), little-endian
//	float32 velocity components, if present
//	float32 acceleration components, if present
//
// A velocity or acceleration that is zero in float32 is left out. Values are
// rounded to float32; one beyond float32's range or not finite encodes, but
// ParseUpdate refuses it. An update is 14 to MaxUpdateSize (57) bytes.
func AppendUpdate[V Vector[V]](b []byte, u Update[V]) []byte {
	s := u.State
	pos, n := components(s.Pos)
	vel, _ := components(s.Vel)
	acc, _ := components(s.Acc)
	flags := byte(0)
	if n == 3 {
		flags |= flag3D
	}
	if !zero32(vel) {
		flags |= flagVel
	}
	if !zero32(acc) {
		flags |= flagAcc
	}
	b = append(b, DatagramKind, flags)
	b = binary.AppendUvarint(b, u.Entity)
	b = binary.LittleEndian.AppendUint16(b, u.Seq)
	b = binary.AppendVarint(b, ticks(s.At))
	b = appendFloats(b, pos[:n])
	if flags&flagVel != 0 {
		b = appendFloats(b, vel[:n])
	}
	if flags&flagAcc != 0 {
		b = appendFloats(b, acc[:n])
	}
	return b
}

// ParseUpdate decodes a datagram written by AppendUpdate. It never panics.
// It returns an error wrapping ErrMalformed if b is cut short, has bytes
// after the update, another kind, reserved flag bits, a varint that
// overflows, a timestamp beyond time.Duration's range or a component that is
// not a finite number, and one wrapping ErrDimensions if b holds vectors of
// the other dimension than V's.
func ParseUpdate[V Vector[V]](b []byte) (Update[V], error) {
	var u Update[V]
	if len(b) < 2 {
		return u, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	if b[0] != DatagramKind {
		return u, fmt.Errorf("%w: kind 0x%02x", ErrMalformed, b[0])
	}
	flags := b[1]
	if flags&flagsUnused != 0 {
		return u, fmt.Errorf("%w: reserved flags 0x%02x", ErrMalformed, flags&flagsUnused)
	}
	_, n := components(u.State.Pos)
	if (flags&flag3D != 0) != (n == 3) {
		return u, fmt.Errorf("%w: %dD, want %dD", ErrDimensions, 5-n, n)
	}
	r := b[2:]
	entity, k := binary.Uvarint(r)
	if k <= 0 {
		return u, fmt.Errorf("%w: entity", ErrMalformed)
	}
	r = r[k:]
	if len(r) < 2 {
		return u, fmt.Errorf("%w: sequence number cut off", ErrMalformed)
	}
	u.Entity, u.Seq = entity, binary.LittleEndian.Uint16(r)
	r = r[2:]
	at, k := binary.Varint(r)
	if k <= 0 {
		return u, fmt.Errorf("%w: timestamp", ErrMalformed)
	}
	if at > math.MaxInt64/int64(Tick) || at < math.MinInt64/int64(Tick) {
		return u, fmt.Errorf("%w: timestamp %d ticks out of range", ErrMalformed, at)
	}
	r = r[k:]
	u.State.At = time.Duration(at) * Tick
	want := n
	if flags&flagVel != 0 {
		want += n
	}
	if flags&flagAcc != 0 {
		want += n
	}
	if len(r) != 4*want {
		return u, fmt.Errorf("%w: %d bytes of vectors, want %d", ErrMalformed, len(r), 4*want)
	}
	var err error
	if u.State.Pos, r, err = readVector[V](r, n); err != nil {
		return u, err
	}
	if flags&flagVel != 0 {
		if u.State.Vel, r, err = readVector[V](r, n); err != nil {
			return u, err
		}
	}
	if flags&flagAcc != 0 {
		if u.State.Acc, _, err = readVector[V](r, n); err != nil {
			return u, err
		}
	}
	return u, nil
}

// quantize returns s as the wire delivers it: moved under p to its
// timestamp rounded to a tick (which drops the acceleration under
// ConstantVelocity), then every component rounded to float32. An owner
// predicts from exactly what its receivers decode.
func quantize[V Vector[V]](s State[V], p Predictor) State[V] {
	s = s.Predict(p, time.Duration(ticks(s.At))*Tick)
	return State[V]{Pos: round32(s.Pos), Vel: round32(s.Vel), Acc: round32(s.Acc), At: s.At}
}

// ticks returns d in ticks, rounded to the nearest (halves away from zero).
func ticks(d time.Duration) int64 {
	return int64(d.Round(Tick) / Tick)
}

func components[V Vector[V]](v V) ([3]float64, int) {
	switch v := any(v).(type) {
	case Vec2:
		return [3]float64{v.X, v.Y}, 2
	case Vec3:
		return [3]float64{v.X, v.Y, v.Z}, 3
	}
	panic("unreachable")
}

func fromComponents[V Vector[V]](c [3]float64) V {
	var v V
	switch p := any(&v).(type) {
	case *Vec2:
		*p = Vec2{c[0], c[1]}
	case *Vec3:
		*p = Vec3{c[0], c[1], c[2]}
	}
	return v
}

func round32[V Vector[V]](v V) V {
	c, _ := components(v)
	for i := range c {
		c[i] = float64(float32(c[i]))
	}
	return fromComponents[V](c)
}

func zero32(c [3]float64) bool {
	return float32(c[0]) == 0 && float32(c[1]) == 0 && float32(c[2]) == 0
}

func appendFloats(b []byte, c []float64) []byte {
	for _, x := range c {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(x)))
	}
	return b
}

func readVector[V Vector[V]](r []byte, n int) (V, []byte, error) {
	var c [3]float64
	for i := range n {
		x := float64(math.Float32frombits(binary.LittleEndian.Uint32(r[4*i:])))
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fromComponents[V](c), r, fmt.Errorf("%w: component not finite", ErrMalformed)
		}
		c[i] = x
	}
	return fromComponents[V](c), r[4*n:], nil
}
