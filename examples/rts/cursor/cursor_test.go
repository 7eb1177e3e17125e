package cursor

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/reckon"
)

// Three members over a perfect network with 30 ms of delay: every display
// follows its cursor closely, and cubic moves more smoothly than snap.
func TestShareOverADelayedNetwork(t *testing.T) {
	const members = 3
	shares := make([]*Share, members)
	for i := range shares {
		shares[i] = New(Config{Members: members, Self: i, Seed: 7})
	}
	type inflight struct {
		at   time.Duration
		from int
		data []byte
	}
	var queue []inflight
	frame := 50 * time.Millisecond
	var now time.Duration
	for f := 0; f < 1200; f++ {
		now = time.Duration(f) * frame
		rest := queue[:0]
		for _, d := range queue {
			if d.at <= now {
				for i, s := range shares {
					if i != d.from {
						if err := s.Receive(now, d.from, d.data); err != nil {
							t.Fatal(err)
						}
					}
				}
			} else {
				rest = append(rest, d)
			}
		}
		queue = rest
		for i, s := range shares {
			s.Tick(now, func(u []byte) { queue = append(queue, inflight{now + 30*time.Millisecond, i, u}) })
		}
	}
	m := shares[0].Metrics(now)
	if m[reckon.Cubic].UpdatesPerS <= 0 || m[reckon.Cubic].UpdatesPerS > 20 {
		t.Fatalf("updates per second %v", m[reckon.Cubic].UpdatesPerS)
	}
	if m[reckon.Cubic].ErrorP99 > 2 {
		t.Fatalf("cubic p99 error %v", m[reckon.Cubic].ErrorP99)
	}
	if m[reckon.Cubic].MaxJump >= m[reckon.Snap].MaxJump {
		t.Fatalf("cubic jumps %v, snap %v", m[reckon.Cubic].MaxJump, m[reckon.Snap].MaxJump)
	}
	if err := shares[0].Receive(now, 1, []byte{0x02}); err == nil {
		t.Fatal("a malformed update was accepted")
	}
}
