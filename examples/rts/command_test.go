package rts

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

func TestCommandRoundTrip(t *testing.T) {
	many := make([]UnitID, MaxCommandUnits)
	for i := range many {
		many[i] = UnitID(i * 64) // gaps of 63 encode in one byte each
	}
	tests := []struct {
		name string
		cmd  Command
		want []byte // nil: only check the round trip
	}{
		{"move one", Command{Kind: Move, Units: []UnitID{5}, Target: Tile{3, 4}}, []byte{1, 1, 5, 3, 4}},
		{"move run", Command{Kind: Move, Units: []UnitID{10, 11, 12}, Target: Tile{0, 0}}, []byte{1, 3, 10, 0, 0, 0, 0}},
		{"attack-move gaps", Command{Kind: AttackMove, Units: []UnitID{0, 2, 200}, Target: Tile{127, 128}}, []byte{2, 3, 0, 1, 197, 1, 127, 128, 1}},
		{"attack", Command{Kind: Attack, Units: []UnitID{1, 3}, TargetUnit: 1599}, []byte{3, 2, 1, 1, 191, 12}},
		{"stop", Command{Kind: Stop, Units: []UnitID{7}}, []byte{4, 1, 7}},
		{"max unit and coords", Command{Kind: Move, Units: []UnitID{MaxUnitID}, Target: Tile{MaxCoord, MaxCoord}}, nil},
		{"max units", Command{Kind: AttackMove, Units: many, Target: Tile{1, 2}}, nil},
		{"attack max target", Command{Kind: Attack, Units: []UnitID{0, MaxUnitID}, TargetUnit: MaxUnitID}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.cmd.AppendBinary([]byte{0xAA})
			if err != nil {
				t.Fatal(err)
			}
			if b[0] != 0xAA {
				t.Fatal("AppendBinary overwrote the prefix")
			}
			b = b[1:]
			if tt.want != nil && !bytes.Equal(b, tt.want) {
				t.Errorf("encoding = %v, want %v", b, tt.want)
			}
			if len(b) > MaxCommandLen {
				t.Errorf("encoding of %d bytes exceeds MaxCommandLen %d", len(b), MaxCommandLen)
			}
			got, err := DecodeCommand(b)
			if err != nil {
				t.Fatalf("DecodeCommand: %v", err)
			}
			if !commandsEqual(got, tt.cmd) {
				t.Errorf("round trip = %+v, want %+v", got, tt.cmd)
			}
		})
	}
}

// commandsEqual compares the fields a command's kind uses.
func commandsEqual(a, b Command) bool {
	if a.Kind != b.Kind || !slices.Equal(a.Units, b.Units) {
		return false
	}
	switch a.Kind {
	case Move, AttackMove:
		return a.Target == b.Target
	case Attack:
		return a.TargetUnit == b.TargetUnit
	}
	return true
}

func TestAppendBinaryRejects(t *testing.T) {
	tests := []struct {
		name string
		cmd  Command
	}{
		{"zero kind", Command{Units: []UnitID{1}}},
		{"unknown kind", Command{Kind: 9, Units: []UnitID{1}}},
		{"no units", Command{Kind: Stop}},
		{"too many units", Command{Kind: Stop, Units: make([]UnitID, MaxCommandUnits+1)}},
		{"duplicate", Command{Kind: Stop, Units: []UnitID{3, 3}}},
		{"decreasing", Command{Kind: Stop, Units: []UnitID{4, 3}}},
		{"unit too large", Command{Kind: Stop, Units: []UnitID{MaxUnitID + 1}}},
		{"negative x", Command{Kind: Move, Units: []UnitID{1}, Target: Tile{-1, 0}}},
		{"y too large", Command{Kind: AttackMove, Units: []UnitID{1}, Target: Tile{0, MaxCoord + 1}}},
		{"target unit too large", Command{Kind: Attack, Units: []UnitID{1}, TargetUnit: MaxUnitID + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.cmd.AppendBinary([]byte{9})
			if !errors.Is(err, ErrInvalidCommand) {
				t.Fatalf("error = %v, want ErrInvalidCommand", err)
			}
			if !bytes.Equal(b, []byte{9}) {
				t.Errorf("buffer changed to %v on error", b)
			}
		})
	}
}

