package lockstep_test

import (
	"context"
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// score is a tiny simulation: it adds up the commands' first bytes.
type score struct{ total int }

func (s *score) Step(_ bucket.Frame, cmds []bucket.Command) {
	for _, c := range cmds {
		s.total += int(c.Payload[0])
	}
}

func (s *score) Hash() uint64 { return uint64(s.total) }

// Two cores driven by hand: the caller owns the clock and the network. Each
// millisecond it hands every datagram of a Ready to the other core, and
// steps and reports the buckets with StepBucket.
func ExampleCore() {
	var cores [2]*lockstep.Core
	var sims [2]score
	for i := range cores {
		c, err := lockstep.NewCore(lockstep.Config{Members: 2, Self: bucket.Slot(i), Session: 1, InitialDelay: 2, Policy: lockstep.Fixed{Frames: 2}}, 0)
		if err != nil {
			panic(err)
		}
		cores[i] = c
	}
	f, _ := cores[0].Submit(0, []byte{7})
	fmt.Println("member 0 submitted a command for frame", f)
	var sections []lockstep.Section
	for now := time.Duration(0); now <= 200*time.Millisecond; now += time.Millisecond {
		for i, c := range cores {
			rd := c.Ready(now)
			for _, d := range rd.Datagrams {
				cores[d.To].Receive(now, bucket.Slot(i), d.Data)
			}
			for _, b := range rd.Buckets {
				_, sections = lockstep.StepBucket(c, &sims[i], b, sections)
				if len(b.Commands) > 0 {
					fmt.Printf("member %d stepped frame %d: %d command(s)\n", i, b.Frame, len(b.Commands))
				}
			}
		}
	}
	fmt.Println("scores:", sims[0].total, sims[1].total)
	// Output:
	// member 0 submitted a command for frame 2
	// member 0 stepped frame 2: 1 command(s)
	// member 1 stepped frame 2: 1 command(s)
	// scores: 7 7
}

// A session runs a core in one goroutine against the real clock and a
// transport; here one member alone, over a transport that carries nothing.
func ExampleSession() {
	sim := &score{}
	stepped := make(chan struct{}) // closed once the command is stepped
	s, err := lockstep.NewSession(lockstep.SessionConfig{
		Core:      lockstep.Config{Members: 1, Frame: 10 * time.Millisecond, Policy: lockstep.Fixed{Frames: 1}},
		Sim:       sim,
		Transport: newMemNet(1).members[0],
		OnStep: func(_ bucket.Frame, commands []bucket.Command, _ lockstep.Simulation, _ uint64) {
			if len(commands) > 0 {
				close(stepped)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if err := s.Submit([]byte{5}); err != nil { // queued; Run stamps and steps it
		panic(err)
	}
	<-stepped
	cancel()
	<-done
	fmt.Println("score:", sim.total)
	// Output:
	// score: 5
}
