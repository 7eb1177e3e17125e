package lockstep

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// Every core's side-by-side chain counts are its chains' counts, as the
// signed streams grow.
func TestChainCountsMatchChains(t *testing.T) {
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
			if c.chainCounts[m] != c.chains[m].count {
				t.Errorf("core %d, member %d: count %d beside, %d in the chain", i, m, c.chainCounts[m], c.chains[m].count)
			}
			if m != i && c.chains[m].count == 0 {
				t.Errorf("core %d hashed none of member %d's commands", i, m)
			}
		}
	}
}
