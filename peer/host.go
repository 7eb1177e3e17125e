package peer

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	libp2pquic "github.com/libp2p/go-libp2p/p2p/transport/quic"
	"github.com/libp2p/go-libp2p/p2p/transport/quicreuse"
	ma "github.com/multiformats/go-multiaddr"
)

// DefaultListenAddr is the libp2p listen address of a [HostConfig] that
// names none: QUIC on the IPv4 loopback, on a port the system picks.
const DefaultListenAddr = "/ip4/127.0.0.1/udp/0/quic-v1"

// ErrBadIdentity is wrapped by the errors [LoadOrCreateIdentity] and
// [NewHost] return for an identity file that exists but does not hold a
// libp2p private key.
var ErrBadIdentity = errors.New("peer: bad identity file")

// ErrHostClosed is returned by operations on a closed [Host].
var ErrHostClosed = errors.New("peer: host closed")

// HostConfig configures [NewHost]. The zero value is a host with a fresh
// identity listening on loopback only.
type HostConfig struct {
	// ListenAddrs are the libp2p listen multiaddrs. Only QUIC addresses
	// (".../udp/PORT/quic-v1") can be used: the host has no other transport.
	// Empty means [DefaultListenAddr].
	ListenAddrs []string

	// Identity is the host's private key. If nil, the key is loaded from
	// IdentityFile (created there if missing, see [LoadOrCreateIdentity]),
	// or, without a file, a fresh Ed25519 key is generated.
	Identity crypto.PrivKey

	// IdentityFile is where the identity is kept when Identity is nil.
	IdentityFile string

	// NAT readies the host for members behind NATs (see Meet): the
	// circuit relay client (reservations at a relay, connections through
	// it) and hole punching (DCUtR) once a relay's directory has told the
	// host the address it is seen at. Off, the host has no relay at all.
	NAT bool

	// PublicCIDRs are address ranges the host treats as public besides the
	// internet's (see PublicFilter), for labs and private WANs: go-libp2p
	// counts ranges such as 198.18.0.0/15 as neither public nor private,
	// so hole punching would offer no address there. Empty on the
	// internet.
	PublicCIDRs []netip.Prefix

	// Logger receives the host's log records; nil discards them.
	Logger *slog.Logger
}

// Host is one member's libp2p host: its identity and its libp2p endpoint
// (QUIC only) that carries the lobby. The datagram channel shares the UDP
// socket of its first QUIC listen address, under an ALPN of its own, so a
// member has one UDP port.
//
// A Host is safe for concurrent use. It can run one [Join] per session ID at
// a time and one [Transport] at a time; after a Transport is closed the next
// one reuses the same socket, so the host keeps its datagram address.
type Host struct {
	h     host.Host
	key   crypto.PrivKey
	ident *libp2ptls.Identity
	log   *slog.Logger

	cm        *quicreuse.ConnManager // libp2p's QUIC sockets, shared by the datagram channel
	socks     *sockets
	dgram     *socket // the socket of the first listen address
	dgramAddr netip.AddrPort
	dgramLn   quicreuse.Listener // the datagram channel's ALPNs on that socket
	accepted  chan struct{}      // closed when the accept loop ends
	current   atomic.Pointer[Transport]
	catchup   atomic.Pointer[catchupServer] // the playing member's catch-up side (catchupserve.go)

	refusals *refusalLog // warnings about refused strangers, rate-limited
	gate     *gater
	nat      natState     // NAT traversal (nat.go)
	natOn    bool         // HostConfig.NAT
	renewals atomic.Int64 // reservations at relays renewed (reserve.go)

	mu           sync.Mutex
	closed       bool
	done         chan struct{}        // closed by Close: background work stops
	bg           sync.WaitGroup       // background work, waited for by Close
	lobbies      map[string]*lobby    // joins in progress, by session ID
	running      map[string][]peer.ID // members of the sessions joined, by session ID
	runningOrder []string             // their IDs, oldest first (at most maxRunning)
	reserving    map[peer.ID]bool     // relays whose reservation a loop renews (reserve.go)
}

