package peer

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/lockstep"
)

// ErrInvalidAddr is returned for a member address that does not parse.
var ErrInvalidAddr = errors.New("peer: invalid member address")

// AddrInfo is a member's peer ID and addresses: libp2p's, named here so that
// a game need not import libp2p's peer package beside this one.
type AddrInfo = peer.AddrInfo

// ParseAddrs parses member addresses as phalanx peer prints them and takes
// them with --join: multiaddrs ending in the peer ID,
// "/ip4/198.18.0.2/udp/4001/quic-v1/p2p/12D3KooW…". It returns an error
// wrapping ErrInvalidAddr naming the first address that does not parse.
func ParseAddrs(addrs ...string) ([]AddrInfo, error) {
	out := make([]AddrInfo, 0, len(addrs))
	for _, a := range addrs {
		ai, err := peer.AddrInfoFromString(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", ErrInvalidAddr, a, err)
		}
		out = append(out, *ai)
	}
	return out, nil
}

// CoreConfig returns the core configuration the members agreed on in the
// lobby (members, this member's slot, the session tag, the frame length,
// the initial delay and the open slots) with the clock it is set against: the time since
// the call, so that Start is when frame 0 begins on it. Callers change the
// policy, timeouts and limits on the result; the agreed fields must stay
// as they are on every member.
func (s *Agreement) CoreConfig() (lockstep.Config, func() time.Duration) {
	origin := time.Now()
	clock := func() time.Duration { return time.Since(origin) }
	return lockstep.Config{
		Members:      len(s.Members),
		Self:         s.Self,
		Session:      s.Tag(),
		Start:        s.Start.Sub(origin),
		Frame:        s.Frame(),
		InitialDelay: s.Params.InitialDelay,
		Open:         s.Open(),
	}, clock
}
