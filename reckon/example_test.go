package reckon_test

import (
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/reckon"
)

// A receiver shows an entity moving right at 1 unit/s. At 1 s an update
// arrives, sent at 0.95 s: the entity turned there and now moves up. Each
// method takes the display from the old track to the new one in its own
// way; from 1.2 s on all show the new prediction.
func ExampleSmoother() {
	for _, m := range []reckon.Method{reckon.Snap, reckon.Linear, reckon.Quadratic, reckon.Cubic} {
		s := reckon.NewSmoother[reckon.Vec2](reckon.Smoothing{Method: m, Converge: 200 * time.Millisecond})
		s.Correct(0, reckon.State2{Pos: reckon.Vec2{X: 0, Y: 0}, Vel: reckon.Vec2{X: 1, Y: 0}})
		turned := reckon.State2{Pos: reckon.Vec2{X: 0.95, Y: 0}, Vel: reckon.Vec2{X: 0, Y: 1}, At: 950 * time.Millisecond}
		s.Correct(time.Second, turned)
		fmt.Printf("%-9s", m)
		for t := time.Second; t <= 1250*time.Millisecond; t += 50 * time.Millisecond {
			p := s.At(t).Pos
			fmt.Printf(" (%.3f, %.3f)", p.X, p.Y)
		}
		fmt.Println()
	}
	// Output:
	// snap      (0.950, 0.050) (0.950, 0.100) (0.950, 0.150) (0.950, 0.200) (0.950, 0.250) (0.950, 0.300)
	// linear    (1.000, 0.000) (0.988, 0.062) (0.975, 0.125) (0.962, 0.188) (0.950, 0.250) (0.950, 0.300)
	// quadratic (1.000, 0.000) (1.034, 0.016) (1.038, 0.062) (1.009, 0.141) (0.950, 0.250) (0.950, 0.300)
	// cubic     (1.000, 0.000) (1.020, 0.030) (1.000, 0.100) (0.967, 0.183) (0.950, 0.250) (0.950, 0.300)
}

// An owner moving in a straight line sends its first state, repeats it
// after 100 and 300 ms, and then only a heartbeat every second.
func ExampleOwner() {
	o := reckon.NewOwner[reckon.Vec2](reckon.OwnerConfig{Entity: 1, Threshold: 0.1})
	for i := 0; i <= 3*60; i++ { // 3 s at 60 frames per second
		now := time.Duration(i) * time.Second / 60
		truth := reckon.State2{Pos: reckon.Vec2{X: 2 * now.Seconds()}, Vel: reckon.Vec2{X: 2}, At: now}
		if u, ok := o.Observe(truth); ok {
			fmt.Printf("send seq %d at %v\n", u.Seq, now)
		}
	}
	// Output:
	// send seq 0 at 0s
	// send seq 1 at 100ms
	// send seq 2 at 300ms
	// send seq 3 at 1.3s
	// send seq 4 at 2.3s
}

// Updates that arrive late are dropped: a receiver keeps only the newest.
func ExampleReceiver() {
	r := reckon.NewReceiver[reckon.Vec2](reckon.Smoothing{Method: reckon.Cubic, Converge: 100 * time.Millisecond})
	for i, seq := range []uint16{65535, 1, 0, 2} {
		now := time.Duration(i) * 50 * time.Millisecond
		used := r.Receive(now, reckon.Update[reckon.Vec2]{Seq: seq, State: reckon.State2{At: now}})
		fmt.Printf("seq %d used: %v\n", seq, used)
	}
	// Output:
	// seq 65535 used: true
	// seq 1 used: true
	// seq 0 used: false
	// seq 2 used: true
}

func ExampleAppendUpdate() {
	u := reckon.Update[reckon.Vec2]{Entity: 7, Seq: 0x0102, State: reckon.State2{
		Pos: reckon.Vec2{X: 12.5, Y: -3.25},
		Vel: reckon.Vec2{X: 4, Y: 0.5},
		At:  1234500 * time.Microsecond,
	}}
	b := reckon.AppendUpdate(nil, u)
	fmt.Printf("%d bytes: % x\n", len(b), b)
	back, err := reckon.ParseUpdate[reckon.Vec2](b)
	fmt.Printf("%+v %v\n", back, err)
	_, err = reckon.ParseUpdate[reckon.Vec3](b)
	fmt.Println(err)
	// Output:
	// 24 bytes: 02 02 07 02 01 f2 c0 01 00 00 48 41 00 00 50 c0 00 00 80 40 00 00 00 3f
	// {Entity:7 Seq:258 State:{Pos:{X:12.5 Y:-3.25} Vel:{X:4 Y:0.5} Acc:{X:0 Y:0} At:1.2345s}} <nil>
	// reckon: update has other dimensions: 2D, want 3D
}

// RunScenario compares the methods over a simulated network; here a perfect
// one.
func ExampleRunScenario() {
	res := reckon.RunScenario(reckon.ScenarioConfig{
		Duration: 30 * time.Second,
		Seed:     1,
		Owner:    reckon.OwnerConfig{Threshold: 0.25},
		Converge: 200 * time.Millisecond,
	})
	fmt.Println("snap jumps further than cubic:", res[reckon.Snap].MaxJump > res[reckon.Cubic].MaxJump)
	fmt.Println("cubic turns most gently:", res[reckon.Cubic].MaxKink < res[reckon.Linear].MaxKink)
	// Output:
	// snap jumps further than cubic: true
	// cubic turns most gently: true
}
