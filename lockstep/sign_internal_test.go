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

// After every Ready, no stream of a member the core may trim holds a
// command at or before the frame trim keeps from, less the window: trim's
// shortcuts (a pass at the same frames skips the streams unchanged since
// the last; a stream whose first frame is newer is passed over) skip only
// streams with nothing to trim. A fifth of the datagrams are lost, so that
// commands arrive by repeats. (A stream's prefix changes behind the
// executed frame only on a fault's paths, relays and admissions, which
// this test does not reach.)
func TestTrimLeavesNothingOld(t *testing.T) {
	const members = 4
	cores := make([]*Core, members)
	for i := range cores {
		c, err := NewCore(Config{Members: members, Self: bucket.Slot(i), Window: 40, MaxDelay: 8, DropTimeout: time.Second}, 0)
		if err != nil {
			t.Fatal(err)
		}
		cores[i] = c
	}
	sent, trimmed := 0, 0
	for f := range 600 {
		now := time.Duration(f) * 10 * time.Millisecond
		for i, c := range cores {
			if (f+i)%3 == 0 {
				if _, err := c.Submit(now, []byte{byte(f)}); err != nil {
					t.Fatal(err)
				}
			}
			for _, d := range c.Ready(now).Datagrams {
				if sent++; sent%5 != 0 {
					cores[d.To].Receive(now, bucket.Slot(i), d.Data)
				}
			}
			for m := range members {
				slot := bucket.Slot(m)
				if slot == c.self || !c.live(slot) {
					continue
				}
				s := c.table.Stream(slot)
				if s.Base() > 0 {
					trimmed++
				}
				if old := seqAfter(s, c.trimKeep-c.window.Ahead); old != s.Base() {
					t.Fatalf("frame %d, core %d: member %d's stream holds %d commands at or before frame %d (base %d)", f, i, m, old-s.Base(), c.trimKeep-c.window.Ahead, s.Base())
				}
			}
		}
	}
	if trimmed == 0 {
		t.Fatal("no stream was ever trimmed")
	}
}
