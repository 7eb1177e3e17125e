package lockstep

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// A Detail about frames we already agreed on must not start a search that
// has nothing to send (it used to make the next datagram fail to encode).
func TestDetailBelowAgreedFrames(t *testing.T) {
	c, err := NewCore(Config{Members: 2, Self: 0, InitialDelay: 60, MaxDelay: 60}, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Duration(0)
	for c.Executed() < 40 {
		now += DefaultFrame
		for _, b := range c.Ready(now).Buckets {
			c.Stepped(b.Frame, uint64(b.Frame), nil)
		}
	}
	r := c.peers[1]
	r.agreed = 30
	d := wire.Detail{Start: 11}
	for f := 11; f < 27; f++ {
		rec := c.recorded(bucket.Frame(f))
		d.Frames = append(d.Frames, wire.FrameHashes{State: rec.state, Input: rec.input})
	}
	c.onDetail(now, r, &d)
	if r.mismatch >= 0 || r.found >= 0 {
		t.Fatalf("matching detail started a search: mismatch %d, found %d", r.mismatch, r.found)
	}
	c.Ready(now + time.Millisecond) // must not panic
	// A detail that does differ starts the search at the difference.
	d.Frames[3].State++
	c.onDetail(now, r, &d)
	if r.found != 14 || r.mismatch < 14 {
		t.Fatalf("found %d, mismatch %d; want 14", r.found, r.mismatch)
	}
	rd := c.Ready(now + 2*time.Millisecond)
	var p wire.Packet
	for _, dg := range rd.Datagrams {
		if err := wire.Parse(dg.Data, &p); err != nil {
			t.Fatal(err)
		}
	}
}
