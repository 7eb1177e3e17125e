package lockstep_test

import (
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// The costs of signed streams: one statement signed, one checked, and one
// 32-byte command added to a chain.

func BenchmarkStatementSign(b *testing.B) {
	signers, _ := lockstep.Ed25519Keys(1, []byte("bench"))
	msg := lockstep.AppendStatementMessage(nil, 1, 0, 100, 50, lockstep.Chain{1})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := signers[0].Sign(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStatementVerify(b *testing.B) {
	signers, verifier := lockstep.Ed25519Keys(1, []byte("bench"))
	msg := lockstep.AppendStatementMessage(nil, 1, 0, 100, 50, lockstep.Chain{1})
	sig, _ := signers[0].Sign(msg)
	b.ReportAllocs()
	for b.Loop() {
		if !verifier.Verify(0, msg, sig) {
			b.Fatal("does not verify")
		}
	}
}

func BenchmarkChainNext(b *testing.B) {
	cmd := bucket.Command{Seq: 7, Frame: 100, Payload: make([]byte, 32)}
	var h lockstep.Chain
	b.ReportAllocs()
	for b.Loop() {
		h = lockstep.ChainNext(h, cmd)
	}
}
