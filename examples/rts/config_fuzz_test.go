package rts_test

import (
	"errors"
	"testing"

	"github.com/phalanx-net/phalanx/examples/rts"
)

// FuzzConfigUnmarshalBinary decodes arbitrary bytes as a replay's rts
// configuration: either an error wrapping ErrInvalidConfig that leaves the
// Config as it was, or a valid Config that survives a round trip.
func FuzzConfigUnmarshalBinary(f *testing.F) {
	for _, c := range []rts.Config{rts.DefaultConfig(), {Players: 2, UnitsPerPlayer: 1, MapWidth: 1 << 20, MapHeight: 3, Seed: 1}} {
		b, _ := c.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte{1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		was := rts.DefaultConfig()
		c := was
		if err := c.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, rts.ErrInvalidConfig) || c != was {
				t.Fatalf("refused with %v, config now %+v", err, c)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		b, _ := c.MarshalBinary()
		var back rts.Config
		if err := back.UnmarshalBinary(b); err != nil || back != c {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, c)
		}
	})
}
