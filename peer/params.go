package peer

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/rng"
)

// SessionParams describe a session. Every member must join with the same
// parameters; [Join] refuses a peer whose parameters differ.
type SessionParams struct {
	SessionID       string `json:"session_id"`       // names the session; 1..128 bytes
	ProtocolVersion int    `json:"protocol_version"` // 0 means ProtocolVersion
	FrameMillis     int    `json:"frame_ms"`         // frame length in milliseconds; 0 means DefaultFrameMillis
	Members         int    `json:"members"`          // expected member count, 1..bucket.MaxMembers
	Sim             string `json:"sim"`              // simulation name, at most 64 bytes
	SimVersion      string `json:"sim_version"`      // simulation version, at most 64 bytes
	InitialDelay    int    `json:"initial_delay"`    // lockstep.Config.InitialDelay every member uses; 0 means its default
	// Frames is the session's agreed length: every member steps frames 0
	// to Frames-1 and then ends it (see MemberConfig); 0 means no agreed
	// end.
	Frames int `json:"frames,omitempty"`
	// Slots is the session's number of slots: Members start it, and the
	// slots Members to Slots-1 are open for late joiners (see
	// MemberConfig.Rejoin and seats.go); 0 or Members means none open.
	Slots int `json:"slots,omitempty"`
	// Allowed, when not empty, are the only peer IDs (text) that may take
	// an open slot; empty, anyone may. Members must list the same IDs in
	// the same order.
	Allowed []string `json:"allowed,omitempty"`
}

// sameParams reports whether a and b describe the same session.
func sameParams(a, b SessionParams) bool { return compareParams(a, b, "") == nil }

// slots returns the session's number of slots, open ones included.
func (p SessionParams) slots() int { return max(p.Slots, p.Members) }

func (p SessionParams) withDefaults() SessionParams {
	if p.ProtocolVersion == 0 {
		p.ProtocolVersion = ProtocolVersion
	}
	if p.FrameMillis == 0 {
		p.FrameMillis = DefaultFrameMillis
	}
	if p.Slots == p.Members {
		p.Slots = 0 // no open slot: a hello as before open slots
	}
	return p
}

func (p SessionParams) validate() error {
	switch {
	case p.SessionID == "" || len(p.SessionID) > 128:
		return fmt.Errorf("%w: session ID %q must be 1..128 bytes", ErrInvalidParams, p.SessionID)
	case p.ProtocolVersion < 0:
		return fmt.Errorf("%w: protocol version %d", ErrInvalidParams, p.ProtocolVersion)
	case p.FrameMillis < 0 || p.FrameMillis > 10_000:
		return fmt.Errorf("%w: frame length %d ms outside 1..10000", ErrInvalidParams, p.FrameMillis)
	case p.Members < 1 || p.Members > bucket.MaxMembers:
		return fmt.Errorf("%w: %d members, want 1..%d", ErrInvalidParams, p.Members, bucket.MaxMembers)
	case len(p.Sim) > 64 || len(p.SimVersion) > 64:
		return fmt.Errorf("%w: simulation name or version longer than 64 bytes", ErrInvalidParams)
	case p.InitialDelay < 0:
		return fmt.Errorf("%w: initial delay %d", ErrInvalidParams, p.InitialDelay)
	case p.Frames < 0:
		return fmt.Errorf("%w: %d frames", ErrInvalidParams, p.Frames)
	case p.Slots != 0 && (p.Slots < p.Members || p.Slots > bucket.MaxMembers):
		return fmt.Errorf("%w: %d slots for %d members, want %d..%d", ErrInvalidParams, p.Slots, p.Members, p.Members, bucket.MaxMembers)
	case len(p.Allowed) > 0 && p.slots() == p.Members:
		return fmt.Errorf("%w: peers allowed into a session without open slots", ErrInvalidParams)
	case len(p.Allowed) > bucket.MaxMembers:
		return fmt.Errorf("%w: %d peers allowed, at most %d", ErrInvalidParams, len(p.Allowed), bucket.MaxMembers)
	}
	for _, a := range p.Allowed {
		if _, err := peer.Decode(a); err != nil {
			return fmt.Errorf("%w: allowed peer %q: %v", ErrInvalidParams, a, err)
		}
	}
	return nil
}

// Agreement is what the members of a session agreed in the lobby. Every
// member holds the same ID, Params, Seed, Members and Endpoints; Self and
// Start are each member's own.
type Agreement struct {
	ID     string
	Params SessionParams // with defaults applied

	// Seed is the shared seed: rng.SharedSeed of every member's
	// contribution, each checked against its commitment.
	Seed rng.Seed

	// Members are the members' peer IDs by slot: the Params.Members that
	// started the session sorted by their bytes (the binary multihash; for
	// Ed25519 identities this is also the order of their text form), then
	// one empty ID per open slot (Params.Slots). A member's slot is its
	// index here. Who took an open slot since is in the seats (Member,
	// Slot).
	Members []peer.ID

	// Self is this member's slot.
	Self bucket.Slot

	// Start is when frame 0 begins, on this member's clock (it carries a
	// monotonic reading). The coordinator, Members[0], announced it as a
	// wall-clock instant; members' wall clocks are assumed synchronized.
	Start time.Time

	// Endpoints are the members' datagram channel addresses, by slot.
	Endpoints []netip.AddrPort

	// seats holds who took the open slots: shared by copies of the
	// Agreement, safe for concurrent use; nil when none is open.
	seats *seatTable
}

// Slot returns the slot of member id, and false if id is not a member:
// neither one that started the session nor one that took an open slot.
// Safe for concurrent use.
func (s *Agreement) Slot(id peer.ID) (bucket.Slot, bool) {
	if id == "" {
		return 0, false
	}
	started := s.started()
	if i, ok := slices.BinarySearch(s.Members[:started], id); ok {
		return bucket.Slot(i), true
	}
	for i := started; i < len(s.Members); i++ {
		if s.Member(bucket.Slot(i)) == id {
			return bucket.Slot(i), true
		}
	}
	return 0, false
}

// isMember reports whether id is a member (Slot).
func (s *Agreement) isMember(id peer.ID) bool {
	_, ok := s.Slot(id)
	return ok
}

// started returns how many members started the session: the slots before
// the open ones.
func (s *Agreement) started() int {
	if s.Params.Members <= 0 || s.Params.Members > len(s.Members) {
		return len(s.Members)
	}
	return s.Params.Members
}

// Coordinator returns the member that announced the start time: the lowest
// peer ID.
func (s *Agreement) Coordinator() peer.ID { return s.Members[0] }

// Frame returns the frame length.
func (s *Agreement) Frame() time.Duration {
	return time.Duration(s.Params.FrameMillis) * time.Millisecond
}

// Tag returns the 16-bit session tag for lockstep.Config.Session, derived
// from the seed: SHA-256("phalanx-session-tag" || seed), first two bytes,
// big-endian. Every member computes the same tag.
func (s *Agreement) Tag() uint16 {
	h := sha256.New()
	h.Write([]byte("phalanx-session-tag"))
	h.Write(s.Seed[:])
	return binary.BigEndian.Uint16(h.Sum(nil))
}
