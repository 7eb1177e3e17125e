package rts

import (
	"errors"
	"fmt"
)

// UnitID names a unit for the whole game. Player p's units are the IDs
// p*UnitsPerPlayer through (p+1)*UnitsPerPlayer-1, so a player (or its
// [Generator]) knows every unit ID from the [Config] alone. A dead unit
// keeps its ID, and commands ignore it until its base trains a replacement,
// which takes over the ID.
type UnitID uint32

// Tile is a map position in whole tiles: X grows east, Y grows south, and
// (0, 0) is the north-west corner.
type Tile struct {
	X, Y int
}

// CommandKind says what a [Command] orders. Its numeric value is the first
// byte of the command's encoding.
type CommandKind uint8

// The command kinds. Zero is not a kind: a zero first byte is malformed.
const (
	// Move sends the units to Target along the shortest grid path. Moving
	// units ignore enemies until they arrive.
	Move CommandKind = 1
	// AttackMove sends the units to Target like Move, but a unit engages any
	// enemy it sees on the way and resumes the move once that enemy is dead
	// or out of reach.
	AttackMove CommandKind = 2
	// Attack orders the units to chase and strike TargetUnit until it dies.
	Attack CommandKind = 3
	// Stop clears the units' orders; they become idle (and idle units
	// defend themselves against enemies they see).
	Stop CommandKind = 4
)

var commandKindNames = [...]string{
	Move:       "Move",
	AttackMove: "AttackMove",
	Attack:     "Attack",
	Stop:       "Stop",
}

// String returns the name of k, or "CommandKind(N)" for an unknown value.
func (k CommandKind) String() string {
	if int(k) < len(commandKindNames) && commandKindNames[k] != "" {
		return commandKindNames[k]
	}
	return fmt.Sprintf("CommandKind(%d)", uint8(k))
}

// Limits of the command encoding. They bound what [DecodeCommand] accepts,
// independently of any particular [Config]; a [World] further rejects
// targets outside its own map and units outside its own unit range.
const (
	// MaxCommandUnits is the largest number of units one command may select.
	MaxCommandUnits = 256
	// MaxUnitID is the largest unit ID an encoding may carry: the last unit
	// of the largest possible game (MaxPlayers × MaxUnitsPerPlayer units).
	MaxUnitID = MaxPlayers*MaxUnitsPerPlayer - 1
	// MaxCoord is the largest tile coordinate an encoding may carry.
	MaxCoord = MaxMapSide - 1
	// MaxCommandLen bounds the length of a valid encoding (kind, count, at
	// most 2 bytes per ID, at most 4 bytes of target); DecodeCommand rejects
	// longer input at once.
	MaxCommandLen = 1 + 2 + 2*MaxCommandUnits + 4
)

// Errors reported by command encoding, decoding and [World.Step]. They are
// wrapped with details; test them with errors.Is.
var (
	// ErrMalformedCommand: bytes that are not the encoding of a command.
	ErrMalformedCommand = errors.New("rts: malformed command")
	// ErrInvalidCommand: a command that is well formed but cannot apply:
	// a target off the map, an attack on one's own or a nonexistent unit,
	// an input from a player that is not in the game, or (for AppendBinary)
	// a Command value outside the encoding's limits.
	ErrInvalidCommand = errors.New("rts: invalid command")
)

// Command is one order a player gives to a selection of its units.
type Command struct {
	Kind CommandKind
	// Units is the selection, in strictly increasing ID order, with 1 to
	// MaxCommandUnits entries. Units the issuing player does not own, or
	// that are dead, are ignored when the command executes.
	Units []UnitID
	// Target is the destination of Move and AttackMove; ignored otherwise.
	Target Tile
	// TargetUnit is the enemy unit to attack for Attack; ignored otherwise.
	TargetUnit UnitID
}

// AppendBinary appends the encoding of c to b and returns the extended
// slice. The encoding, byte by byte (uvarint is encoding/binary's unsigned
// varint, always in its shortest form):
//
//	kind      1 byte: 1 Move, 2 AttackMove, 3 Attack, 4 Stop
//	count     uvarint n, 1 <= n <= MaxCommandUnits
//	units     uvarint Units[0], then for i = 1..n-1 uvarint Units[i]-Units[i-1]-1
//	payload   Move, AttackMove: uvarint Target.X, uvarint Target.Y
//	          Attack:           uvarint TargetUnit
//	          Stop:             nothing
//
// The fields a kind does not use are not encoded. AppendBinary returns b
// unchanged and an error wrapping [ErrInvalidCommand] when c cannot be
// encoded: unknown kind, a selection that is empty, longer than
// MaxCommandUnits or not strictly increasing, an ID above MaxUnitID, or a
// coordinate outside [0, MaxCoord].
func (c Command) AppendBinary(b []byte) ([]byte, error) {
	if err := c.check(); err != nil {
		return b, err
	}
	b = append(b, byte(c.Kind))
	b = appendUvarint(b, uint64(len(c.Units)))
	prev := c.Units[0]
	b = appendUvarint(b, uint64(prev))
	for _, id := range c.Units[1:] {
		b = appendUvarint(b, uint64(id-prev-1))
		prev = id
	}
	switch c.Kind {
	case Move, AttackMove:
		b = appendUvarint(b, uint64(c.Target.X))
		b = appendUvarint(b, uint64(c.Target.Y))
	case Attack:
		b = appendUvarint(b, uint64(c.TargetUnit))
	}
	return b, nil
}

