package lockstep_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// TestPullModeFromAGameLoop drives member 0 in pull mode from a 60 Hz game
// loop for 10 s of synctest time, against member 1 stepping on its own, and
// checks that no call the loop makes waits, that the loop stepped every
// frame, and that both members computed the same states.
func TestPullModeFromAGameLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const frame = 50 * time.Millisecond
		net := newMemNet(2)
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		hashes := map[bucket.Frame]uint64{}
		var events []lockstep.Event
		onEvent := func(e lockstep.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
		cfg := func(self bucket.Slot) lockstep.Config {
			return lockstep.Config{Members: 2, Self: self, Session: 3, Frame: frame}
		}
		game, err := lockstep.NewSession(lockstep.SessionConfig{Core: cfg(0), Transport: net.members[0], OnEvent: onEvent})
		if err != nil {
			t.Fatal(err)
		}
		other, err := lockstep.NewSession(lockstep.SessionConfig{
			Core: cfg(1), Sim: &countingSim{}, Transport: net.members[1], OnEvent: onEvent,
			OnStep: func(f bucket.Frame, _ []bucket.Command, _ lockstep.Simulation, hash uint64) {
				mu.Lock()
				hashes[f] = hash
				mu.Unlock()
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		var runs sync.WaitGroup
		for _, s := range []*lockstep.Session{game, other} {
			runs.Go(func() { _ = s.Run(ctx) })
		}

		world := &countingSim{}
		mine := map[bucket.Frame]uint64{}
		next := bucket.Frame(0)
		calls, waited := 0, 0
		timed := func(f func()) {
			start := time.Now()
			f()
			calls++
			if time.Since(start) != 0 {
				waited++
			}
		}
		tick := time.NewTicker(time.Second / 60)
		for i := range 600 {
			<-tick.C
			var bs []lockstep.Bucket
			timed(func() { bs = game.Ready() })
			for _, b := range bs {
				if b.Frame != next {
					t.Fatalf("bucket of frame %d, want %d", b.Frame, next)
				}
				next++
				world.Step(b.Frame, b.Commands)
				mine[b.Frame] = world.Hash()
				timed(func() { game.Stepped(b.Frame, world.Hash(), nil) })
			}
			if i%10 == 0 {
				timed(func() {
					if err := game.Submit([]byte{byte(i)}); err != nil {
						t.Errorf("Submit: %v", err)
					}
				})
			}
			var a float64
			timed(func() { a = game.Alpha() })
			if a < 0 || a > 1 {
				t.Fatalf("Alpha() = %v, want 0..1", a)
			}
		}
		tick.Stop()
		cancel()
		runs.Wait()

		if waited != 0 {
			t.Errorf("%d of %d calls from the game loop waited", waited, calls)
		}
		if want := bucket.Frame(10*time.Second/frame) - 10; next < want {
			t.Errorf("the loop stepped %d frames in 10 s, want at least %d", next, want)
		}
		if world.steps == 0 || game.Stats().Core.Submitted != 60 {
			t.Errorf("stepped %d frames, submitted %d commands", world.steps, game.Stats().Core.Submitted)
		}
		mu.Lock()
		defer mu.Unlock()
		same := 0
		for f, h := range mine {
			if o, ok := hashes[f]; ok {
				if o != h {
					t.Fatalf("frame %d: pull member %016x, push member %016x", f, h, o)
				}
				same++
			}
		}
		if same < int(next)-10 {
			t.Errorf("only %d of %d frames compared", same, next)
		}
		for _, e := range events {
			if e.Type == lockstep.EventDesync {
				t.Errorf("desync: %+v", e)
			}
		}
	})
}

// TestPullModeCallerFallsBehind checks that a session whose caller never
// takes its buckets ends with ErrBehind once HashHistory frames wait,
// rather than keeping them all.
func TestPullModeCallerFallsBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := newMemNet(1)
		s, err := lockstep.NewSession(lockstep.SessionConfig{
			Core:      lockstep.Config{Members: 1, Frame: 10 * time.Millisecond, HashHistory: 64},
			Transport: net.members[0],
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Run(ctx); !errors.Is(err, lockstep.ErrBehind) {
			t.Fatalf("Run: %v, want ErrBehind", err)
		}
		if n := len(s.Ready()); n > 64 {
			t.Fatalf("%d buckets kept, want at most 64", n)
		}
	})
}
