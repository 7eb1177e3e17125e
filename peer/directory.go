package peer

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
)

// The lobby directory: the relay's table of who waits in which lobby. It
// is sans-I/O (the clock is an argument); relaydir.go serves it over a
// libp2p stream and asks it from a member.

// Errors of the lobby directory. A refused registration wraps one of them.
var (
	// ErrLobbyFull: the lobby already holds its session's size of members.
	ErrLobbyFull = errors.New("peer: directory: lobby full")
	// ErrLobbySize: the registration names another session size than the
	// lobby's first member did.
	ErrLobbySize = errors.New("peer: directory: lobby of another size")
	// ErrDirectoryBusy: the directory holds as many registrations or
	// lobbies as it allows, or this peer registers too often.
	ErrDirectoryBusy = errors.New("peer: directory: busy")
	// ErrBadRegistration: the registration is malformed (lobby name, size,
	// addresses).
	ErrBadRegistration = errors.New("peer: directory: bad registration")
)

// Bounds of one registration.
const (
	MaxLobbyName  = 64 // bytes of a lobby's name
	MaxLobbySize  = 64 // members of one lobby (bucket.MaxMembers)
	MaxEntryAddrs = 8  // addresses kept for one member
)

// DirectoryLimits bounds a relay's lobby directory. Zero fields take the
// defaults of [DefaultDirectoryLimits].
type DirectoryLimits struct {
	// TTL is how long a registration lasts unless renewed; a member
	// waiting in a lobby renews it with every poll.
	TTL time.Duration
	// MaxRegistrations bounds the members registered in all lobbies
	// together; MaxLobbies the lobbies.
	MaxRegistrations int
	MaxLobbies       int
	// MinInterval is the least time between two registrations of one peer
	// that are answered; earlier ones are refused as busy.
	MinInterval time.Duration
}

// DefaultDirectoryLimits returns the directory's default limits: 30 s
// registrations, at most 4,096 of them in at most 1,024 lobbies, a
// registration per peer every 100 ms. Full, with the longest addresses a
// member can name (MaxEntryAddrs of 256 bytes each), the directory holds
// about 15 MB (BenchmarkDirectoryFull); with ordinary addresses far less.
func DefaultDirectoryLimits() DirectoryLimits {
	return DirectoryLimits{TTL: 30 * time.Second, MaxRegistrations: 4096, MaxLobbies: 1024, MinInterval: 100 * time.Millisecond}
}

func (l DirectoryLimits) withDefaults() DirectoryLimits {
	d := DefaultDirectoryLimits()
	l.TTL = cmp.Or(l.TTL, d.TTL)
	l.MaxRegistrations = cmp.Or(l.MaxRegistrations, d.MaxRegistrations)
	l.MaxLobbies = cmp.Or(l.MaxLobbies, d.MaxLobbies)
	l.MinInterval = cmp.Or(l.MinInterval, d.MinInterval)
	return l
}

// LobbyEntry is one member registered in a lobby: its peer ID and the
// addresses the directory knows it by.
type LobbyEntry struct {
	ID    peer.ID
	Addrs []ma.Multiaddr
}

type dirEntry struct {
	addrs   []ma.Multiaddr
	expires time.Time
}

type dirLobby struct {
	size    int
	members map[peer.ID]*dirEntry
}

// directory is the state of the lobby directory. Every peer holds at most
// one registration: registering in another lobby leaves the first. It is
// not safe for concurrent use.
type directory struct {
	limits  DirectoryLimits
	lobbies map[string]*dirLobby
	byPeer  map[peer.ID]string    // the lobby of each registered peer
	last    map[peer.ID]time.Time // last registration answered, for MinInterval
	swept   time.Time
}

func newDirectory(limits DirectoryLimits) *directory {
	return &directory{
		limits:  limits.withDefaults(),
		lobbies: make(map[string]*dirLobby),
		byPeer:  make(map[peer.ID]string),
		last:    make(map[peer.ID]time.Time),
	}
}

// register registers (or renews) id in lobby, a lobby of size members,
// reachable at addrs, and returns the lobby's members, itself included, by
// peer ID. A refusal wraps ErrLobbyFull, ErrLobbySize, ErrDirectoryBusy or
// ErrBadRegistration; the peer's registration elsewhere stays then.
func (d *directory) register(now time.Time, id peer.ID, lobby string, size int, addrs []ma.Multiaddr) ([]LobbyEntry, error) {
	if lobby == "" || len(lobby) > MaxLobbyName {
		return nil, fmt.Errorf("%w: lobby name of %d bytes (1 to %d)", ErrBadRegistration, len(lobby), MaxLobbyName)
	}
	if size < 1 || size > MaxLobbySize {
		return nil, fmt.Errorf("%w: size %d (1 to %d)", ErrBadRegistration, size, MaxLobbySize)
	}
	if len(addrs) > MaxEntryAddrs {
		addrs = addrs[:MaxEntryAddrs]
	}
	d.sweep(now)
	if last, ok := d.last[id]; ok && now.Sub(last) < d.limits.MinInterval {
		return nil, fmt.Errorf("%w: registering again within %v", ErrDirectoryBusy, d.limits.MinInterval)
	}
	l := d.lobbies[lobby]
	switch {
	case l == nil && len(d.lobbies) >= d.limits.MaxLobbies:
		return nil, fmt.Errorf("%w: %d lobbies", ErrDirectoryBusy, len(d.lobbies))
	case l != nil && l.size != size:
		return nil, fmt.Errorf("%w: lobby %q holds %d members, not %d", ErrLobbySize, lobby, l.size, size)
	}
	if l == nil || l.members[id] == nil {
		if l != nil && len(l.members) >= l.size {
			return nil, fmt.Errorf("%w: lobby %q holds its %d members", ErrLobbyFull, lobby, l.size)
		}
		if _, moving := d.byPeer[id]; !moving && len(d.byPeer) >= d.limits.MaxRegistrations {
			return nil, fmt.Errorf("%w: %d registrations", ErrDirectoryBusy, len(d.byPeer))
		}
		d.leave(id)
		if l == nil {
			l = &dirLobby{size: size, members: make(map[peer.ID]*dirEntry)}
			d.lobbies[lobby] = l
		}
		l.members[id] = &dirEntry{}
		d.byPeer[id] = lobby
	}
	e := l.members[id]
	e.addrs = slices.Clone(addrs)
	e.expires = now.Add(d.limits.TTL)
	d.last[id] = now
	out := make([]LobbyEntry, 0, len(l.members))
	for pid, e := range l.members {
		out = append(out, LobbyEntry{ID: pid, Addrs: e.addrs})
	}
	slices.SortFunc(out, func(a, b LobbyEntry) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// leave removes id's registration, if any.
func (d *directory) leave(id peer.ID) {
	name, ok := d.byPeer[id]
	if !ok {
		return
	}
	delete(d.byPeer, id)
	l := d.lobbies[name]
	delete(l.members, id)
	if len(l.members) == 0 {
		delete(d.lobbies, name)
	}
}

// sweep forgets the registrations that expired, at most once a second.
func (d *directory) sweep(now time.Time) {
	if now.Sub(d.swept) < time.Second {
		return
	}
	d.swept = now
	for id, name := range d.byPeer {
		if e := d.lobbies[name].members[id]; !now.Before(e.expires) {
			d.leave(id)
		}
	}
	for id, t := range d.last {
		if now.Sub(t) >= d.limits.MinInterval {
			delete(d.last, id)
		}
	}
}

// counts returns the registrations and lobbies held.
func (d *directory) counts() (registrations, lobbies int) {
	return len(d.byPeer), len(d.lobbies)
}
