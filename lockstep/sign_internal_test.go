package lockstep

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// Every core hashes every member's commands as they enter its streams, and
// its statements name what it hashed.
func TestChainsHashEveryCommand(t *testing.T) {
	const members = 3
	signers, verifier := Ed25519Keys(members, []byte("test"))
	cores := make([]*Core, members)
	for i := range cores {
		c, err := NewCore(Config{Members: members, Self: bucket.Slot(i), Signer: signers[i], Verifier: verifier}, 0)
		if err != nil {
			t.Fatal(err)
		}
		cores[i] = c
	}
	for f := range 200 {
		now := time.Duration(f) * 10 * time.Millisecond
		for i, c := range cores {
			if f%7 == i {
				if _, err := c.Submit(now, []byte{byte(f)}); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range c.Ready(now).Datagrams {
				cores[d.To].Receive(now, bucket.Slot(i), d.Data)
			}
		}
	}
	for i, c := range cores {
		for m := range c.chains {
			if m == i {
				continue // our own chain grows when we sign
			}
			c.extendChain(0, bucket.Slot(m))
			next := c.table.Stream(bucket.Slot(m)).Next()
			if c.chainCounts[m] != next || next == 0 {
				t.Errorf("core %d hashed %d of member %d's commands, holds %d", i, c.chainCounts[m], m, next)
			}
			if c.chains[m].broken {
				t.Errorf("core %d: member %d's chain broken", i, m)
			}
		}
	}
}
