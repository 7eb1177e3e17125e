package wire

import (
	"bytes"
	"errors"
	"testing"
)

// TestStatementLayout pins the extension blocks byte by byte, as
// docs/protocol.md describes them.
func TestStatementLayout(t *testing.T) {
	sig := bytes.Repeat([]byte{0x5a}, 64)
	chain := bytes.Repeat([]byte{0xc3}, ChainSize)
	p := Packet{Seal: 9, AckSeal: 9, HasRelay: true, Relay: Relay{Member: 2, First: 4, Seal: 7,
		HasStatement: true, Statement: Statement{Seal: 6, Count: 4, Signature: sig}, Chain: [ChainSize]byte(chain)},
		HasStatement: true, Statement: Statement{Seal: 9, Count: 300, Signature: sig}}
	b := mustAppend(t, &p)
	own := cat([]byte{0x01}, uv(10), uv(300), uv(64), sig)
	relayed := cat([]byte{0x02}, uv(7), uv(4), uv(64), sig, chain)
	if !bytes.HasSuffix(b, cat(own, relayed)) {
		t.Fatalf("datagram ends % x\nwant % x", b[len(b)-len(own)-len(relayed):], cat(own, relayed))
	}
	if n := StatementLength(p.Statement); n != len(own) {
		t.Fatalf("StatementLength %d, want %d", n, len(own))
	}
	if n := StatementLength(p.Relay.Statement) + ChainSize; n != len(relayed) || p.Length() != len(b) {
		t.Fatalf("relay statement takes %d bytes, want %d; Length %d, encoded %d", n, len(relayed), p.Length(), len(b))
	}
	var q Packet
	if err := Parse(b, &q); err != nil || !q.Relay.HasStatement || q.Relay.Chain != p.Relay.Chain {
		t.Fatalf("Parse: %v, relay chain % x", err, q.Relay.Chain)
	}
}

func TestStatementErrors(t *testing.T) {
	base := cat(header(0), timing)
	relay := cat(header(flagRelay), timing, []byte{3}, uv(9), uv(10), []byte{0x00})
	stmt := func(tag byte, sigLen uint64) []byte {
		return cat([]byte{tag}, uv(5), uv(2), uv(sigLen), bytes.Repeat([]byte{1}, int(sigLen)))
	}
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"unknown tag", cat(base, []byte{0x04})},
		{"tag zero", cat(base, []byte{0x00})},
		{"relay statement without a relay", cat(base, stmt(0x02, 64))},
		{"tags out of order", cat(relay, stmt(0x02, 64), stmt(0x01, 64))},
		{"tag repeated", cat(base, stmt(0x01, 64), stmt(0x01, 64))},
		{"signature too long", cat(base, stmt(0x01, MaxSignatureSize+1))},
		{"signature cut off", cat(base, stmt(0x01, 64))[:len(base)+20]},
		{"relay statement without its chain", cat(relay, stmt(0x02, 64))},
		{"relay chain cut off", cat(relay, stmt(0x02, 64), make([]byte, ChainSize-1))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p Packet
			if err := Parse(tt.in, &p); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse: %v, want ErrMalformed", err)
			}
		})
	}
	for _, in := range [][]byte{cat(base, stmt(0x01, 64)), cat(relay, stmt(0x01, 0), stmt(0x02, 64), make([]byte, ChainSize))} {
		var p Packet
		if err := Parse(in, &p); err != nil {
			t.Fatalf("Parse of a valid statement: %v", err)
		}
	}
	p := Packet{HasStatement: true, Statement: Statement{Seal: 1, Signature: make([]byte, MaxSignatureSize+1)}}
	if _, err := p.Append(nil); err == nil {
		t.Fatal("Append accepted a signature past MaxSignatureSize")
	}
}
