package locksteptest

import (
	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// verifyMemory bounds the verdicts a memoVerifier keeps: when full it
// forgets them all and starts over.
const verifyMemory = 1 << 14

// memoVerifier is the members' shared verifier in one harness: every member
// checks every other member's statements, so each signature reaches it once
// per member, and it checks each (member, message, signature) once and
// remembers the verdict. A verdict is a pure function of the three, so the
// result is what each member would have found itself. Not safe for
// concurrent use: the harness runs its members on one goroutine.
type memoVerifier struct {
	v       lockstep.Verifier
	key     []byte
	verdict map[string]bool
}

func newMemoVerifier(v lockstep.Verifier) *memoVerifier {
	return &memoVerifier{v: v, verdict: make(map[string]bool)}
}

// Verify reports whether sig is member's signature of msg.
func (m *memoVerifier) Verify(member bucket.Slot, msg, sig []byte) bool {
	m.key = append(append(append(m.key[:0], byte(member), byte(len(msg)), byte(len(msg)>>8)), msg...), sig...)
	if ok, seen := m.verdict[string(m.key)]; seen {
		return ok
	}
	ok := m.v.Verify(member, msg, sig)
	if len(m.verdict) >= verifyMemory {
		clear(m.verdict)
	}
	m.verdict[string(m.key)] = ok
	return ok
}
