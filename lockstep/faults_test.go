package lockstep_test

import (
	"errors"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// TestDropWhoseLastDatagramReachedOneSurvivor: member 2's last datagrams
// reach member 0 only, so member 0 holds its commands and seal further than
// member 1 does. The drop must settle on a frame both survivors can
// complete, and both must play on past it.
func TestDropWhoseLastDatagramReachedOneSurvivor(t *testing.T) {
	const (
		onlyTo0 = 3 * time.Second
		dead    = 3*time.Second + 400*time.Millisecond
	)
	n := newTestNet(t, 3, 5, nil)
	n.block = func(now time.Duration, from, to bucket.Slot) bool {
		if from == 2 || to == 2 {
			return now >= dead || (from == 2 && to == 1 && now >= onlyTo0)
		}
		return false
	}
	n.planRandom([]bucket.Slot{0, 1, 2}, 0, dead, 60*time.Millisecond)
	limit := dead + lockstep.DefaultDropTimeout + 2*time.Second
	n.runUntil(limit)
	for i := range 2 {
		if st := n.cores[i].Stats(); st.Frame-st.Executed > 2 {
			t.Errorf("member %d stuck: clock frame %d, executed %d, events %v", i, st.Frame, st.Executed, n.events[i])
		}
	}
	if !errors.Is(n.cores[2].Err(), lockstep.ErrStopped) {
		t.Errorf("member 2, cut off from the others, did not stop: %v", n.cores[2].Err())
	}
	var drops [2]lockstep.Event
	for i := range 2 {
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventDrop && e.Member == 2 {
				drops[i] = e
			}
		}
		if drops[i].Type != lockstep.EventDrop {
			t.Fatalf("member %d did not drop member 2: %v", i, n.events[i])
		}
	}
	if drops[0].LastFrame != drops[1].LastFrame {
		t.Fatalf("drops differ: %v, %v", drops[0], drops[1])
	}
	for i := range 2 {
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventViolation {
				t.Errorf("member %d blamed an honest member: %v", i, e)
			}
		}
	}
}

// TestDropWhoseOnlyHolderFails: member 4's last datagrams reach member 0
// only, and member 0 fails right after it reported what it held. No live
// member can complete the frames member 0 reported, so the drop must
// settle on what the live members hold, and they play on.
func TestDropWhoseOnlyHolderFails(t *testing.T) {
	const (
		onlyTo0 = 3 * time.Second
		dead4   = 3*time.Second + 400*time.Millisecond
	)
	dead0 := dead4 + lockstep.DefaultDropTimeout + time.Second
	n := newTestNet(t, 5, 7, nil)
	n.block = func(now time.Duration, from, to bucket.Slot) bool {
		switch {
		case from == 4 || to == 4:
			return now >= dead4 || (from == 4 && to != 0 && now >= onlyTo0)
		case from == 0 || to == 0:
			return now >= dead0
		}
		return false
	}
	// Member 0's relays of member 4 never arrive: it reports, then fails.
	var pkt wire.Packet
	n.rewrite = func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
		if from != 0 || wire.Parse(data, &pkt) != nil || !pkt.HasRelay {
			return data
		}
		pkt.HasRelay = false
		out, err := pkt.Append(nil)
		if err != nil {
			panic(err)
		}
		return out
	}
	n.planRandom([]bucket.Slot{0, 1, 2, 3, 4}, 0, dead4, 60*time.Millisecond)
	limit := dead0 + lockstep.DefaultDropTimeout + 2*time.Second
	n.runUntil(limit)
	if !errors.Is(n.cores[4].Err(), lockstep.ErrStopped) {
		t.Errorf("member 4, cut off from the others, did not stop: %v", n.cores[4].Err())
	}
	for i := 1; i < 4; i++ {
		if st := n.cores[i].Stats(); st.Frame-st.Executed > 2 {
			t.Errorf("member %d stuck: clock frame %d, executed %d, events %v", i, st.Frame, st.Executed, n.events[i])
		}
	}
}
