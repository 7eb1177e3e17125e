package lockstep

import (
	"fmt"
	"strings"
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// A relayed statement that contradicts what we hold of member 3 blames
// whom it proves at fault, and nobody else (contradicted): member 3 when
// it signed it over commands it gave us itself or signed to us, the
// forwarder when the rest came through its relays alone and its first
// relay started on our chain, nobody when others forwarded too or the
// signature is not known to be member 3's.
func TestContradictedBlamesOnlyWithProof(t *testing.T) {
	const m = 3
	for _, tt := range []struct {
		name      string
		relayed   bool // commands of m reached us by relay, from own on
		own       uint32
		relayerOK bool
		proven    uint32 // count of m's newest statement we verified, 0 for none
		from      bucket.Slot
		p         uint32 // how many of the commands we hold it contradicts
		signed    bool
		want      string
	}{
		{"signed over what m gave us", false, 0, false, 0, 1, 20, true, "equivocation of 3"},
		{"signed over m's and relayed commands", true, 15, true, 0, 1, 20, true, "forgery of 1"},
		{"signed below the relayed span", true, 25, true, 0, 1, 20, true, "equivocation of 3"},
		{"signed below what m signed to us", true, 15, false, 22, 2, 20, true, "equivocation of 3"},
		{"another forwarder's span", true, 15, true, 0, 2, 20, true, ""},
		{"a mixed span", true, 15, false, 0, 1, 20, true, ""},
		{"unsigned over what m gave us", false, 0, false, 0, 1, 20, false, ""},
		{"unsigned over the relayer's span", true, 15, true, 0, 1, 20, false, "forgery of 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			signers, verifier := Ed25519Keys(4, []byte("test"))
			c, err := NewCore(Config{Members: 4, Self: 0, Signer: signers[0], Verifier: verifier}, 0)
			if err != nil {
				t.Fatal(err)
			}
			c.suspected |= 1 << m // being dropped, as every relayed member is
			c.chainCounts[m] = 30
			cs := &c.chains[m]
			cs.relayed, cs.own, cs.relayer, cs.relayerOK = tt.relayed, tt.own, 1, tt.relayerOK
			if tt.proven > 0 {
				cs.proven, cs.hasProven = wire.Statement{Seal: 10, Count: tt.proven}, true
			}
			blamed := c.contradicted(0, m, tt.from, wire.Statement{Seal: 12, Count: tt.p}, tt.p, tt.signed)
			got := ""
			for _, e := range c.out.Events {
				if rule, _, _ := strings.Cut(e.Detail, ":"); e.Type == EventViolation {
					got += fmt.Sprintf("%s of %d", rule, e.Member)
				}
			}
			if got != tt.want || blamed != (tt.want == fmt.Sprintf("forgery of %d", tt.from)) {
				t.Errorf("events %v (forwarder blamed %v), want %q", c.out.Events, blamed, tt.want)
			}
			if !cs.broken || c.stats.StatementsFailed != 1 {
				t.Errorf("chain broken %v, %d statements failed", cs.broken, c.stats.StatementsFailed)
			}
		})
	}
}
