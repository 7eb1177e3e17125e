package lockstep

import (
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
)

// A held seal is cut before its member's first command stamped more than
// heldHorizon frames past our current frame, and is the member's whole
// seal when no command lies beyond that.
func TestCappedSeal(t *testing.T) {
	c, err := NewCore(Config{Members: 3, Self: 0, Budget: 3600}, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := c.table.Stream(1)
	for seq, f := range []bucket.Frame{12, 13, 20, 21} {
		s.Append(bucket.Command{Slot: 1, Seq: uint32(seq), Frame: f})
	}
	s.SetSeal(25)
	c.frame = 10 // commands up to frame 14 may be needed
	if seal, next := c.cappedSeal(1); seal != 19 || next != 2 {
		t.Errorf("at frame 10: held seal %d needing %d commands, want 19 and 2", seal, next)
	}
	c.frame = 16 // up to frame 20: the cut moves to the command at 21
	if seal, next := c.cappedSeal(1); seal != 20 || next != 3 {
		t.Errorf("at frame 16: held seal %d needing %d commands, want 20 and 3", seal, next)
	}
	c.frame = 17 // every command within the horizon
	if seal, next := c.cappedSeal(1); seal != 25 || next != 4 {
		t.Errorf("at frame 17: held seal %d needing %d commands, want 25 and 4", seal, next)
	}
}
