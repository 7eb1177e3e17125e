package peer

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
)

// reserveRetry is how long the host waits after a failed renewal of its
// reservation at a relay before it tries again.
const reserveRetry = 10 * time.Second

// keepReserved renews the host's reservation at relay, which expires at
// exp, until the host closes: a quarter of its lifetime before it expires,
// and every reserveRetry after a renewal fails. Without
// renewal a relay drops the reservation after its TTL (an hour by default),
// and nobody can reach the member through the relay any more. One loop runs
// per relay; later calls for the same relay do nothing.
func (h *Host) keepReserved(relay peer.AddrInfo, exp time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.reserving[relay.ID] {
		return
	}
	if h.reserving == nil {
		h.reserving = make(map[peer.ID]bool)
	}
	h.reserving[relay.ID] = true
	h.bg.Go(func() {
		// Close waits for this loop: a renewal in flight ends with the host.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.bg.Go(func() { // ends with the loop or the host
			select {
			case <-h.done:
				cancel()
			case <-ctx.Done():
			}
		})
		ttl := time.Until(exp)
		wait := ttl - ttl/4
		for {
			t := time.NewTimer(max(wait, 0))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, reserveRetry)
			r, err := client.Reserve(rctx, h.h, relay)
			rcancel()
			if err != nil {
				h.log.Warn("peer: renewing the reservation at the relay failed", "relay", relay.ID, "expires", time.Until(exp).Round(time.Second), "err", err)
				wait = reserveRetry
				continue
			}
			exp = r.Expiration
			ttl = time.Until(exp)
			wait = max(ttl-ttl/4, time.Second) // a relay granting next to nothing is not asked back to back
			h.renewals.Add(1)
			h.log.Debug("peer: reservation at the relay renewed", "relay", relay.ID, "expires", ttl.Round(time.Second))
		}
	})
}
