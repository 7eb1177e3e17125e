package lockstep_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// memTransport is an in-process Transport: a channel per member.
type memTransport struct {
	self  bucket.Slot
	net   *memNet
	in    chan lockstep.Inbound
	close sync.Once
}

type memNet struct {
	mu      sync.Mutex
	members []*memTransport
	cut     map[bucket.Slot]bool // members whose datagrams vanish
}

func newMemNet(n int) *memNet {
	net := &memNet{cut: map[bucket.Slot]bool{}}
	for i := range n {
		net.members = append(net.members, &memTransport{self: bucket.Slot(i), net: net, in: make(chan lockstep.Inbound, 1024)})
	}
	return net
}

func (t *memTransport) Send(to bucket.Slot, data []byte) error {
	t.net.mu.Lock()
	cut := t.net.cut[t.self] || t.net.cut[to]
	dst := t.net.members[to]
	t.net.mu.Unlock()
	if cut {
		return nil
	}
	select {
	case dst.in <- lockstep.Inbound{From: t.self, Data: append([]byte(nil), data...)}:
	default: // full: dropped, as a real network would
	}
	return nil
}

func (t *memTransport) Incoming() <-chan lockstep.Inbound { return t.in }

func (t *memTransport) Close() error {
	t.close.Do(func() { close(t.in) })
	return nil
}

type countingSim struct {
	state uint64
	steps int
}

func (s *countingSim) Step(f bucket.Frame, cmds []bucket.Command) {
	s.state = s.state*1099511628211 ^ lockstep.InputHash(f, cmds)
	s.steps++
}

func (s *countingSim) Hash() uint64 { return s.state }

// startSessions makes a session for every member of net, configured by cfg
// (its Transport filled in), and runs each in a goroutine until ctx ends;
// errc[i] receives what member i's Run returned.
func startSessions(t *testing.T, ctx context.Context, net *memNet, cfg func(i int) lockstep.SessionConfig) (sessions []*lockstep.Session, errc []chan error) {
	t.Helper()
	for i, tr := range net.members {
		c := cfg(i)
		c.Transport = tr
		s, err := lockstep.NewSession(c)
		require.NoError(t, err, "member %d", i)
		sessions = append(sessions, s)
		errc = append(errc, make(chan error, 1))
		go func() { errc[i] <- s.Run(ctx) }()
	}
	return sessions, errc
}

func TestSessionsOverMemoryTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const members = 3
		net := newMemNet(members)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		origin := time.Now()
		clock := func() time.Duration { return time.Since(origin) }
		var mu sync.Mutex
		hashes := make([]map[bucket.Frame]uint64, members)
		sessions, errc := startSessions(t, ctx, net, func(i int) lockstep.SessionConfig {
			hashes[i] = map[bucket.Frame]uint64{}
			return lockstep.SessionConfig{
				Core:  lockstep.Config{Members: members, Self: bucket.Slot(i), Session: 7, Frame: 10 * time.Millisecond, DropTimeout: 2 * time.Second},
				Sim:   &countingSim{},
				Clock: clock,
				OnStep: func(f bucket.Frame, _ []bucket.Command, sim lockstep.Simulation, _ uint64) {
					mu.Lock()
					hashes[i][f] = sim.Hash()
					mu.Unlock()
				},
			}
		})
		// Submit from several goroutines while the sessions run.
		var sub sync.WaitGroup
		for i, s := range sessions {
			sub.Add(1)
			go func() {
				defer sub.Done()
				for k := range 20 {
					if err := s.Submit([]byte{byte(i), byte(k)}); err != nil {
						t.Errorf("member %d submit %d: %v", i, k, err)
						return
					}
					time.Sleep(7 * time.Millisecond)
				}
			}()
		}
		sub.Wait()
		// Wait for some frames, reading stats concurrently.
		for sessions[0].Stats().Stepped < 60 {
			if ctx.Err() != nil {
				t.Fatal("sessions did not reach frame 60")
			}
			for _, s := range sessions {
				_ = s.Stats()
			}
			time.Sleep(5 * time.Millisecond)
		}
		// Member 2 leaves at an announced frame; the others see it leave.
		if err := sessions[2].Close(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-errc[2]; err != nil {
			t.Fatalf("leaver's Run: %v", err)
		}
		if err := sessions[2].Submit([]byte{1}); !errors.Is(err, lockstep.ErrClosed) {
			t.Fatalf("Submit after Close: %v", err)
		}
		target := sessions[0].Stats().Stepped + 40
		for sessions[0].Stats().Stepped < target || sessions[1].Stats().Stepped < target {
			if ctx.Err() != nil {
				t.Fatal("survivors stopped after the leave")
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		for i := range 2 {
			if err := <-errc[i]; !errors.Is(err, context.Canceled) {
				t.Errorf("member %d: Run returned %v, want context.Canceled", i, err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for f, h := range hashes[0] {
			if h1, ok := hashes[1][f]; ok && h1 != h {
				t.Fatalf("frame %d: members 0 and 1 differ", f)
			}
			if h2, ok := hashes[2][f]; ok && h2 != h {
				t.Fatalf("frame %d: members 0 and 2 differ", f)
			}
		}
		if st := sessions[0].Stats(); st.Core.Submitted != 20 || st.Stepped < target {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestSessionTransportClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := newMemNet(2)
		s, err := lockstep.NewSession(lockstep.SessionConfig{
			Core:      lockstep.Config{Members: 2, Self: 0, Frame: 10 * time.Millisecond},
			Sim:       &countingSim{},
			Transport: net.members[0],
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		go func() {
			time.Sleep(50 * time.Millisecond)
			net.members[0].Close()
		}()
		if err := s.Run(ctx); !errors.Is(err, lockstep.ErrTransportClosed) {
			t.Fatalf("Run: %v, want ErrTransportClosed", err)
		}
		if err := s.Run(ctx); err == nil {
			t.Fatal("second Run did not fail")
		}
	})
}

func TestNewSessionNeedsATransport(t *testing.T) {
	if _, err := lockstep.NewSession(lockstep.SessionConfig{Core: lockstep.Config{Members: 1}}); !errors.Is(err, lockstep.ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
}

func TestSessionBroadcastEntityDatagrams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const members = 3
		net := newMemNet(members)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got := make(chan [2]byte, 16)
		sessions, _ := startSessions(t, ctx, net, func(i int) lockstep.SessionConfig {
			return lockstep.SessionConfig{
				Core: lockstep.Config{Members: members, Self: bucket.Slot(i), Frame: 10 * time.Millisecond},
				Sim:  &countingSim{},
				OnDatagram: func(from bucket.Slot, data []byte) {
					got <- [2]byte{byte(from), data[1]}
				},
			}
		})
		if err := sessions[0].Broadcast([]byte{0x01, 9}); !errors.Is(err, lockstep.ErrInvalidConfig) {
			t.Fatalf("Broadcast of a lockstep datagram: %v", err)
		}
		if err := sessions[0].Broadcast([]byte{0x02, 42}); err != nil {
			t.Fatal(err)
		}
		for range members - 1 {
			select {
			case g := <-got:
				if g != [2]byte{0, 42} {
					t.Fatalf("got %v", g)
				}
			case <-ctx.Done():
				t.Fatal("the entity datagram did not arrive")
			}
		}
		if st := sessions[1].Stats(); st.Core.Malformed != 0 {
			t.Fatalf("entity datagrams counted as malformed: %d", st.Core.Malformed)
		}
	})
}

// TestSessionCutOffStops: a member cut off from the others for longer than
// the drop timeout is in a minority; its Run returns an error wrapping
// ErrStopped, and Submit says so too, while the others play on.
func TestSessionCutOffStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const members = 3
		net := newMemNet(members)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var stops []lockstep.Event
		var mu sync.Mutex
		sessions, errc := startSessions(t, ctx, net, func(i int) lockstep.SessionConfig {
			return lockstep.SessionConfig{
				Core: lockstep.Config{Members: members, Self: bucket.Slot(i), Session: 7, DropTimeout: time.Second},
				Sim:  &countingSim{},
				OnEvent: func(e lockstep.Event) {
					if e.Type == lockstep.EventStop {
						mu.Lock()
						stops = append(stops, e)
						mu.Unlock()
					}
				},
			}
		})
		time.Sleep(2 * time.Second)
		net.mu.Lock()
		net.cut[2] = true
		net.mu.Unlock()
		select {
		case err := <-errc[2]:
			if !errors.Is(err, lockstep.ErrStopped) || !strings.Contains(err.Error(), "minority") {
				t.Fatalf("member 2's Run: %v, want ErrStopped for a minority", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("member 2 cut off for 5 s did not stop")
		}
		if err := sessions[2].Submit([]byte("late")); !errors.Is(err, lockstep.ErrClosed) && !errors.Is(err, lockstep.ErrStopped) {
			t.Fatalf("Submit after the stop: %v", err)
		}
		before := sessions[0].Stats().Stepped
		time.Sleep(time.Second)
		if after := sessions[0].Stats().Stepped; after <= before {
			t.Fatalf("member 0 stopped stepping after member 2 was cut off: frame %d then %d", before, after)
		}
		mu.Lock()
		if len(stops) != 1 || stops[0].Member != 2 || stops[0].Reason != lockstep.ReasonMinority {
			t.Fatalf("stop events %v, want one of member 2 for minority", stops)
		}
		mu.Unlock()
		cancel()
		for i := range 2 {
			if err := <-errc[i]; !errors.Is(err, context.Canceled) {
				t.Errorf("member %d's Run: %v", i, err)
			}
		}
	})
}

// TestSessionFullFramesWait: commands queued faster than the limit per
// frame allows wait for later frames instead of being lost.
func TestSessionFullFramesWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := newMemNet(2)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		var got []string
		sessions, _ := startSessions(t, ctx, net, func(i int) lockstep.SessionConfig {
			return lockstep.SessionConfig{
				Core: lockstep.Config{Members: 2, Self: bucket.Slot(i), Session: 7, MaxFrameCommands: 2},
				Sim:  &countingSim{},
				OnStep: func(_ bucket.Frame, cmds []bucket.Command, _ lockstep.Simulation, _ uint64) {
					if i != 1 {
						return
					}
					mu.Lock()
					for _, c := range cmds {
						got = append(got, string(c.Payload))
					}
					mu.Unlock()
				},
			}
		})
		time.Sleep(time.Second)
		var want []string
		for k := range 10 {
			want = append(want, fmt.Sprint(k))
			if err := sessions[0].Submit([]byte(want[k])); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * time.Second)
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(got, want) {
			t.Fatalf("member 1 stepped %q, want %q", got, want)
		}
		if r := sessions[0].Stats().Core.Refused; r != 0 {
			t.Fatalf("%d commands refused", r)
		}
	})
}
