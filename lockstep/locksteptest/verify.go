package locksteptest

import (
	"sync"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// memoVerifier is the members' shared verifier in one harness: every member
// checks every other member's statements, so each signature reaches it once
// per member, soon after it was made; it checks each (member, message,
// signature) once and remembers the verdict for a while. A verdict is a
// pure function of the three, so the result is what each member would have
// found itself. What it remembers is bounded (two generations of at most
// limit verdicts each), so a long run holds no more than a short one. It is
// safe for concurrent use: members run side by side within windows
// (window.go).
type memoVerifier struct {
	mu       sync.Mutex
	v        lockstep.Verifier
	limit    int
	key      []byte
	cur, old map[string]bool
}

// newMemoVerifier remembers verdicts for members members: 16 statements
// each per generation.
func newMemoVerifier(v lockstep.Verifier, members int) *memoVerifier {
	return &memoVerifier{v: v, limit: 16 * max(members, 4), cur: make(map[string]bool), old: make(map[string]bool)}
}

// Verify reports whether sig is member's signature of msg.
func (m *memoVerifier) Verify(member bucket.Slot, msg, sig []byte) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.key = append(append(append(m.key[:0], byte(member), byte(len(msg)), byte(len(msg)>>8)), msg...), sig...)
	if ok, seen := m.cur[string(m.key)]; seen {
		return ok
	}
	ok, seen := m.old[string(m.key)]
	if !seen {
		ok = m.v.Verify(member, msg, sig)
	}
	if len(m.cur) >= m.limit {
		m.old, m.cur = m.cur, m.old
		clear(m.cur)
	}
	m.cur[string(m.key)] = ok
	return ok
}
