package peer

import (
	"testing"

	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// TestProtocolVersionIsTheWireFormat keeps the lobby's protocol version in
// step with the datagram format's: a change of the format is a new version.
func TestProtocolVersionIsTheWireFormat(t *testing.T) {
	if ProtocolVersion != wire.Version {
		t.Fatalf("peer.ProtocolVersion %d, wire.Version %d", ProtocolVersion, wire.Version)
	}
}
