package bucket_test

import (
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// Two members, seen from member 0: it appends its own commands, receives
// member 1's out of order, and plays frame 3 once both seals reach it. The
// bucket lists member 0's commands before member 1's, each in sequence order,
// whatever order they arrived in.
func Example() {
	table := bucket.NewTable(2, 2) // both streams start sealed at initial delay - 1
	own, peer := table.Stream(0), table.Stream(1)

	own.Append(bucket.Command{Slot: 0, Seq: 0, Frame: 3, Payload: []byte("move")})
	own.Append(bucket.Command{Slot: 0, Seq: 1, Frame: 3, Payload: []byte("attack")})
	own.SetSeal(3)

	// Member 1's second command overtakes its first.
	if _, err := peer.Insert(bucket.Command{Slot: 1, Seq: 1, Frame: 3, Payload: []byte("build")}); err != nil {
		fmt.Println(err) // a protocol violation of member 1
	}
	peer.Promise(3, 2) // sealed 3 once seq 0 and 1 are held
	fmt.Println("ready:", table.Ready(3), "waiting for", table.Waiting(nil, 3))

	if _, err := peer.Insert(bucket.Command{Slot: 1, Seq: 0, Frame: 3, Payload: []byte("stop")}); err != nil {
		fmt.Println(err)
	}
	fmt.Println("ready:", table.Ready(3))
	for _, c := range table.AppendBucket(nil, 3) {
		fmt.Printf("slot %d seq %d %s\n", c.Slot, c.Seq, c.Payload)
	}
	// Output:
	// ready: false waiting for [1]
	// ready: true
	// slot 0 seq 0 move
	// slot 0 seq 1 attack
	// slot 1 seq 0 stop
	// slot 1 seq 1 build
}

// The first measurement replaces the initial guess at once; afterwards the
// lead rises at once when the network gets worse and comes down only when
// ShrinkAfter measurements agree, to the largest of them. A command submitted at frame-clock
// position t runs on frame StampFrame(t, lead, frame).
func ExampleLead() {
	const frame = 50 * time.Millisecond
	policy := bucket.LeadPolicy{
		Min:         0,
		Max:         59 * frame,
		Margin:      2 * time.Millisecond,
		ShrinkAfter: 3,
	}
	lead := bucket.NewLead(policy, 20*time.Millisecond)             // a guess before anything is measured
	wait := time.Millisecond                                        // the longest a seal change waits for its send
	for _, late := range []time.Duration{40, 150, 30, 30, 30, 30} { // measured lateness, ms
		late *= time.Millisecond
		l := lead.Update(late, wait)
		fmt.Printf("late %v: target %v, lead %v, a command at 1.010s runs on frame %d\n",
			late, policy.Target(late, wait), l, bucket.StampFrame(1010*time.Millisecond, l, frame))
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
	s := bucket.NewSamples(8)
	for _, d := range []int{30, 32, 31, 90, 33, 29, 31, 30} {
		s.Add(time.Duration(d) * time.Millisecond)
	}
	fmt.Println(s.Percentile(50), s.Percentile(99), s.Min())
	// Output: 31ms 90ms 29ms
}
