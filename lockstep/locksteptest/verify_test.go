package locksteptest

import (
	"fmt"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// countingVerifier counts the checks it is asked for.
type countingVerifier struct {
	v lockstep.Verifier
	n int
}

func (c *countingVerifier) Verify(m bucket.Slot, msg, sig []byte) bool {
	c.n++
	return c.v.Verify(m, msg, sig)
}

// TestMemoVerifier checks that the shared verifier gives every caller the
// verdict of the real check, checks a signature once while it remembers it,
// and stays bounded.
func TestMemoVerifier(t *testing.T) {
	signers, keys := lockstep.Ed25519Keys(2, []byte("memo"))
	inner := &countingVerifier{v: keys}
	m := newMemoVerifier(inner, 2)
	msg := []byte("statement")
	sig, _ := signers[1].Sign(msg)
	bad := append([]byte(nil), sig...)
	bad[0] ^= 1
	for range 3 {
		if !m.Verify(1, msg, sig) {
			t.Fatal("a good signature failed")
		}
		if m.Verify(1, msg, bad) || m.Verify(0, msg, sig) {
			t.Fatal("a bad signature, or another member's, passed")
		}
	}
	if inner.n != 3 {
		t.Fatalf("%d checks for 3 distinct signatures", inner.n)
	}
	for i := range 10 * m.limit {
		msg := fmt.Appendf(nil, "statement %d", i)
		sig, _ := signers[0].Sign(msg)
		if !m.Verify(0, msg, sig) {
			t.Fatalf("good signature %d failed", i)
		}
	}
	if len(m.cur) > m.limit || len(m.old) > m.limit {
		t.Fatalf("remembers %d and %d verdicts, limit %d each", len(m.cur), len(m.old), m.limit)
	}
}
