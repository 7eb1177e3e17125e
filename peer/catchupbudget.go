package peer

import (
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"
)

// The streams a member serves at once are bounded three ways, so that
// neither one peer nor a crowd of spectators can take every place a
// member coming back needs:
//
//   - maxCatchupStreams streams of members (joiners) in all;
//   - streams of spectators in all, a budget apart: two for each place
//     the server gives spectators (one follows the live frames, one
//     fetches a checkpoint or asks for info beside it), at least
//     maxSpectatorStreams (spectatorStreams);
//   - maxPeerStreams streams of any one peer.
//
// A stream past a bound is refused as busy and its asker asks another
// member (or the same one later).
const (
	maxCatchupStreams   = 8
	maxSpectatorStreams = 4
	// maxPeerStreams is what one asker needs: a joiner fetches one range
	// from each member at a time and asks for info besides, with a spare
	// for a stream that breaks while its successor opens.
	maxPeerStreams = 3
)

// streamBudget counts the catch-up streams a member serves. It is safe
// for concurrent use.
type streamBudget struct {
	mu         sync.Mutex
	members    int
	spectators int
	byPeer     map[peer.ID]int
}

// active returns how many streams are served.
func (b *streamBudget) active() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.members + b.spectators
}

// spectatorStreams is the spectators' stream budget of a server that
// gives places spectators places.
func spectatorStreams(places int) int {
	return max(maxSpectatorStreams, 2*places)
}

// acquire takes a place for a stream of p (a spectator when spectator is
// set; spectators share a budget of spectatorCap streams) and returns the
// function that gives it back, or the reason it is refused.
func (b *streamBudget) acquire(p peer.ID, spectator bool, spectatorCap int) (release func(), why string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.byPeer[p] >= maxPeerStreams:
		return nil, "busy: too many streams of one peer"
	case spectator && b.spectators >= spectatorCap:
		return nil, "busy: too many spectators' streams"
	case !spectator && b.members >= maxCatchupStreams:
		return nil, "busy"
	}
	if b.byPeer == nil {
		b.byPeer = make(map[peer.ID]int)
	}
	b.byPeer[p]++
	count := &b.members
	if spectator {
		count = &b.spectators
	}
	*count++
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		*count--
		if b.byPeer[p]--; b.byPeer[p] == 0 {
			delete(b.byPeer, p)
		}
	}, ""
}
