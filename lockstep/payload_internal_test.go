package lockstep

import (
	"bytes"
	"testing"

	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// The copies keepPayload cuts from one block are separate: each ends where
// its capacity does, so appending to one never reaches the next, and a
// full block gives way to a new one without touching the copies made.
func TestKeepPayloadCopiesStaySeparate(t *testing.T) {
	var c Core
	if c.keepPayload(nil) != nil || c.keepPayload([]byte{}) != nil {
		t.Error("an empty payload is kept as something")
	}
	src := []byte("move unit 17 to (1024, 768)")
	var kept [][]byte
	for i := range 2 * payloadSlab / len(src) {
		src[0] = byte(i)
		k := c.keepPayload(src)
		if cap(k) != len(k) || !bytes.Equal(k, src) {
			t.Fatalf("copy %d: %q, capacity %d", i, k, cap(k))
		}
		kept = append(kept, k)
	}
	_ = append(kept[0], "overwrite?"...)
	big := c.keepPayload(make([]byte, payloadSlab))
	for i, k := range kept {
		src[0] = byte(i)
		if !bytes.Equal(k, src) {
			t.Fatalf("copy %d changed to %q", i, k)
		}
	}
	if len(big) != payloadSlab {
		t.Errorf("a large payload kept as %d bytes", len(big))
	}
}

// A command that arrives past a gap is held in a copy of its own, not cut
// from the block the payloads in order share: held early for long, it
// would keep that block alive, and a member sending one early command per
// block could pin thousands of blocks.
func TestEarlyCommandPayloadIsItsOwn(t *testing.T) {
	c, err := NewCore(Config{Members: 2, Self: 0}, 0)
	if err != nil {
		t.Fatal(err)
	}
	send := func(number uint16, next uint16, cmds ...wire.Command) {
		t.Helper()
		p := wire.Packet{Session: c.cfg.Session, From: 1, Number: number, Seal: 3, Next: next, AckSeal: -1, Commands: cmds}
		data, err := p.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Receive(0, 1, data)
	}
	send(0, 3, wire.Command{Frame: 5, Payload: []byte("early")})
	if n := c.table.Stream(1).Buffered(); n != 1 {
		t.Fatalf("%d commands buffered past the gap, want 1", n)
	}
	block := c.slab[:cap(c.slab)]
	for i := range block {
		block[i] = 0xff
	}
	send(1, 2, wire.Command{Frame: 4, Payload: []byte("a")}, wire.Command{Frame: 4, Payload: []byte("b")})
	held := c.table.Stream(1).Since(0)
	if len(held) != 3 {
		t.Fatalf("holds %d commands, want 3: %v", len(held), held)
	}
	if got := string(held[2].Payload); got != "early" {
		t.Errorf("the early command's payload reads %q: it shared the block", got)
	}
}
