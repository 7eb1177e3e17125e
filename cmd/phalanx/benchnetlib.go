package main

import (
	"math"
	"slices"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
)

// netlibRun is one transport's delivery delays in the netlib article's
// scenario.
type netlibRun struct {
	Transport string  `json:"transport"`
	Policy    string  `json:"policy"`
	Samples   int     `json:"samples"`     // commands × receivers
	Within100 float64 `json:"within_100"`  // share delivered within 100 ms
	Within200 float64 `json:"within_200"`  // … within 200 ms
	Within300 float64 `json:"within_300"`  // … within 300 ms
	Within340 float64 `json:"within_340"`  // … within 340 ms
	DelayMS   pctls   `json:"delay_ms"`    // first send → first arrival
	Latency   pctls   `json:"latency_ms"`  // submit → execution on the last member
	Undeliver int     `json:"undelivered"` // sent more than 5 s before the end and never arrived
	Identical bool    `json:"identical"`
	StallRate float64 `json:"stall_rate"`
	Error     string  `json:"error,omitempty"`

	delays []time.Duration // sorted
}

// netlibProfile is the scenario of the netlib article's table: 100 ms each
// way (RTT 200 ms), no jitter, 2% random loss, no bandwidth limit.
func netlibProfile() netsim.Profile {
	return netsim.Profile{Name: "netlib-rtt200", Phases: []netsim.Phase{{
		Duration:   time.Minute,
		Conditions: netsim.Conditions{Latency: 100 * time.Millisecond, Loss: 20_000},
	}}}
}

// measure runs the netlib scenario over one transport: every member issues
// a 12-byte command every frame, and every command's delivery delay to each
// other member is measured from the first time a datagram carrying it was
// sent (to that member) to the first time one reached that member's core —
// over the stream transport, when the stream handed it on in order. That is
// the article's "time it would take for messages to arrive at their
// destination", redundant copies and retransmissions included.
func (n *netlibRun) measure(peers, frames int, seed uint64) {
	t := newDeliveryTracker(peers)
	f := &runFlags{peers: peers, frames: frames, seed: seed, sim: "null", frameMS: 50, budget: -1, policy: n.Policy, transport: n.Transport}
	profile := netlibProfile()
	res, err := locksteptest.Run(locksteptest.Config{
		Members: peers,
		Frames:  frames,
		Seed:    seed,
		Profile: profile,
		Core:    f.coreConfig(profile),
		NewSim:  func(bucket.Slot) lockstep.Simulation { return &locksteptest.NullSim{} },
		Commands: func(slot bucket.Slot, frame bucket.Frame) [][]byte {
			return [][]byte{{byte(slot), byte(frame), byte(frame >> 8), byte(frame >> 16), 1, 2, 3, 4, 5, 6, 7, 8}}
		},
		Tamper: func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
			t.observe(sideSent, now, from, to, data)
			return data
		},
		OnReceive: func(now time.Duration, from, to bucket.Slot, data []byte) {
			t.observe(sideArrived, now, from, to, data)
		},
		Transport:   n.Transport,
		KeepSamples: true, // the latencies' far tail
	})
	if err != nil {
		n.Error = err.Error()
		if res == nil {
			return
		}
	}
	n.Identical = res.Identical
	var stalls int64
	for _, m := range res.Members {
		stalls += m.Stats.Stalls
	}
	n.StallRate = math.Round(float64(stalls)/float64(peers*frames)*1e5) / 1e5
	lat := res.Latencies
	n.Latency = percentiles(lat)
	for k, sent := range t.first[sideSent] {
		if at, ok := t.first[sideArrived][k]; ok {
			n.delays = append(n.delays, at-sent)
		} else if sent < res.Duration-5*time.Second {
			n.Undeliver++
		}
	}
	slices.Sort(n.delays)
	n.Samples = len(n.delays)
	n.DelayMS = percentiles(n.delays)
	within := func(limit time.Duration) float64 {
		i, _ := slices.BinarySearch(n.delays, limit+1)
		return float64(i) / float64(max(1, len(n.delays)))
	}
	n.Within100 = within(100 * time.Millisecond)
	n.Within200 = within(200 * time.Millisecond)
	n.Within300 = within(300 * time.Millisecond)
	n.Within340 = within(340 * time.Millisecond)
}

// deliveryTracker notes when each command first left its sender towards
// each receiver and when it first reached that receiver's core, by parsing
// the datagrams (lockstep/wire).
type deliveryTracker struct {
	pkt   wire.Packet
	ref   [2][][]uint32                    // [side][from][to]: newest full sequence number seen, for unwrapping
	first [2]map[deliveryKey]time.Duration // [side]: first time seen
}

// Sides of a deliveryTracker.
const (
	sideSent    = 0
	sideArrived = 1
)

type deliveryKey struct {
	from, to bucket.Slot
	seq      uint32
}

func newDeliveryTracker(members int) *deliveryTracker {
	t := &deliveryTracker{}
	for side := range 2 {
		t.first[side] = map[deliveryKey]time.Duration{}
		t.ref[side] = make([][]uint32, members)
		for i := range members {
			t.ref[side][i] = make([]uint32, members)
		}
	}
	return t
}

// observe notes the commands of a datagram from from to to seen at now on
// one side (sent or arrived).
func (t *deliveryTracker) observe(side int, now time.Duration, from, to bucket.Slot, data []byte) {
	if wire.Parse(data, &t.pkt) != nil || len(t.pkt.Commands) == 0 {
		return
	}
	ref := &t.ref[side][from][to]
	next := wire.Unwrap16(*ref, t.pkt.Next)
	*ref = max(*ref, next)
	first := next - uint32(len(t.pkt.Commands))
	for i := range t.pkt.Commands {
		k := deliveryKey{from, to, first + uint32(i)}
		if _, ok := t.first[side][k]; !ok {
			t.first[side][k] = now
		}
	}
}