func TestDecodeCommandRejects(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"zero kind", []byte{0, 1, 1}},
		{"unknown kind", []byte{5, 1, 1}},
		{"no count", []byte{4}},
		{"zero count", []byte{4, 0}},
		{"count too large", []byte{4, 0x81, 0x02}}, // 257
		{"missing unit", []byte{4, 2, 1}},
		{"unit too large", []byte{4, 1, 0x80, 0x80, 0x01}}, // 16384
		{"gap overflows", []byte{4, 2, 0xff, 0x7f, 0}},     // 16383 then 16384
		{"non-minimal varint", []byte{4, 1, 0x81, 0x00}},
		{"varint too long", []byte{4, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
		{"missing y", []byte{1, 1, 0, 5}},
		{"x too large", []byte{1, 1, 0, 0x80, 0x02, 0}}, // 256
		{"missing target unit", []byte{3, 1, 0}},
		{"target unit too large", []byte{3, 1, 0, 0x80, 0x80, 0x01}},
		{"trailing byte", []byte{4, 1, 7, 0}},
		{"trailing after move", []byte{1, 1, 5, 3, 4, 4}},
		{"too long", make([]byte, MaxCommandLen+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := DecodeCommand(tt.data)
			if !errors.Is(err, ErrMalformedCommand) {
				t.Fatalf("DecodeCommand(%v) = %+v, %v; want ErrMalformedCommand", tt.data, c, err)
			}
		})
	}
}

// TestDecodeCommandTruncated cuts valid encodings at every byte.
func TestDecodeCommandTruncated(t *testing.T) {
	cmds := []Command{
		{Kind: Move, Units: []UnitID{1, 300, 16000}, Target: Tile{200, 255}},
		{Kind: Attack, Units: []UnitID{129}, TargetUnit: 5000},
		{Kind: Stop, Units: []UnitID{0, 1, 2, 1000}},
	}
	for _, c := range cmds {
		b, err := c.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(b) {
			if _, err := DecodeCommand(b[:n]); !errors.Is(err, ErrMalformedCommand) {
				t.Errorf("%v cut at %d: error %v, want ErrMalformedCommand", c.Kind, n, err)
			}
		}
	}
}

func FuzzDecodeCommand(f *testing.F) {
	seeds := []Command{
		{Kind: Move, Units: []UnitID{5}, Target: Tile{3, 4}},
		{Kind: AttackMove, Units: []UnitID{0, 2, 200, 201}, Target: Tile{127, 128}},
		{Kind: Attack, Units: []UnitID{1, 3}, TargetUnit: 1599},
		{Kind: Stop, Units: []UnitID{MaxUnitID}},
	}
	for _, c := range seeds {
		b, err := c.AppendBinary(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	g := NewGenerator(DefaultConfig(), 3, 7)
	for fr := int64(0); fr < 2000; fr++ {
		for _, b := range g.Next(fr) {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{4, 1, 0x81, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, ErrMalformedCommand) {
				t.Fatalf("error %v does not wrap ErrMalformedCommand", err)
			}
			return
		}
		// The encoding is canonical: re-encoding gives the same bytes.
		re, err := c.AppendBinary(nil)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		if !bytes.Equal(re, b) {
			t.Fatalf("re-encoding %+v = %v, want %v", c, re, b)
		}
		c2, err := DecodeCommand(re)
		if err != nil || !commandsEqual(c, c2) {
			t.Fatalf("second round trip = %+v, %v; want %+v", c2, err, c)
		}
	})
}
