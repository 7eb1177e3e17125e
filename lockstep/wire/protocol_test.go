package wire

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/phalanx-net/phalanx/internal/golden"
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

// TestProtocolDocExample checks the worked example of docs/protocol.md
// against the encoder: the golden dump in testdata must be what Append
// produces, and the document must contain that dump verbatim. Run with
// -update to rewrite the golden file after a deliberate format change, then
// paste it into the document.
func TestProtocolDocExample(t *testing.T) {
	p := docExamplePacket()
	b := mustAppend(t, &p)
	got := golden.HexDump(b)
	golden.Check(t, filepath.Join("testdata", "protocol_example.hex"), []byte(got), *update)
	var q Packet
	if err := Parse(b, &q); err != nil || !equalPackets(p, q) {
		t.Fatalf("example does not round-trip: %v\n%+v", err, q)
	}
	golden.InDoc(t, filepath.Join("..", "..", "docs", "protocol.md"), got, fmt.Sprintf("(%d bytes)", len(b)), fmt.Sprintf("`Overhead = %d`", Overhead))
}
