package wire

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/internal/golden"
)

// TestGoldenPackets holds the encoding of every packet of testPackets, one
// block type or corner at a time, to the bytes in testdata/packets.golden:
// a change of the encoder that changes one byte fails here. Run with -update
// to rewrite the file after a deliberate, versioned change of the format
// (docs/protocol.md).
func TestGoldenPackets(t *testing.T) {
	var got strings.Builder
	for _, tt := range testPackets() {
		b := mustAppend(t, &tt.p)
		fmt.Fprintf(&got, "# %s (%d bytes)\n%s", tt.name, len(b), golden.HexDump(b))
	}
	golden.Check(t, filepath.Join("testdata", "packets.golden"), []byte(got.String()), *update)
}
