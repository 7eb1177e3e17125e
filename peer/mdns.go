package peer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/discovery/mdns"
)

// DefaultServiceTag is the mDNS service name [DiscoverMDNS] uses when given
// none.
const DefaultServiceTag = "_phalanx._udp"

// ErrNotEnoughPeers is wrapped by the error [DiscoverMDNS] returns when ctx
// ends before it found the peers it wanted.
var ErrNotEnoughPeers = errors.New("peer: discovery found too few peers")

// DiscoverMDNS advertises h on the local network with multicast DNS (RFC
// 6762, through go-libp2p's mdns service) under serviceTag, and collects
// other hosts advertising the same tag, until it has want of them or ctx
// ends. It returns the peers found, sorted by ID; if fewer than want, with an
// error wrapping [ErrNotEnoughPeers] and ctx's error.
//
// Having found its peers, a host goes on advertising (and answering
// queries) until ctx ends or the host closes, so that members that started
// later find it too: pass a ctx that ends once the session has been joined.
//
// A host advertises its listen addresses, so for discovery on a LAN it must
// listen on an address the others can reach (for example
// /ip4/0.0.0.0/udp/0/quic-v1), not the loopback default. mDNS sends on every
// multicast-capable interface.
func DiscoverMDNS(ctx context.Context, h *Host, serviceTag string, want int) ([]peer.AddrInfo, error) {
	if serviceTag == "" {
		serviceTag = DefaultServiceTag
	}
	n := &notifee{self: h.ID(), found: make(map[peer.ID]peer.AddrInfo), more: make(chan struct{}, 1)}
	// The service queries at growing intervals (4 s, then 1.5-2.5 times
	// longer each time) and announces only when it starts; hosts starting
	// at about the same time can miss each other's first words. Restarting
	// it while peers are missing announces and asks again.
	restart := time.NewTimer(0)
	defer restart.Stop()
	var svc mdns.Service
	defer func() {
		if svc != nil {
			svc.Close()
		}
	}()
	for {
		if got := n.snapshot(); len(got) >= want {
			h.log.Info("peer: mDNS found peers", "count", len(got))
			if s := svc; s != nil && h.background(ctx, func() { s.Close() }) {
				svc = nil // still advertising, until ctx ends
			}
			return got, nil
		}
		select {
		case <-ctx.Done():
			got := n.snapshot()
			return got, fmt.Errorf("%w: %d of %d under %q: %w", ErrNotEnoughPeers, len(got), want, serviceTag, context.Cause(ctx))
		case <-n.more:
		case <-restart.C:
			if svc != nil {
				svc.Close()
			}
			svc = mdns.NewMdnsService(h.h, serviceTag, n)
			if err := svc.Start(); err != nil {
				svc = nil
				return nil, fmt.Errorf("peer: mDNS: %w", err)
			}
			restart.Reset(mdnsRestart)
		}
	}
}

// mdnsRestart is how often DiscoverMDNS restarts the mDNS service while it
// lacks peers.
const mdnsRestart = 2 * time.Second

// notifee collects the peers the mdns service reports. The service calls
// HandlePeerFound from goroutines of its own, possibly after Close.
type notifee struct {
	self peer.ID
	mu   sync.Mutex
	// found merges the addresses of each peer across announcements.
	found map[peer.ID]peer.AddrInfo
	more  chan struct{}
}

func (n *notifee) HandlePeerFound(ai peer.AddrInfo) {
	if ai.ID == n.self {
		return
	}
	n.mu.Lock()
	cur := n.found[ai.ID]
	cur.ID = ai.ID
	for _, a := range ai.Addrs {
		if !slices.ContainsFunc(cur.Addrs, a.Equal) {
			cur.Addrs = append(cur.Addrs, a)
		}
	}
	n.found[ai.ID] = cur
	n.mu.Unlock()
	select {
	case n.more <- struct{}{}:
	default:
	}
}

func (n *notifee) snapshot() []peer.AddrInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]peer.AddrInfo, 0, len(n.found))
	for _, ai := range n.found {
		out = append(out, peer.AddrInfo{ID: ai.ID, Addrs: slices.Clone(ai.Addrs)})
	}
	slices.SortFunc(out, func(a, b peer.AddrInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return out
}