// check reports why c cannot be encoded, or nil.
func (c Command) check() error {
	switch c.Kind {
	case Move, AttackMove, Attack, Stop:
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrInvalidCommand, uint8(c.Kind))
	}
	if len(c.Units) == 0 || len(c.Units) > MaxCommandUnits {
		return fmt.Errorf("%w: %d units selected, want 1 to %d", ErrInvalidCommand, len(c.Units), MaxCommandUnits)
	}
	for i, id := range c.Units {
		if id > MaxUnitID {
			return fmt.Errorf("%w: unit %d above MaxUnitID", ErrInvalidCommand, id)
		}
		if i > 0 && id <= c.Units[i-1] {
			return fmt.Errorf("%w: units not strictly increasing at index %d", ErrInvalidCommand, i)
		}
	}
	switch c.Kind {
	case Move, AttackMove:
		if c.Target.X < 0 || c.Target.X > MaxCoord || c.Target.Y < 0 || c.Target.Y > MaxCoord {
			return fmt.Errorf("%w: target (%d, %d) outside [0, %d]", ErrInvalidCommand, c.Target.X, c.Target.Y, MaxCoord)
		}
	case Attack:
		if c.TargetUnit > MaxUnitID {
			return fmt.Errorf("%w: target unit %d above MaxUnitID", ErrInvalidCommand, c.TargetUnit)
		}
	}
	return nil
}

// DecodeCommand decodes one command encoded by [Command.AppendBinary]. b
// must hold exactly one command. Any other input (empty or truncated bytes,
// an unknown kind, a unit count of 0 or above MaxCommandUnits, IDs above
// MaxUnitID or not increasing, coordinates above MaxCoord, a varint that
// overflows or is not in shortest form, trailing bytes) yields an error
// wrapping [ErrMalformedCommand]. It never panics, and a command it accepts
// re-encodes to exactly b.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	err := decodeCommand(b, &c, nil)
	if err != nil {
		return Command{}, err
	}
	return c, nil
}

// decodeCommand decodes b into c, appending the selection to units[:0] so
// that a caller can reuse one buffer. On error c is partially written.
func decodeCommand(b []byte, c *Command, units []UnitID) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: empty", ErrMalformedCommand)
	}
	if len(b) > MaxCommandLen {
		return fmt.Errorf("%w: %d bytes, longer than any command", ErrMalformedCommand, len(b))
	}
	kind := CommandKind(b[0])
	switch kind {
	case Move, AttackMove, Attack, Stop:
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrMalformedCommand, b[0])
	}
	pos := 1
	n, pos, err := readUvarint(b, pos, MaxCommandUnits, "unit count")
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: no units selected", ErrMalformedCommand)
	}
	units = units[:0]
	var id uint64
	for i := uint64(0); i < n; i++ {
		var v uint64
		v, pos, err = readUvarint(b, pos, MaxUnitID, "unit ID")
		if err != nil {
			return err
		}
		if i > 0 {
			v += id + 1 // both terms are at most MaxUnitID: no overflow
		}
		if v > MaxUnitID {
			return fmt.Errorf("%w: unit ID %d above %d", ErrMalformedCommand, v, MaxUnitID)
		}
		id = v
		units = append(units, UnitID(id))
	}
	*c = Command{Kind: kind, Units: units}
	switch kind {
	case Move, AttackMove:
		var x, y uint64
		if x, pos, err = readUvarint(b, pos, MaxCoord, "target X"); err != nil {
			return err
		}
		if y, pos, err = readUvarint(b, pos, MaxCoord, "target Y"); err != nil {
			return err
		}
		c.Target = Tile{X: int(x), Y: int(y)}
	case Attack:
		var t uint64
		if t, pos, err = readUvarint(b, pos, MaxUnitID, "target unit"); err != nil {
			return err
		}
		c.TargetUnit = UnitID(t)
	}
	if pos != len(b) {
		return fmt.Errorf("%w: %d trailing bytes", ErrMalformedCommand, len(b)-pos)
	}
	return nil
}

// appendUvarint appends v as an unsigned varint: seven bits per byte, least
// significant group first, the high bit set on every byte but the last.
func appendUvarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// readUvarint reads the shortest-form unsigned varint at b[pos:], which must
// not exceed limit (limit < 2^56), and returns it with the position after it.
func readUvarint(b []byte, pos int, limit uint64, what string) (uint64, int, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift > 56 {
			return 0, pos, fmt.Errorf("%w: %s varint too long", ErrMalformedCommand, what)
		}
		if pos >= len(b) {
			return 0, pos, fmt.Errorf("%w: truncated %s", ErrMalformedCommand, what)
		}
		c := b[pos]
		pos++
		if c == 0 && shift > 0 {
			return 0, pos, fmt.Errorf("%w: %s varint not in shortest form", ErrMalformedCommand, what)
		}
		v |= uint64(c&0x7f) << shift
		if v > limit {
			return 0, pos, fmt.Errorf("%w: %s above %d", ErrMalformedCommand, what, limit)
		}
		if c < 0x80 {
			return v, pos, nil
		}
	}
}
