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
