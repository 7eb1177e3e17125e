package cmdstream_test

import (
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/cmdstream"
)

// Two members, seen from member 0: it appends its own commands, receives
// member 1's out of order, and plays frame 3 once both seals reach it. The
// bucket lists member 0's commands before member 1's, each in sequence order,
// whatever order they arrived in.
func Example() {
	table := cmdstream.NewTable(2, 2) // both streams start sealed at initial delay - 1
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