// NewHost starts a host as cfg says. It returns an error wrapping
// [ErrBadIdentity] for an unreadable identity file, and an error when a
// listen address cannot be used. ctx bounds the start only; stop the host
// with [Host.Close].
func NewHost(ctx context.Context, cfg HostConfig) (*Host, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	log := orDiscard(cfg.Logger)
	key, err := identity(cfg.Identity, cfg.IdentityFile)
	if err != nil {
		return nil, err
	}
	if key == nil {
		var err error
		if key, _, err = crypto.GenerateEd25519Key(rand.Reader); err != nil {
			return nil, fmt.Errorf("peer: generating identity: %w", err)
		}
	}
	listen := cfg.ListenAddrs
	if len(listen) == 0 {
		listen = []string{DefaultListenAddr}
	}
	if _, err := listenIP(listen[0]); err != nil {
		return nil, err
	}
	ident, err := libp2ptls.NewIdentity(key)
	if err != nil {
		return nil, fmt.Errorf("peer: TLS identity: %w", err)
	}

	gate := newGater(time.Now)
	socks := &sockets{}
	var cm *quicreuse.ConnManager
	h, err := libp2p.New(
		libp2p.Identity(key),
		libp2p.QUICReuse(connManager(socks, &cm)),
		libp2p.ConnectionGater(gate),
		libp2p.Ping(false),
		libp2p.NoTransports,
		libp2p.Transport(libp2pquic.NewTransport),
		libp2p.ListenAddrStrings(listen...),
		relayOption(cfg.NAT),
		libp2p.DisableMetrics(),
		libp2p.DisableIdentifyAddressDiscovery(),
		libp2p.UserAgent("phalanx"),
	)
	if err != nil {
		if cm != nil {
			cm.Close()
		}
		return nil, fmt.Errorf("peer: starting libp2p host: %w", err)
	}
	hst := &Host{
		h:        h,
		key:      key,
		ident:    ident,
		log:      log,
		cm:       cm,
		socks:    socks,
		accepted: make(chan struct{}),
		lobbies:  make(map[string]*lobby),
		running:  make(map[string][]peer.ID),
		done:     make(chan struct{}),
		refusals: newRefusalLog(log, RefusalLogInterval, time.Now),
		gate:     gate,
	}
	if err := hst.listenDatagram(); err != nil {
		h.Close()
		cm.Close()
		return nil, err
	}
	hst.nat.public = PublicFilter(cfg.PublicCIDRs)
	hst.natOn = cfg.NAT
	gate.host.Store(hst)
	h.SetStreamHandler(LobbyProtocol, hst.handleLobbyStream)
	h.SetStreamHandler(PacketsProtocol, hst.handlePackets)
	h.SetStreamHandler(CatchupProtocol, hst.handleCatchup)
	log.Info("peer: host started", "id", h.ID(), "addrs", h.Addrs(), "datagram", hst.dgramAddr)
	return hst, nil
}

