package wire

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		fmt.Fprintf(&got, "# %s (%d bytes)\n%s", tt.name, len(b), hexDump(b))
	}
	golden := filepath.Join("testdata", "packets.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		g, w := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("encoding changed at line %d of %s:\n got: %s\nwant: %s", i+1, golden, g[i], w[i])
			}
		}
		t.Fatalf("encoding changed: %d lines, %s has %d", len(g), golden, len(w))
	}
}
