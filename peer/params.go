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
}

func (p SessionParams) withDefaults() SessionParams {
	if p.ProtocolVersion == 0 {
		p.ProtocolVersion = ProtocolVersion
	}
	if p.FrameMillis == 0 {
		p.FrameMillis = DefaultFrameMillis
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

	// Members are the members' peer IDs sorted by their bytes (the binary
	// multihash; for Ed25519 identities this is also the order of their
	// text form). A member's slot is its index here.
	Members []peer.ID

	// Self is this member's slot.
	Self bucket.Slot

	// Start is when frame 0 begins, on this member's clock (it carries a
	// monotonic reading). The coordinator, Members[0], announced it as a
	// wall-clock instant; members' wall clocks are assumed synchronized.
	Start time.Time

	// Endpoints are the members' datagram channel addresses, by slot.
	Endpoints []netip.AddrPort
}

// Slot returns the slot of member id, and false if id is not a member.
func (s *Agreement) Slot(id peer.ID) (bucket.Slot, bool) {
	i, ok := slices.BinarySearch(s.Members, id)
	return bucket.Slot(i), ok
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
