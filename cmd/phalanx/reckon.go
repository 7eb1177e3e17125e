package main

import (
	"container/heap"
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
// method, how the members' cursors were displayed.
type reckonReport map[string]reckon.Metrics

// mergeReckon averages members' cursor measurements: updates per second,
// mean and p99 error are averaged over members, the largest jump is the
// largest any member saw.
func mergeReckon(all []map[reckon.Method]reckon.Metrics) reckonReport {
	if len(all) == 0 {
		return nil
	}
	out := reckonReport{}
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
// through a netsim uplink and link of their own (entity updates travel
// outside the lockstep agreement; the lockstep traffic is not modelled
// here).
func simulateCursors(f *runFlags, profile netsim.Profile) reckonReport {
	return simulateCursorsThen(f, profile, nil)
}

// simulateCursorsThen is simulateCursors calling atEnd, when not nil,
// after the last frame while everything the simulation keeps is still
// live (the memory tests measure it then).
func simulateCursorsThen(f *runFlags, profile netsim.Profile, atEnd func()) reckonReport {
	frame := time.Duration(f.frameMS) * time.Millisecond
	root := rng.SeedFromUint64(f.seed).PCG().Derive("cursors")
	shares := make([]*cursor.Share, f.peers)
	uplinks := make([]*netsim.Uplink, f.peers)
	links := make([][]*netsim.Link, f.peers)
	for i := range f.peers {
		shares[i] = cursor.New(cursor.Config{Members: f.peers, Self: i, Seed: f.seed})
		uplinks[i] = netsim.NewUplink(profile)
		links[i] = make([]*netsim.Link, f.peers)
		for j := range f.peers {
			if j != i {
				links[i][j] = netsim.NewLink(profile, root.Derive(fmt.Sprintf("%d->%d", i, j)))
			}
		}
	}
	var q updateQueue
	var now time.Duration
	seq := 0 // orders updates that arrive at the same time
	for fr := 0; fr < f.frames; fr++ {
		now = time.Duration(fr) * frame
		for q.Len() > 0 && q[0].at <= now {
			u := heap.Pop(&q).(queuedUpdate)
			_ = shares[u.to].Receive(now, u.from, u.data)
		}
		for i, s := range shares {
			s.Tick(now, func(data []byte) {
				size := len(data) + wire.Overhead
				for j := range f.peers {
					if j == i {
						continue
					}
					depart, ok := uplinks[i].Admit(now, size)
					if !ok {
						continue
					}
					d := links[i][j].Send(depart, size)
					for _, at := range d.Arrival[:d.Copies] {
						seq++
						heap.Push(&q, queuedUpdate{at: at, seq: seq, from: i, to: j, data: data})
					}
				}
			})
		}
	}
	if atEnd != nil {
		atEnd()
	}
	var all []map[reckon.Method]reckon.Metrics
	for _, s := range shares {
		all = append(all, s.Metrics(now))
	}
	return mergeReckon(all)
}

type queuedUpdate struct {
	at       time.Duration
	seq      int
	from, to int
	data     []byte
}

type updateQueue []queuedUpdate

func (q updateQueue) Len() int { return len(q) }
func (q updateQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q updateQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *updateQueue) Push(x any)   { *q = append(*q, x.(queuedUpdate)) }
func (q *updateQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
