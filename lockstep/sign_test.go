package lockstep_test

import (
	"crypto/ed25519"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// signed returns a tweak that gives each member its seeded Ed25519 key
// and every member's public key.
func signed(members int) func(*lockstep.Config) {
	signers, verifier := lockstep.Ed25519Keys(members, []byte("test"))
	return func(cfg *lockstep.Config) {
		cfg.Signer, cfg.Verifier = signers[cfg.Self], verifier
	}
}

// forgedForward runs five members; member 4's last datagrams reach member
// 0 only, then member 4 fails, so member 0 must relay its last commands to
// the others. forge, when set, rewrites member 0's relays.
func forgedForward(t *testing.T, forge func(*wire.Relay) bool) (*testNet, bool) {
	const (
		onlyTo0 = 3 * time.Second
		dead4   = 3*time.Second + 400*time.Millisecond
	)
	n := newTestNet(t, 5, 11, signed(5))
	n.block = func(now time.Duration, from, to bucket.Slot) bool {
		if from == 4 || to == 4 {
			return now >= dead4 || (from == 4 && to != 0 && now >= onlyTo0)
		}
		return false
	}
	var pkt wire.Packet
	forged := false
	n.rewrite = func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
		if forge == nil || from != 0 || wire.Parse(data, &pkt) != nil || !pkt.HasRelay || pkt.Relay.Member != 4 {
			return data
		}
		if !forge(&pkt.Relay) {
			return data
		}
		forged = true
		out, err := pkt.Append(nil)
		if err != nil {
			panic(err)
		}
		return out
	}
	n.planRandom([]bucket.Slot{0, 1, 2, 3, 4}, 0, dead4, 40*time.Millisecond)
	n.runUntil(dead4 + 2*lockstep.DefaultDropTimeout + 2*time.Second)
	return n, forged
}

// TestSignedRelayHonest: with every member signing, an honest relay of a
// dropped member's commands verifies, and nobody is blamed.
func TestSignedRelayHonest(t *testing.T) {
	n, _ := forgedForward(t, nil)
	for i := range 4 {
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventViolation {
				t.Errorf("member %d blamed an honest member: %v", i, e)
			}
		}
		st := n.cores[i].Stats()
		if st.StatementsVerified == 0 || st.StatementsFailed != 0 || st.StatementsSigned == 0 {
			t.Errorf("member %d: %d statements signed, %d verified, %d failed", i, st.StatementsSigned, st.StatementsVerified, st.StatementsFailed)
		}
		if st.Frame-st.Executed > 2 {
			t.Errorf("member %d stuck: clock frame %d, executed %d", i, st.Frame, st.Executed)
		}
	}
	for i := 1; i < 4; i++ {
		if st := n.cores[i].Stats(); st.Unproven != 0 {
			t.Errorf("member %d accepted %d relayed commands unproven", i, st.Unproven)
		}
	}
	checkSameExecuted(t, n, 0, 1, 2, 3)
}

// TestForgedForwardIsDetected: member 0 alters one byte of a command of
// the dropped member 4 as it forwards it. Members 1 to 3 check member 4's
// signed statement over the relayed commands before taking them in, find
// that it fails, and drop member 0 for a violation that names member 4;
// nobody else is blamed, and they play on identical, having executed only
// commands member 4 really issued.
func TestForgedForwardIsDetected(t *testing.T) {
	n, forged := forgedForward(t, func(rl *wire.Relay) bool {
		for i, c := range rl.Commands {
			if len(c.Payload) > 0 {
				p := slices.Clone(c.Payload)
				p[0] ^= 0x01
				rl.Commands[i].Payload = p
				return true
			}
		}
		return false
	})
	if !forged {
		t.Fatal("member 0 relayed no command of member 4 to alter")
	}
	for i := 1; i < 4; i++ {
		var found bool
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventViolation && e.Member == 0 && strings.HasPrefix(e.Detail, "forgery") && strings.Contains(e.Detail, "member 4") {
				found = true
			}
		}
		if !found {
			t.Errorf("member %d did not name member 0 a forger of member 4: %v", i, n.events[i])
		}
		var dropped bool
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventDrop && e.Member == 0 && e.Reason == lockstep.ReasonViolation {
				dropped = true
			}
		}
		if !dropped {
			t.Errorf("member %d did not drop member 0 for a violation: %v", i, n.events[i])
		}
		if st := n.cores[i].Stats(); st.Frame-st.Executed > 2 || st.StatementsFailed == 0 {
			t.Errorf("member %d: clock frame %d, executed %d, %d statements failed", i, st.Frame, st.Executed, st.StatementsFailed)
		}
	}
	if !errors.Is(n.cores[0].Err(), lockstep.ErrStopped) {
		t.Errorf("the forger did not stop: %v", n.cores[0].Err())
	}
	checkSameExecuted(t, n, 1, 2, 3)
	issued := map[uint32]string{}
	for _, c := range n.submitted {
		if c.slot == 4 {
			issued[c.seq] = c.payload
		}
	}
	for i := 1; i < 4; i++ {
		for _, e := range n.events[i] {
			if e.Type == lockstep.EventViolation && e.Member != 0 {
				t.Errorf("member %d blamed member %d: %v", i, e.Member, e)
			}
		}
		for _, c := range n.executed[i] {
			if c.slot == 4 && issued[c.seq] != c.payload {
				t.Errorf("member %d executed a forged command of member 4: %v", i, c)
			}
		}
	}
}

// checkSameExecuted checks that the members stepped the same commands up
// to the newest frame all of them stepped.
func checkSameExecuted(t *testing.T, n *testNet, members ...int) {
	t.Helper()
	cut := n.last[members[0]]
	for _, m := range members {
		cut = min(cut, n.last[m])
	}
	upTo := func(m int) []cmdRec {
		return slices.DeleteFunc(slices.Clone(n.executed[m]), func(c cmdRec) bool { return c.frame > cut })
	}
	want := upTo(members[0])
	for _, m := range members[1:] {
		if got := upTo(m); !slices.Equal(got, want) {
			t.Errorf("members %d and %d stepped different commands up to frame %d", members[0], m, cut)
		}
	}
	if cut < 100 {
		t.Errorf("members stepped only up to frame %d", cut)
	}
}

// TestStatementMessage pins the signed message and the chain.
func TestStatementMessage(t *testing.T) {
	h := lockstep.ChainNext(lockstep.Chain{}, bucket.Command{Seq: 0, Frame: 5, Payload: []byte("move")})
	msg := lockstep.AppendStatementMessage(nil, 0x0102, 3, 5, 1, h)
	if len(msg) != lockstep.StatementMessageSize || string(msg[:8]) != "PHXSTMT1" || msg[8] != 0x02 || msg[9] != 0x01 || msg[10] != 3 {
		t.Fatalf("message % x", msg)
	}
	signers, verifier := lockstep.Ed25519Keys(2, []byte("test"))
	sig, _ := signers[1].Sign(msg)
	if len(sig) != ed25519.SignatureSize || !verifier.Verify(1, msg, sig) || verifier.Verify(0, msg, sig) || verifier.Verify(7, msg, sig) {
		t.Fatal("signature does not verify for its member only")
	}
	other := lockstep.ChainNext(lockstep.Chain{}, bucket.Command{Seq: 0, Frame: 5, Payload: []byte("mope")})
	if verifier.Verify(1, lockstep.AppendStatementMessage(nil, 0x0102, 3, 5, 1, other), sig) {
		t.Fatal("signature verifies over an altered command")
	}
}
