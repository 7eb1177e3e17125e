package peer

import (
	"fmt"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	"github.com/libp2p/go-libp2p/p2p/protocol/identify"
	ma "github.com/multiformats/go-multiaddr"
)

// relayOption is the libp2p option of a host's relay: the circuit relay
// client when nat is set, none otherwise.
func relayOption(nat bool) libp2p.Option {
	if nat {
		return libp2p.EnableRelay()
	}
	return libp2p.DisableRelay()
}

// natState is a host's NAT traversal: the address a relay sees it at, and
// the hole punching service started once that is known.
type natState struct {
	public func(ma.Multiaddr) bool // PublicFilter of the host's configuration

	mu       sync.Mutex
	relays   []peer.ID // the relays Meet used: their connections stay
	observed []ma.Multiaddr
	hp       *holepunch.Service
	closed   bool
}

// addrs returns the addresses hole punching offers the other side: those a
// relay saw the host at, if public (or in a range configured as public).
func (n *natState) addrs() []ma.Multiaddr {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []ma.Multiaddr
	for _, a := range n.observed {
		if n.public(a) {
			out = append(out, a)
		}
	}
	return out
}

// setObserved records the address a relay saw the host at and, on a host
// made with HostConfig.NAT, starts hole punching (DCUtR): go-libp2p's
// service, offering that address. Its goroutines stop with Host.Close.
func (h *Host) setObserved(a ma.Multiaddr) error {
	n := &h.nat
	n.mu.Lock()
	defer n.mu.Unlock()
	n.observed = []ma.Multiaddr{a}
	if n.hp != nil || n.closed || !h.natEnabled() {
		return nil
	}
	idh, ok := h.h.(interface{ IDService() identify.IDService })
	if !ok {
		return fmt.Errorf("peer: the libp2p host has no identify service for hole punching")
	}
	hp, err := holepunch.NewService(h.h, idh.IDService(), n.addrs)
	if err != nil {
		return fmt.Errorf("peer: hole punching: %w", err)
	}
	n.hp = hp
	return nil
}

// natEnabled reports whether the host was made with HostConfig.NAT.
func (h *Host) natEnabled() bool { return h.natOn }

func (n *natState) close() {
	n.mu.Lock()
	hp := n.hp
	n.closed = true
	n.mu.Unlock()
	if hp != nil {
		_ = hp.Close()
	}
}

// addRelay keeps the connections to relay open whatever sessions the host
// joins: relayed connections and the reservation run over them.
func (n *natState) addRelay(relay peer.ID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !slices.Contains(n.relays, relay) {
		n.relays = append(n.relays, relay)
	}
}

func (n *natState) isRelay(p peer.ID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Contains(n.relays, p)
}
