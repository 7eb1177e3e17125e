package lockstep

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// A second copy is the seal and Next of a datagram that moved them on,
// sent within twice SealRepeat and before a repeat would be: it marks the
// path lossy; a datagram soon after one without news, or later than a
// copy would be, does not. A SealRepeat of half MinInterval or more is
// still told from a repeat.
func TestCopySeen(t *testing.T) {
	ms := time.Millisecond
	type dgram struct {
		seal bucket.Frame
		next uint32
		sent time.Duration
	}
	for _, tc := range []struct {
		name   string
		repeat time.Duration
		sends  []dgram
		lossy  bool
	}{
		{"copy", 0, []dgram{{4, 0, 100 * ms}, {5, 0, 150 * ms}, {5, 0, 155 * ms}}, true},
		{"long repeat", 30 * ms, []dgram{{4, 0, 100 * ms}, {5, 0, 150 * ms}, {5, 0, 180 * ms}}, true},
		{"after no news", 0, []dgram{{5, 0, 100 * ms}, {5, 0, 150 * ms}, {5, 0, 155 * ms}}, false},
		{"too late", 0, []dgram{{4, 0, 100 * ms}, {5, 1, 150 * ms}, {5, 1, 170 * ms}}, false},
		{"repeat", 30 * ms, []dgram{{4, 0, 100 * ms}, {5, 0, 150 * ms}, {5, 0, 200 * ms}}, false},
	} {
		c, err := NewCore(Config{Members: 2, Self: 0, SealRepeat: tc.repeat}, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := c.peers[1]
		for i, d := range tc.sends {
			c.copySeen(d.sent, r, d.seal, d.next, d.sent, i == 0)
			r.newestSeal, r.newestNext = d.seal, d.next
		}
		if r.lossSeen != tc.lossy {
			t.Errorf("%s: lossy %v, want %v", tc.name, r.lossSeen, tc.lossy)
		}
	}
}

// Under a tight budget, where only every few datagrams carry an echo, the
// datagram answering a member's leave carries one: the leaver waits for it
// (leaveHeard).
func TestTightEchoesLeave(t *testing.T) {
	cores := make([]*Core, 5)
	for i := range cores {
		c, err := NewCore(Config{Members: 5, Self: bucket.Slot(i), Budget: 3600}, 0)
		if err != nil {
			t.Fatal(err)
		}
		cores[i] = c
	}
	c := cores[0]
	if !c.tight() {
		t.Fatal("3,600 B/s for 5 members is not tight")
	}
	ms := time.Millisecond
	// Member 1 runs until member 0 holds what want says; the datagrams
	// it sends to member 0 arrive at once.
	now := 10 * ms
	from1 := func(want func() bool) {
		for ; !want(); now += 10 * ms {
			if now > 10*time.Second {
				t.Fatal("member 0 did not hear member 1")
			}
			for _, d := range cores[1].Ready(now).Datagrams {
				if d.To == 0 {
					c.Receive(now, 1, d.Data)
				}
			}
		}
	}
	r := c.peers[1]
	from1(func() bool { return r.heard })
	c.Ready(now)
	if r.number < tightEchoFirst || c.echoDue(r.number) {
		r.number = tightEchoFirst + 1 // a datagram without an echo but for the leave
	}
	if _, err := cores[1].Leave(now); err != nil {
		t.Fatal(err)
	}
	from1(func() bool { return c.leaveAt[1] != bucket.NoFrame })
	var pkt wire.Packet
	for end := now + 2*time.Second; now < end; now += 10 * ms {
		for _, d := range c.Ready(now).Datagrams {
			if d.To != 1 {
				continue
			}
			if err := wire.Parse(d.Data, &pkt); err != nil {
				t.Fatal(err)
			}
			if !pkt.HasEcho {
				t.Errorf("datagram %d after member 1's leave carries no echo", pkt.Number)
			}
			return
		}
	}
	t.Fatal("no datagram to member 1 after its leave")
}
