package lockstep

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// A member first heard before frame 0 and silent since is suspected a
// DropTimeout after it was last heard, as the timeout walk reads it, not a
// DropTimeout after frame 0: Ready's skip of the walk does not hide it.
func TestSilentBeforeStart(t *testing.T) {
	const start = 20 * time.Second
	cores := make([]*Core, 3)
	for i := range cores {
		c, err := NewCore(Config{Members: 3, Self: bucket.Slot(i), Start: start}, 0)
		if err != nil {
			t.Fatal(err)
		}
		cores[i] = c
	}
	// Each of from's datagrams to a member in to is delivered at once.
	exchange := func(now time.Duration, from int, to ...int) {
		for _, d := range cores[from].Ready(now).Datagrams {
			for _, k := range to {
				if int(d.To) == k {
					cores[k].Receive(now, bucket.Slot(from), d.Data)
				}
			}
		}
	}
	c := cores[0]
	c.Ready(0) // the walk: nobody heard, nothing runs out before the start
	heard := time.Second
	exchange(heard, 1, 0) // member 1's only datagrams
	for now := heard; now < heard+c.cfg.DropTimeout+time.Second; now += 50 * time.Millisecond {
		exchange(now, 0, 2)
		exchange(now, 2, 0)
	}
	if !c.peers[1].heard {
		t.Fatal("member 1 not heard")
	}
	if c.live(1) {
		t.Errorf("member 1 silent for %v before the start is still listened to", c.cfg.DropTimeout+time.Second)
	}
	if !c.live(2) {
		t.Error("member 2, talking, is suspected")
	}
}
