package peer

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
)

// Open slots: a session started with SessionParams.Slots above Members
// holds the slots Members to Slots-1 open for late joiners. Their cores
// start with those slots open (lockstep.Config.Open): counted as members
// dropped before frame 0, until admitted.
//
// A late joiner (MemberConfig.Rejoin with an identity no member had) asks
// the live members for the session over the catch-up protocol and, in the
// same info request, claims the lowest open slot the first member it asked
// holds free (catchupRequest.Claim). Each member gives it the slot when
// the slot is free (or the joiner's already) and the joiner's peer ID is
// allowed (SessionParams.Allowed, when set); from then on the member's
// gater, catch-up server and datagram channel take the joiner as the
// member of that slot, and its core admits it by the agreement every
// admission goes through. A slot once taken stays taken for the session:
// the identity that took it may come back into it later, as any member
// may.

// Errors of late joiners.
var (
	// ErrNoOpenSlot is the error of a late joiner that found no open slot
	// it may take: none left, or its peer ID is not allowed.
	ErrNoOpenSlot = errors.New("peer: no open slot for this identity")
)

// seatTable records who took each open slot. It is safe for concurrent
// use.
type seatTable struct {
	first   int       // the first open slot
	allowed []peer.ID // who may take one; empty: anyone

	mu     sync.Mutex
	holder []peer.ID // by open slot - first; "" free
	// endpoint is the datagram address the member of an open slot named
	// last in an info request (invalid: none yet), reported to those who
	// ask, so that a later joiner finds it.
	endpoint []netip.AddrPort
}

// newSeats returns the seats of a session of params, or nil without open
// slots; params must be valid.
func newSeats(params SessionParams) *seatTable {
	if params.slots() == params.Members {
		return nil
	}
	open := params.slots() - params.Members
	t := &seatTable{first: params.Members, holder: make([]peer.ID, open), endpoint: make([]netip.AddrPort, open)}
	for _, a := range params.Allowed {
		id, _ := peer.Decode(a) // validated
		t.allowed = append(t.allowed, id)
	}
	return t
}

// mayTake reports whether id may take an open slot.
func (t *seatTable) mayTake(id peer.ID) bool {
	return t != nil && (len(t.allowed) == 0 || slices.Contains(t.allowed, id))
}

// Member returns the peer ID of the member of slot, "" for an open slot
// nobody took (or a slot outside the session). Safe for concurrent use.
func (s *Agreement) Member(slot bucket.Slot) peer.ID {
	if int(slot) >= len(s.Members) {
		return ""
	}
	if id := s.Members[slot]; id != "" || s.seats == nil {
		return id
	}
	t := s.seats
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := int(slot) - t.first; i >= 0 && i < len(t.holder) {
		return t.holder[i]
	}
	return ""
}

// Open returns the slots open at the start (lockstep.Config.Open's mask).
func (s *Agreement) Open() uint64 {
	var open uint64
	for i := min(s.Params.Members, len(s.Members)); i < len(s.Members); i++ {
		open |= 1 << i
	}
	return open
}

// freeSlots returns the open slots nobody took, as a mask, when id may take
// one (none otherwise).
func (s *Agreement) freeSlots(id peer.ID) uint64 {
	t := s.seats
	if !t.mayTake(id) {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var free uint64
	for i, h := range t.holder {
		if h == "" && s.Members[t.first+i] == "" {
			free |= 1 << (t.first + i)
		}
	}
	return free
}

// claim gives open slot to id, if it is free (or id's already) and id may
// take it.
func (s *Agreement) claim(slot bucket.Slot, id peer.ID) error {
	t := s.seats
	if !t.mayTake(id) {
		return fmt.Errorf("%w: %s is not allowed into an open slot", ErrNoOpenSlot, id)
	}
	// Whether id holds a slot already is read under the lock that gives
	// one: two claims of one identity at once take one slot at most.
	t.mu.Lock()
	defer t.mu.Unlock()
	for j, m := range s.Members {
		other := bucket.Slot(j)
		if k := j - t.first; m == "" && k >= 0 && k < len(t.holder) {
			m = t.holder[k]
		}
		switch {
		case m != id:
		case other == slot:
			return nil
		default:
			return fmt.Errorf("%w: %s already holds slot %d", ErrNoOpenSlot, id, other)
		}
	}
	i := int(slot) - t.first
	switch {
	case i < 0 || i >= len(t.holder) || s.Members[slot] != "":
		return fmt.Errorf("%w: slot %d is not open", ErrNoOpenSlot, slot)
	case t.holder[i] != "" && t.holder[i] != id:
		return fmt.Errorf("%w: slot %d is taken", ErrNoOpenSlot, slot)
	}
	t.holder[i] = id
	return nil
}

// noteEndpoint records ap as the datagram address of id, the member of
// open slot slot; anything else is ignored.
func (s *Agreement) noteEndpoint(slot bucket.Slot, id peer.ID, ap netip.AddrPort) {
	t := s.seats
	if t == nil || !ap.IsValid() || s.Member(slot) != id {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := int(slot) - t.first; i >= 0 && i < len(t.endpoint) {
		t.endpoint[i] = ap
	}
}

// endpoint returns the datagram address of the member of slot: for an
// open slot the one it named last (noteEndpoint), else the one agreed.
func (s *Agreement) endpoint(slot bucket.Slot) netip.AddrPort {
	if t := s.seats; t != nil {
		t.mu.Lock()
		i := int(slot) - t.first
		var ap netip.AddrPort
		if i >= 0 && i < len(t.endpoint) {
			ap = t.endpoint[i]
		}
		t.mu.Unlock()
		if ap.IsValid() {
			return ap
		}
	}
	if int(slot) < len(s.Endpoints) {
		return s.Endpoints[slot]
	}
	return netip.AddrPort{}
}
