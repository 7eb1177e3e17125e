package lockstep_test

import (
	"testing"
	"time"
)

// Stats.Stalled counts how long the frame clock waited: from when the
// first incomplete frame's time came until its bucket was complete.
func TestStallTime(t *testing.T) {
	c := newCore(t, memberConfig(2, 0), 0)
	// Member 1's initial seal is frame 3: frames 0..3 need nothing of it.
	for now := time.Duration(0); now <= 300*time.Millisecond; now += frameLen {
		c.Ready(now)
	}
	st := c.Stats()
	if st.Executed != 3 || st.Stalls != 1 || st.Stalled != 0 {
		t.Fatalf("at 300 ms: executed %d, %d stalls, stalled %v; want frame 3, 1 stall (frame 4), none over yet", st.Executed, st.Stalls, st.Stalled)
	}
	// Member 1's seal reaches frame 10 at 330 ms: frame 4 waited from its
	// time, 200 ms, and frames 5 and 6 ran at once with it.
	c.Receive(330*time.Millisecond, 1, craft(t, 0, 10, 0))
	rd := c.Ready(330 * time.Millisecond)
	st = c.Stats()
	if len(rd.Buckets) != 3 || st.Executed != 6 {
		t.Fatalf("after the seal: %d buckets, executed %d; want frames 4..6", len(rd.Buckets), st.Executed)
	}
	if st.Stalls != 1 || st.Stalled != 130*time.Millisecond {
		t.Errorf("%d stalls, stalled %v; want 1 stall of 130ms", st.Stalls, st.Stalled)
	}
	// A frame that is complete in time adds nothing.
	for now := 350 * time.Millisecond; now <= 500*time.Millisecond; now += frameLen {
		c.Ready(now)
	}
	if st2 := c.Stats(); st2.Stalled != st.Stalled || st2.Stalls != st.Stalls {
		t.Errorf("frames in time added stalls: %d stalls, %v", st2.Stalls, st2.Stalled)
	}
}
