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
// delay rises at once when the network gets worse and comes down only when
// ShrinkAfter measurements agree.
func ExampleDelay() {
	policy := bucket.DelayPolicy{
		Frame:       50 * time.Millisecond,
		Min:         2,
		Max:         10,
		Margin:      10 * time.Millisecond,
		ShrinkAfter: 3,
	}
	delay := bucket.NewDelay(policy, 10)
	wait := 20 * time.Millisecond // the longest a seal waits for a send
	for _, oneWay := range []time.Duration{40, 150, 30, 30, 30, 30} {
		oneWay *= time.Millisecond
		fmt.Printf("one-way %v: target %d, delay %d\n", oneWay, policy.Target(oneWay, wait), delay.Update(oneWay, wait))
	}
	// Output:
	// one-way 40ms: target 3, delay 3
	// one-way 150ms: target 5, delay 5
	// one-way 30ms: target 3, delay 5
	// one-way 30ms: target 3, delay 5
	// one-way 30ms: target 3, delay 3
	// one-way 30ms: target 3, delay 3
}

func ExampleSamples() {
	s := bucket.NewSamples(8)
	for _, d := range []int{30, 32, 31, 90, 33, 29, 31, 30} {
		s.Add(time.Duration(d) * time.Millisecond)
	}
	fmt.Println(s.Percentile(50), s.Percentile(99), s.Min())
	// Output: 31ms 90ms 29ms
}
