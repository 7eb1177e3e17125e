package peer

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// RelayConfig configures [NewRelay], the public meeting point of members
// behind NATs: a circuit relay (libp2p's circuit relay v2) and the lobby
// directory.
type RelayConfig struct {
	// ListenAddrs are the relay's QUIC listen multiaddrs; empty means
	// DefaultListenAddr (loopback: useful in tests only).
	ListenAddrs []string
	// Identity is the relay's key; if nil it is loaded from (or created in)
	// IdentityFile, or a fresh one is made.
	Identity     crypto.PrivKey
	IdentityFile string
	// Resources bounds the circuit relay; the zero value means
	// DefaultRelayResources.
	Resources *relayv2.Resources
	// Directory bounds the lobby directory.
	Directory DirectoryLimits
	// PublicCIDRs are address ranges treated as public besides the
	// internet's public addresses (see PublicFilter): for labs and private
	// WANs. Empty on the internet.
	PublicCIDRs []netip.Prefix
	// Logger receives the relay's log records; nil discards them.
	Logger *slog.Logger
}

// DefaultRelayResources returns the circuit relay's limits: go-libp2p's
// defaults (reservations of an hour, 16 circuits per peer, 8 reservations
// per IP address, 32 per ASN) but for two: 1,024 reservations at once
// rather than 128, every member that meets through the relay holding one;
// and one relayed connection may last 2 hours and carry 64 MiB each way,
// enough for a session of lockstep packets between two members whose NATs
// cannot be punched (about 13 KB/s each way in the NAT lab).
func DefaultRelayResources() relayv2.Resources {
	rc := relayv2.DefaultResources()
	rc.MaxReservations = 1024
	rc.Limit = &relayv2.RelayLimit{Duration: 2 * time.Hour, Data: 64 << 20}
	return rc
}

// PublicFilter returns whether an address is one to hand to others: a
// public internet address (go-libp2p's manet.IsPublicAddr), or one in a
// range of cidrs. With no cidrs it is exactly go-libp2p's notion, so the
// option never widens what happens on the internet.
func PublicFilter(cidrs []netip.Prefix) func(ma.Multiaddr) bool {
	return func(a ma.Multiaddr) bool {
		if manet.IsPublicAddr(a) {
			return true
		}
		if len(cidrs) == 0 {
			return false
		}
		ip, err := manet.ToIP(a)
		if err != nil {
			return false
		}
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			return false
		}
		addr = addr.Unmap()
		for _, p := range cidrs {
			if p.Contains(addr) {
				return true
			}
		}
		return false
	}
}

// Relay is a running relay: a libp2p host serving circuit relay v2 and the
// lobby directory ([DirectoryProtocol]). It stores nothing but the relay's
// reservations and the directory's registrations, both expiring, and never
// sees the members' lockstep traffic in clear (relayed connections are
// end-to-end encrypted). Safe for concurrent use.
type Relay struct {
	h      host.Host
	svc    *relayv2.Relay
	counts *relayCounts // the circuit service's counters (Stats)
	log    *slog.Logger
	public func(ma.Multiaddr) bool

	mu  sync.Mutex
	dir *directory
}

// NewRelay starts a relay as cfg says. Stop it with Close.
func NewRelay(ctx context.Context, cfg RelayConfig) (*Relay, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	log := orDiscard(cfg.Logger)
	key, err := identity(cfg.Identity, cfg.IdentityFile)
	if err != nil {
		return nil, err
	}
	opts := []libp2p.Option{
		libp2p.NoTransports,
		libp2p.Transport(libp2pquic.NewTransport),
		libp2p.DisableMetrics(),
		libp2p.Ping(false),
		libp2p.UserAgent("phalanx-relay"),
	}
	if key != nil {
		opts = append(opts, libp2p.Identity(key))
	}
	listen := cfg.ListenAddrs
	if len(listen) == 0 {
		listen = []string{DefaultListenAddr}
	}
	opts = append(opts, libp2p.ListenAddrStrings(listen...))
	h, err := libp2p.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("peer: starting the relay's host: %w", err)
	}
	rc := DefaultRelayResources()
	if cfg.Resources != nil {
		rc = *cfg.Resources
	}
	public := PublicFilter(cfg.PublicCIDRs)
	counts := new(relayCounts)
	svc, err := relayv2.New(h, relayv2.WithResources(rc), relayv2.WithReservationAddressFilter(public), relayv2.WithMetricsTracer(counts))
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("peer: starting the relay service: %w", err)
	}
	r := &Relay{h: h, svc: svc, counts: counts, log: log, public: public, dir: newDirectory(cfg.Directory)}
	h.SetStreamHandler(DirectoryProtocol, r.handleDirectory)
	log.Info("phalanx relay: started", "id", h.ID(), "addrs", h.Addrs())
	return r, nil
}

// ID returns the relay's peer ID.
func (r *Relay) ID() peer.ID { return r.h.ID() }

// Addrs returns the relay's listen addresses as full multiaddrs ending in
// /p2p/ID.
func (r *Relay) Addrs() []ma.Multiaddr { return p2pAddrs(r.h) }

// Registrations returns how many members wait in how many lobbies.
func (r *Relay) Registrations() (members, lobbies int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dir.counts()
}

// Stats returns what the relay's circuit service did since it started. It
// is safe for concurrent use.
func (r *Relay) Stats() RelayStats { return r.counts.stats() }

// Close stops the relay. It is idempotent.
func (r *Relay) Close() error {
	r.h.RemoveStreamHandler(DirectoryProtocol)
	_ = r.svc.Close()
	return r.h.Close()
}
