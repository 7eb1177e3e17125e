package delay_test

import (
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/internal/delay"
)

// The first measurement replaces the initial guess at once; afterwards the
// lead rises at once when the network gets worse and comes down only when
// ShrinkAfter measurements agree, to the largest of them. A command submitted at frame-clock
// position t runs on frame StampFrame(t, lead, frame).
func ExampleLead() {
	const frame = 50 * time.Millisecond
	policy := delay.LeadPolicy{
		Min:         0,
		Max:         59 * frame,
		Margin:      2 * time.Millisecond,
		ShrinkAfter: 3,
	}
	lead := delay.NewLead(policy, 20*time.Millisecond)              // a guess before anything is measured
	wait := time.Millisecond                                        // the longest a seal change waits for its send
	for _, late := range []time.Duration{40, 150, 30, 30, 30, 30} { // measured lateness, ms
		late *= time.Millisecond
		l := lead.Update(late, wait)
		fmt.Printf("late %v: target %v, lead %v, a command at 1.010s runs on frame %d\n",
			late, policy.Target(late, wait), l, delay.StampFrame(1010*time.Millisecond, l, frame))
	}
	// Output:
	// late 40ms: target 43ms, lead 43ms, a command at 1.010s runs on frame 22
	// late 150ms: target 153ms, lead 153ms, a command at 1.010s runs on frame 24
	// late 30ms: target 33ms, lead 153ms, a command at 1.010s runs on frame 24
	// late 30ms: target 33ms, lead 153ms, a command at 1.010s runs on frame 24
	// late 30ms: target 33ms, lead 33ms, a command at 1.010s runs on frame 21
	// late 30ms: target 33ms, lead 33ms, a command at 1.010s runs on frame 21
}

func ExampleSamples() {
	s := delay.NewSamples(8)
	for _, d := range []int{30, 32, 31, 90, 33, 29, 31, 30} {
		s.Add(time.Duration(d) * time.Millisecond)
	}
	fmt.Println(s.Percentile(50), s.Percentile(99), s.Min())
	// Output: 31ms 90ms 29ms
}
