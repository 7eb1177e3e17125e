package wire

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// docExamplePacket is the worked example of docs/protocol.md: member 2 of
// session 0x1234 at 20 Hz (a frame is 500 ticks of 100 µs) sends its 261st
// datagram to a peer with an echo, two commands and a hash report.
func docExamplePacket() Packet {
	return Packet{
		Session: 0x1234, From: 2, Number: 0x0105,
		Sent: 12345, Clock: 12000,
		Seal: 25, Next: 16,
		Ack: 9, AckSeal: 24,
		Lag:     85,
		HasEcho: true, Echo: Echo{Number: 0x0312, Hold: 20},
		Commands: []Command{
			{Frame: 26, Payload: []byte("jump")},
			{Frame: 28, Payload: []byte{0x07, 0xff}},
		},
		HasHash: true, Hash: HashReport{Frame: 20, State: 0x0123456789abcdef, Input: 0xfedcba9876543210},
	}
}

// hexDump formats b as lines of a four-digit hex offset and up to 16 bytes.
func hexDump(b []byte) string {
	var s strings.Builder
	for off := 0; off < len(b); off += 16 {
		line := b[off:min(off+16, len(b))]
		fmt.Fprintf(&s, "%04x  % x\n", off, line)
	}
	return s.String()
}

// TestProtocolDocExample checks the worked example of docs/protocol.md
// against the encoder: the golden dump in testdata must be what Append
// produces, and the document must contain that dump verbatim. Run with
// -update to rewrite the golden file after a deliberate format change, then
// paste it into the document.
func TestProtocolDocExample(t *testing.T) {
	p := docExamplePacket()
	b := mustAppend(t, &p)
	got := hexDump(b)
	golden := filepath.Join("testdata", "protocol_example.hex")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("encoding of the example changed\n got:\n%s\nwant:\n%s", got, want)
	}
	var q Packet
	if err := Parse(b, &q); err != nil || !equalPackets(p, q) {
		t.Fatalf("example does not round-trip: %v\n%+v", err, q)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), got) {
		t.Fatalf("docs/protocol.md does not contain the example's hex dump:\n%s", got)
	}
	if !strings.Contains(string(doc), fmt.Sprintf("(%d bytes)", len(b))) {
		t.Errorf("docs/protocol.md does not state the example's size as (%d bytes)", len(b))
	}
	if !strings.Contains(string(doc), fmt.Sprintf("`Overhead = %d`", Overhead)) {
		t.Errorf("docs/protocol.md does not state `Overhead = %d`", Overhead)
	}
}
