package netsim

import (
	"testing"
	"time"
)

func TestSerialization(t *testing.T) {
	tests := []struct {
		size int
		bw   int64
		want time.Duration
	}{
		{0, 3600, 0},
		{3600, 3600, time.Second},
		{100, 3600, 27_777_778}, // rounded up
		{1, 1_000_000_000, 1},
		{1, 3_000_000_000, 1},
		{MaxDatagram, 1, MaxDatagram * time.Second},
	}
	for _, tt := range tests {
		if got := serialization(tt.size, tt.bw); got != tt.want {
			t.Errorf("serialization(%d, %d) = %v, want %v", tt.size, tt.bw, got, tt.want)
		}
	}
}

func TestUplinkUnlimited(t *testing.T) {
	u := NewUplink(named(t, "lan"))
	for i := range 1000 {
		now := time.Duration(i) * time.Microsecond
		depart, ok := u.Admit(now, 1200)
		if !ok || depart != now {
			t.Fatalf("Admit(%v) = %v, %t; want now, true", now, depart, ok)
		}
	}
	if s := u.Stats(); s.Sent != 1000 || s.Bytes != 1_200_000 || s.QueueDrops != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestUplinkSerializes(t *testing.T) {
	u := NewUplink(constant(Conditions{Bandwidth: 1000, Queue: time.Second}))
	steps := []struct {
		now, depart time.Duration
		ok          bool
	}{
		{0, 100 * time.Millisecond, true},                        // idle: its own 100 ms
		{0, 200 * time.Millisecond, true},                        // behind the first
		{50 * time.Millisecond, 300 * time.Millisecond, true},    // waits 150 ms
		{time.Second, 1100 * time.Millisecond, true},             // idle again
		{time.Second, 1200 * time.Millisecond, true},             //
		{time.Second, 2000 * time.Millisecond, true},             // 10th in line waits 900 ms
		{time.Second, 2100 * time.Millisecond, true},             // waits exactly the 1 s queue
		{time.Second, 0, false},                                  // would wait 1.1 s: dropped
		{1100 * time.Millisecond, 2200 * time.Millisecond, true}, // room again
	}
	for i, s := range steps {
		n := 1
		if i == 5 {
			n = 8 // the 3rd to 10th datagrams of the second burst
		}
		var depart time.Duration
		var ok bool
		for range n {
			depart, ok = u.Admit(s.now, 100)
		}
		if depart != s.depart || ok != s.ok {
			t.Fatalf("step %d: Admit(%v) = %v, %t; want %v, %t", i, s.now, depart, ok, s.depart, s.ok)
		}
	}
	if got := u.Stats().QueueDrops; got != 1 {
		t.Fatalf("QueueDrops = %d, want 1", got)
	}
	if got := u.Backlog(1100 * time.Millisecond); got != 1100*time.Millisecond {
		t.Fatalf("Backlog = %v, want 1.1s", got)
	}
	if got := u.Backlog(time.Hour); got != 0 {
		t.Fatalf("Backlog after drain = %v, want 0", got)
	}
}

func TestUplinkNoQueue(t *testing.T) {
	u := NewUplink(constant(Conditions{Bandwidth: 1000}))
	if _, ok := u.Admit(0, 10); !ok {
		t.Fatal("idle uplink refused a datagram")
	}
	if _, ok := u.Admit(0, 10); ok {
		t.Fatal("busy uplink without a queue accepted a datagram")
	}
	if _, ok := u.Admit(10*time.Millisecond, 10); !ok {
		t.Fatal("uplink idle again refused a datagram")
	}
}

// TestUplinkCap overloads each capped named profile and checks that no one-second
// window carries more than the cap (plus the one datagram whose serialization
// began before the window), that the long-run rate is the cap, and that the
// queue drops the excess.
func TestUplinkCap(t *testing.T) {
	for _, name := range []string{"broadband", "bad", "modem"} {
		t.Run(name, func(t *testing.T) {
			p := named(t, name)
			c := p.Phases[0].Conditions
			u := NewUplink(p)
			const size = 1200
			const seconds = 20
			interval := serialization(size, c.Bandwidth) / 2 // offer twice the cap
			perSecond := make([]int64, seconds+2)
			var last time.Duration
			for now := time.Duration(0); now < seconds*time.Second; now += interval {
				depart, ok := u.Admit(now, size)
				if !ok {
					continue
				}
				if depart < now || depart-now > c.Queue+serialization(size, c.Bandwidth) {
					t.Fatalf("Admit(%v) departs at %v: waited longer than the queue allows", now, depart)
				}
				if depart < last {
					t.Fatalf("departures out of order: %v after %v", depart, last)
				}
				last = depart
				perSecond[depart/time.Second] += size
			}
			for s, bytes := range perSecond {
				if bytes > c.Bandwidth+size {
					t.Errorf("second %d carried %d bytes, cap %d", s, bytes, c.Bandwidth)
				}
			}
			if got := perSecond[seconds/2]; got < c.Bandwidth-size {
				t.Errorf("second %d carried %d bytes, want about the cap %d", seconds/2, got, c.Bandwidth)
			}
			st := u.Stats()
			if st.QueueDrops == 0 || st.QueueDrops*3 < st.Sent { // about half dropped
				t.Errorf("stats %+v: want about half the datagrams dropped", st)
			}
		})
	}
}

func TestUplinkPhases(t *testing.T) {
	p := Profile{Phases: []Phase{
		{Duration: time.Second, Conditions: Conditions{Bandwidth: 1000, Queue: 10 * time.Second}},
		{Duration: time.Second},
	}}
	u := NewUplink(p)
	for range 15 { // 1.5 s of backlog at 1000 B/s
		u.Admit(0, 100)
	}
	// Uncapped now, but the backlog from the capped phase still drains first.
	if depart, ok := u.Admit(1200*time.Millisecond, 100); !ok || depart != 1500*time.Millisecond {
		t.Fatalf("Admit in the uncapped phase = %v, %t; want 1.5s, true", depart, ok)
	}
	if depart, ok := u.Admit(1600*time.Millisecond, 100); !ok || depart != 1600*time.Millisecond {
		t.Fatalf("Admit after the drain = %v, %t; want 1.6s, true", depart, ok)
	}
	// Capped again after the period.
	if depart, ok := u.Admit(2*time.Second, 100); !ok || depart != 2100*time.Millisecond {
		t.Fatalf("Admit in the second period = %v, %t; want 2.1s, true", depart, ok)
	}
}

func TestUplinkPanics(t *testing.T) {
	mustPanic(t, "NewUplink(invalid)", func() { NewUplink(Profile{}) })
	u := NewUplink(named(t, "modem"))
	mustPanic(t, "Admit(negative time)", func() { u.Admit(-1, 1) })
	mustPanic(t, "Admit(negative size)", func() { u.Admit(0, -1) })
}
