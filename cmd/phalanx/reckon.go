package main

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/phalanx-net/phalanx/examples/rts/cursor"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/reckon"
	"github.com/phalanx-net/phalanx/rng"
)

// reckonReport is the "reckon" object of the JSON report: per convergence
// method, how the members' cursors were displayed; with phalanx sim, also
// what the interest filters save (the "interest" object).
type reckonReport struct {
	Methods  map[string]reckon.Metrics
	Interest *interestReport
}

// MarshalJSON writes the methods' objects and "interest" side by side.
func (r reckonReport) MarshalJSON() ([]byte, error) {
	out := make(map[string]any, len(r.Methods)+1)
	for k, v := range r.Methods {
		out[k] = v
	}
	if r.Interest != nil {
		out["interest"] = r.Interest
	}
	return json.Marshal(out)
}

// IsZero reports whether there is nothing to report (omitzero).
func (r reckonReport) IsZero() bool { return r.Methods == nil && r.Interest == nil }

// mergeReckon averages members' cursor measurements: updates per second,
// mean and p99 error are averaged over members, the largest jump is the
// largest any member saw.
func mergeReckon(all []map[reckon.Method]reckon.Metrics) reckonReport {
	return reckonReport{Methods: mergeMethods(all)}
}

// mergeMethods is mergeReckon's per-method figures.
func mergeMethods(all []map[reckon.Method]reckon.Metrics) map[string]reckon.Metrics {
	if len(all) == 0 {
		return nil
	}
	out := map[string]reckon.Metrics{}
	for k := range reckon.Cubic + 1 {
		var agg reckon.Metrics
		for _, m := range all {
			mt := m[k]
			agg.UpdatesPerS += mt.UpdatesPerS / float64(len(all))
			agg.ErrorMean += mt.ErrorMean / float64(len(all))
			agg.ErrorP99 += mt.ErrorP99 / float64(len(all))
			agg.MaxJump = max(agg.MaxJump, mt.MaxJump)
			agg.MaxKink = max(agg.MaxKink, mt.MaxKink)
		}
		round := func(v float64) float64 { return math.Round(v*1000) / 1000 }
		agg.UpdatesPerS, agg.ErrorMean, agg.ErrorP99 = round(agg.UpdatesPerS), round(agg.ErrorMean), round(agg.ErrorP99)
		agg.MaxJump, agg.MaxKink = round(agg.MaxJump), round(agg.MaxKink)
		out[k.String()] = agg
	}
	return out
}

// simulateCursors shares every member's cursor (examples/rts/cursor) over
// the profile's impairment models in virtual time, at the frame rate, for
// the run's length: the dead-reckoning half of phalanx sim. The updates go
// over a virtual network of their own (netsim.Network, the harness's kind;
// entity updates travel outside the lockstep agreement, and the lockstep
// traffic is not modelled here).
func simulateCursors(f *runFlags, profile netsim.Profile) reckonReport {
	return simulateCursorsThen(f, profile, nil)
}

// simulateCursorsThen is simulateCursors calling atEnd, when not nil,
// after the last frame of the run without filters while everything the
// simulation keeps is still live (the memory tests measure it then). It
// runs the cursors twice over the same impairment: every update to every
// member, then with the interest filters (interest.go); the methods'
// figures are those of the first run.
//
// The two runs go one after the other: phalanx sim runs them beside the
// lockstep run, whose window workers they would otherwise crowd off the
// machine's cores (on two cores, a 64-member run took longer with the two
// cursor runs on goroutines of their own).
func simulateCursorsThen(f *runFlags, profile netsim.Profile, atEnd func()) reckonReport {
	all := runCursors(f, profile, nil, atEnd)
	filtered := runCursors(f, profile, &reckon.Interest{}, nil)
	return reckonReport{Methods: mergeMethods(all.metrics), Interest: compareInterest(all, filtered)}
}

// cursorRun is what one run of the cursors measured.
type cursorRun struct {
	metrics  []map[reckon.Method]reckon.Metrics // per member
	visible  []map[reckon.Method]reckon.Metrics // per member, frames on screen only
	bytes    int64                              // entity update bytes sent, wire.Overhead included
	updates  int64                              // entity update datagrams sent
	catchUps int
	onScreen float64 // mean over members of Share.OnScreen
	seconds  float64
}

// runCursors shares every member's cursor with the given interest filters
// (nil: none).
func runCursors(f *runFlags, profile netsim.Profile, interest *reckon.Interest, atEnd func()) cursorRun {
	frame := time.Duration(f.frameMS) * time.Millisecond
	root := rng.SeedFromUint64(f.seed).PCG().Derive("cursors")
	shares := make([]*cursor.Share, f.peers)
	truths := cursor.NewTruths(f.seed, f.peers)
	for i := range f.peers {
		// With filters, only what is on screen is compared (compareInterest).
		shares[i] = cursor.New(cursor.Config{Members: f.peers, Self: i, Seed: f.seed, Interest: interest, OnScreen: true, OnScreenOnly: interest != nil, Truths: truths})
	}
	net := netsim.NewNetwork[cursorUpdate](f.peers, profile, func(from, to int) *rng.PCG {
		return root.Derive(fmt.Sprintf("%d->%d", from, to))
	})
	var now time.Duration
	var run cursorRun
	for fr := 0; fr < f.frames; fr++ {
		now = time.Duration(fr) * frame
		for at, ok := net.Next(); ok && at <= now; at, ok = net.Next() {
			_, u, _ := net.Pop()
			_ = shares[u.to].Receive(now, u.from, u.data)
		}
		for i, s := range shares {
			s.TickTo(now, func(j int, data []byte) {
				size := len(data) + wire.Overhead
				run.bytes += int64(size)
				run.updates++
				net.Send(now, i, j, size, cursorUpdate{from: i, to: j, data: data})
			})
		}
	}
	if atEnd != nil {
		atEnd()
	}
	for _, s := range shares {
		run.metrics = append(run.metrics, s.Metrics(now))
		run.visible = append(run.visible, s.VisibleMetrics())
		run.catchUps += s.CatchUps()
		run.onScreen += s.OnScreen() / float64(len(shares))
	}
	run.seconds = now.Seconds()
	return run
}

// cursorUpdate is an entity update in flight.
type cursorUpdate struct {
	from, to int
	data     []byte
}
