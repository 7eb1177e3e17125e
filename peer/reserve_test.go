package peer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
)

// A member that met through a relay renews its reservation there before it
// expires, for as long as its host runs: with reservations of 3 s, the
// relay sees each member renew twice (more than the first lifetime
// passes) and counts it.
func TestMeetRenewsReservation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := DefaultRelayResources()
	res.ReservationTTL = 3 * time.Second
	r := newTestRelay(t, ctx, RelayConfig{Resources: &res})
	relay := peer.AddrInfo{ID: r.ID(), Addrs: r.h.Addrs()}
	hosts := newNATHosts(t, 2)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, h := range hosts {
		wg.Go(func() { _, _, errs[i] = Meet(ctx, h, MeetConfig{Relay: relay, Lobby: "renew"}, 2) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("member %d: Meet: %v", i, err)
		}
	}
	for hosts[0].renewals.Load() < 2 || hosts[1].renewals.Load() < 2 {
		select {
		case <-ctx.Done():
			t.Fatalf("the members renewed their reservations %d and %d times", hosts[0].renewals.Load(), hosts[1].renewals.Load())
		case <-time.After(100 * time.Millisecond):
		}
	}
	for _, h := range hosts {
		h.Close()
	}
	st := r.Stats()
	if st.Reservations != 2 || st.Renewals < 4 {
		t.Fatalf("the relay saw %+v, want 2 reservations and at least 4 renewals", st)
	}
	t.Logf("relay: %+v", st)
}
