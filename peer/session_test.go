package peer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/netsim"
)

// TestSessionsOverQUICBadProfile: four members, each in its own goroutines,
// play 400 frames over real QUIC on loopback impaired by the bad profile
// (13% loss in bursts, heavy jitter, reordering, duplication) and step
// identical buckets.
func TestSessionsOverQUICBadProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("a 400-frame real-time session")
	}
	playOverBad(t, ModeDatagram, 400, 25*time.Millisecond, 0, 90*time.Second)
}

// playOverBad joins four members on loopback, opens their transports in
// mode impaired by the bad profile, plays frames frames of frame each
// (playSession; dropTimeout 0 is the default) within limit, and checks that
// the profile lost something. It returns the sessions and transports for
// further checks.
func playOverBad(t *testing.T, mode Mode, frames bucket.Frame, frame, dropTimeout, limit time.Duration) ([]*Agreement, []*Transport) {
	t.Helper()
	const members = 4
	profile, err := netsim.Named("bad")
	if err != nil {
		t.Fatal(err)
	}
	hosts := newHosts(t, members)
	params := func(int) SessionParams {
		p := testParams(members)
		p.FrameMillis = int(frame / time.Millisecond)
		return p
	}
	sessions, errs := joinAll(t, hosts, params)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: Join: %v", i, err)
		}
	}
	trs := openTransports(t, hosts, sessions, func(int) TransportConfig {
		return TransportConfig{Mode: mode, Profile: &profile, Logger: testLogger()}
	})
	playSession(t, limit, sessions, trs, lockstep.Config{Frame: frame, Budget: int(profile.Phases[0].Bandwidth), DropTimeout: dropTimeout}, frames)
	if im := trs[0].Stats().Impairment; im == nil || im.Lost == 0 {
		t.Errorf("the bad profile lost nothing: %+v", im)
	}
	return sessions, trs
}

// playSession runs a lockstep session over the members' transports in real
// time (each member in its own goroutines, submitting a command every three
// frames) until every member has stepped frame frames-1, then checks that
// every member stepped identical buckets and used its datagrams. base gives
// the core settings beyond the session's own (members, slot, tag, start).
func playSession(t *testing.T, limit time.Duration, sessions []*Agreement, trs []*Transport, base lockstep.Config, frames bucket.Frame) {
	t.Helper()
	members := len(sessions)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	var mu sync.Mutex
	hashes := make([]map[bucket.Frame]uint64, members)
	done := make(chan int, members)
	runs := make([]*lockstep.Session, members)
	origin := time.Now()
	clock := func() time.Duration { return time.Since(origin) }
	// The agreed start may have passed while a loaded machine opened the
	// transports; the cores would then run the frames up to now empty, all
	// at once, and the commands would land past the frames compared. The
	// members share this process, so they share one later start instead.
	start := max(sessions[0].Start.Sub(origin), 0)
	for i := range members {
		hashes[i] = map[bucket.Frame]uint64{}
		sess := sessions[i]
		cfg := base
		cfg.Members, cfg.Self, cfg.Session, cfg.Start = members, sess.Self, sess.Tag(), start
		s, err := lockstep.NewSession(lockstep.SessionConfig{
			Core:      cfg,
			Sim:       &tally{},
			Transport: trs[i],
			Clock:     clock,
			OnStep: func(f bucket.Frame, _ []bucket.Command, sim lockstep.Simulation, _ uint64) {
				mu.Lock()
				defer mu.Unlock()
				hashes[i][f] = sim.Hash()
				if f == frames-1 {
					done <- i
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = s
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, s := range runs {
		wg.Go(func() { _ = s.Run(runCtx) })
	}
	// Every member submits a command every few frames.
	for i, s := range runs {
		wg.Go(func() {
			every := time.NewTicker(3 * base.Frame)
			defer every.Stop()
			for k := 0; ; k++ {
				if err := s.Submit([]byte{byte(i), byte(k), byte(k >> 8)}); err != nil {
					return
				}
				select {
				case <-every.C:
				case <-runCtx.Done():
					return
				}
			}
		})
	}
	for range members {
		select {
		case <-done:
		case <-ctx.Done():
			stop()
			wg.Wait()
			t.Fatal("the members did not all reach the last frame")
		}
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for f := range frames {
		for i := 1; i < members; i++ {
			if hashes[i][f] != hashes[0][f] {
				t.Fatalf("frame %d: member %d's hash differs from member 0's", f, i)
			}
		}
	}
	for i, s := range runs {
		st := s.Stats()
		if st.Core.Submitted == 0 || st.Core.Commands == 0 {
			t.Errorf("member %d: %d submitted, %d commands stepped", i, st.Core.Submitted, st.Core.Commands)
		}
		if st.Core.Malformed+st.Core.Foreign != 0 {
			t.Errorf("member %d: %d malformed and %d foreign datagrams", i, st.Core.Malformed, st.Core.Foreign)
		}
	}
}
