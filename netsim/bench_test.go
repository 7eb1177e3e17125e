package netsim

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/rng"
)

func BenchmarkLinkSend(b *testing.B) {
	for _, name := range []string{"lan", "bad"} {
		b.Run(name, func(b *testing.B) {
			l := NewLink(named(b, name), rng.New(1, 1))
			b.ReportAllocs()
			var now time.Duration
			for b.Loop() {
				now += time.Millisecond
				l.Send(now, 100)
			}
		})
	}
	b.Run("phased", func(b *testing.B) {
		var p Profile
		for i := range 8 {
			p.Phases = append(p.Phases, Phase{Duration: time.Second, Conditions: Conditions{Latency: time.Duration(i) * time.Millisecond, Loss: 10_000}})
		}
		l := NewLink(p, rng.New(1, 1))
		b.ReportAllocs()
		var now time.Duration
		for b.Loop() {
			now += time.Millisecond
			l.Send(now, 100)
		}
	})
}

func BenchmarkUplinkAdmit(b *testing.B) {
	u := NewUplink(named(b, "bad"))
	b.ReportAllocs()
	var now time.Duration
	for b.Loop() {
		now += time.Millisecond
		u.Admit(now, 100)
	}
}

// BenchmarkTimedQueue pops and pushes a queue that holds 16,384 datagrams,
// each pushed 15 to 35 ms after the time of the one popped: a virtual
// network of 64 members in flight.
func BenchmarkTimedQueue(b *testing.B) {
	r := rng.New(1, 1)
	var q timed[int]
	for i := range 1 << 14 {
		q.push(time.Duration(r.Uint32N(20_000_000)), i)
	}
	b.ReportAllocs()
	for b.Loop() {
		at, m := q.pop()
		q.push(at+15*time.Millisecond+time.Duration(r.Uint32N(20_000_000)), m)
	}
}