// listenIP returns the IP of a listen multiaddr, for the default datagram
// address.
func listenIP(addr string) (netip.Addr, error) {
	m, err := ma.NewMultiaddr(addr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("peer: listen address %q: %w", addr, err)
	}
	for _, code := range []int{ma.P_IP4, ma.P_IP6} {
		if v, err := m.ValueForProtocol(code); err == nil {
			ip, err := netip.ParseAddr(v)
			if err != nil {
				return netip.Addr{}, fmt.Errorf("peer: listen address %q: %w", addr, err)
			}
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("peer: listen address %q has no IP; set HostConfig.DatagramAddr", addr)
}

// ID returns the host's peer ID.
func (h *Host) ID() peer.ID { return h.h.ID() }

// Addrs returns the host's listen addresses as full multiaddrs ending in
// /p2p/ID, ready to hand to another member.
func (h *Host) Addrs() []ma.Multiaddr { return p2pAddrs(h.h) }

// AddrInfo returns the host's ID and listen addresses.
func (h *Host) AddrInfo() peer.AddrInfo {
	return peer.AddrInfo{ID: h.h.ID(), Addrs: h.h.Addrs()}
}

// p2pAddrs returns h's listen addresses as full multiaddrs ending in
// /p2p/ID. It panics if h's ID is invalid, which a running host's is not.
func p2pAddrs(h host.Host) []ma.Multiaddr {
	addrs, err := peer.AddrInfoToP2pAddrs(&peer.AddrInfo{ID: h.ID(), Addrs: h.Addrs()})
	if err != nil {
		panic("peer: host has an invalid peer ID: " + err.Error())
	}
	return addrs
}

// DatagramAddr returns the local address of the datagram channel's UDP
// socket, which [Join] announces to the other members: the socket of the
// host's first QUIC listen address, shared with libp2p.
func (h *Host) DatagramAddr() netip.AddrPort { return h.dgramAddr }

// LibP2P returns the underlying libp2p host, for protocols of the caller's
// own. Closing it closes the Host's libp2p side; use [Host.Close] instead.
func (h *Host) LibP2P() host.Host { return h.h }

// Close stops the host: its libp2p side and the datagram socket. Close a
// [Transport] running on the host first. Close is idempotent.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	h.mu.Unlock()
	h.bg.Wait()
	h.refusals.flush()
	h.h.RemoveStreamHandler(LobbyProtocol)
	h.h.RemoveStreamHandler(PacketsProtocol)
	h.h.RemoveStreamHandler(CatchupProtocol)
	h.nat.close()
	_ = h.dgramLn.Close()
	<-h.accepted
	err := h.h.Close()
	if cerr := h.cm.Close(); err == nil {
		err = cerr
	}
	h.log.Info("peer: host closed", "id", h.h.ID())
	return err
}

// background runs stop when ctx ends or the host closes, whichever is
// first, and reports true; on a closed host it reports false and runs
// nothing.
func (h *Host) background(ctx context.Context, stop func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.bg.Go(func() {
		select {
		case <-ctx.Done():
		case <-h.done:
		}
		stop()
	})
	return true
}

// acquireDatagram hands the datagram socket to one Transport: from now
// on the host passes t the connections it accepts for the datagram
// channel.
func (h *Host) acquireDatagram(t *Transport) (*socket, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrHostClosed
	}
	if !h.current.CompareAndSwap(nil, t) {
		return nil, ErrTransportBusy
	}
	return h.dgram, nil
}

func (h *Host) releaseDatagram(t *Transport) {
	h.current.CompareAndSwap(t, nil)
}

// identity is key, or else the key stored at file (LoadOrCreateIdentity),
// or else nil: libp2p then makes a new one.
func identity(key crypto.PrivKey, file string) (crypto.PrivKey, error) {
	if key != nil || file == "" {
		return key, nil
	}
	return LoadOrCreateIdentity(file)
}

// LoadOrCreateIdentity returns the libp2p private key stored at path, in
// libp2p's marshalled private-key format (crypto.MarshalPrivateKey). If
// there is no file, it generates an Ed25519 key and writes it there with
// mode 0600, atomically (a temporary file renamed into place). A file that
// exists but does not hold a key gives an error wrapping [ErrBadIdentity]
// that names the file; so does one larger than [MaxIdentityFile], which is
// not read past that size (a key file given as /dev/zero fails at once).
func LoadOrCreateIdentity(path string) (crypto.PrivKey, error) {
	data, err := readIdentityFile(path)
	switch {
	case errors.Is(err, ErrBadIdentity):
		return nil, err
	case err == nil:
		key, err := crypto.UnmarshalPrivateKey(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not a libp2p private key (%v); move it away to create a new identity", ErrBadIdentity, path, err)
		}
		return key, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("peer: reading identity: %w", err)
	}

	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("peer: generating identity: %w", err)
	}
	data, err = crypto.MarshalPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("peer: encoding identity: %w", err)
	}
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("peer: saving identity: %w", err)
	}
	return key, nil
}

// MaxIdentityFile bounds the size of an identity file: a marshalled libp2p
// private key takes from 36 bytes (Ed25519, 68) to about 2.4 KiB (RSA 4096).
const MaxIdentityFile = 16 << 10

// readIdentityFile reads path, refusing a file of more than
// MaxIdentityFile bytes without reading further.
func readIdentityFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxIdentityFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxIdentityFile {
		return nil, fmt.Errorf("%w: %s holds more than %d bytes, too many for a libp2p private key", ErrBadIdentity, path, MaxIdentityFile)
	}
	return data, nil
}

// writeFileAtomic writes data to a temporary file beside path with mode
// perm, then renames it over path, so a reader sees the whole file or none.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // fails harmlessly after the rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// orDiscard returns log, or a logger that discards everything when log is
// nil (the configurations' default).
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
