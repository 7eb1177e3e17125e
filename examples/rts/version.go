package rts

import (
	"encoding/binary"
	"fmt"
)

// SimName and SimVersion identify this simulation in replay headers (see
// lockstep/replay). A replay verifies only against the same name and
// version.
//
// Change SimVersion whenever the same commands can produce another state:
// a change of the rules, of the map generator, of a constant in the
// package doc, of the command encoding or of the state hash. Doing so
// means re-recording the replay fixtures in testdata/*.phx (see
// replay_test.go). The golden scenario test (scenario_test.go) fails on
// such changes, as a reminder.
const (
	SimName    = "rts"
	SimVersion = "1"
)

// configVersion is the first byte of Config's binary form.
const configVersion = 1

// MarshalBinary encodes c for a replay header: the byte 1 (the encoding's
// version), then Players, UnitsPerPlayer, MapWidth, MapHeight and
// ObstaclePct as uvarints and Seed as 8 bytes little-endian. It never
// fails; c need not be valid.
func (c Config) MarshalBinary() ([]byte, error) {
	b := []byte{configVersion}
	for _, v := range []int{c.Players, c.UnitsPerPlayer, c.MapWidth, c.MapHeight, c.ObstaclePct} {
		b = binary.AppendUvarint(b, uint64(max(v, 0)))
	}
	return binary.LittleEndian.AppendUint64(b, c.Seed), nil
}

// UnmarshalBinary decodes the form written by MarshalBinary and validates
// the result. Its errors wrap [ErrInvalidConfig]; it never panics.
func (c *Config) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] != configVersion {
		return fmt.Errorf("%w: encoding does not start with version byte %d", ErrInvalidConfig, configVersion)
	}
	b = b[1:]
	var d Config
	for _, v := range []*int{&d.Players, &d.UnitsPerPlayer, &d.MapWidth, &d.MapHeight, &d.ObstaclePct} {
		x, n := binary.Uvarint(b)
		if n <= 0 || x > 1<<20 {
			return fmt.Errorf("%w: bad encoding", ErrInvalidConfig)
		}
		*v = int(x)
		b = b[n:]
	}
	if len(b) != 8 {
		return fmt.Errorf("%w: encoding of the seed has %d bytes, want 8", ErrInvalidConfig, len(b))
	}
	d.Seed = binary.LittleEndian.Uint64(b)
	if err := d.Validate(); err != nil {
		return err
	}
	*c = d
	return nil
}
