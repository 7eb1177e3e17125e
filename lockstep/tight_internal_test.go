package lockstep

import (
	"testing"
	"time"

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

// Under a tight budget the lead's first level covers the report plus half
// a step, and a report above the lead by less than half a step leaves it
// where it is; one above that raises it at once.
func TestTightBand(t *testing.T) {
	c, err := NewCore(Config{Members: 8, Self: 0, Budget: 3600}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !c.tight() {
		t.Fatal("3,600 B/s for 8 members is not tight")
	}
	ms := time.Millisecond
	for _, step := range []struct{ report, lead time.Duration }{
		{390 * ms, 450 * ms}, // the first level: 390 + 25, rounded up to a frame
		{460 * ms, 450 * ms}, // within half a step above: stays
		{474 * ms, 450 * ms},
		{480 * ms, 500 * ms}, // more than half a step above: up at once
		{430 * ms, 500 * ms}, // lower: only after ShrinkAfter frames of asking
	} {
		c.lead.Update(c.tightBand(step.report), 0)
		if got := c.lead.Duration(); got != step.lead {
			t.Errorf("report %v: lead %v, want %v", step.report, got, step.lead)
		}
	}
}
