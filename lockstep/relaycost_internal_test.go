package lockstep

import (
	"testing"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// A forwarder that repeats one genuine relay of member 2's commands with
// its statement costs us at most one signature check, not one per copy:
// when our chain of member 2 is broken (a joiner's, or after a
// contradiction) and when the relay starts past what we hold (a gap that
// never fills), nothing of it enters and nothing is compared.
func TestRepeatedRelayIsCheckedOnce(t *testing.T) {
	const m, repeats = 2, 1000
	for _, tc := range []struct {
		name   string
		broken bool
		first  uint32
		most   int64 // signatures verified
	}{
		{"broken chain", true, 0, 1},
		{"past a gap", false, 5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r, cmds, chains, sig := relayedMember(t, m)
			atFirst := chains[tc.first]
			c.chains[m].broken = tc.broken
			for range repeats {
				rl := wire.Relay{Member: m, First: tc.first, Seal: 30, Commands: cmds[tc.first:], HasStatement: true,
					Statement: wire.Statement{Seal: 30, Count: 10, Signature: sig}, Chain: atFirst}
				c.onRelay(0, r, &rl)
			}
			if c.stats.StatementsVerified > tc.most || c.stats.Violations != 0 || !c.live(0) {
				t.Errorf("%d identical relays: %d signatures verified (want at most %d), %d violations, forwarder live %v",
					repeats, c.stats.StatementsVerified, tc.most, c.stats.Violations, c.live(0))
			}
		})
	}
}

// A relay, and the statement and chain that go with it, join a datagram
// only as far as it has room: whatever our own part of it takes, the
// datagram stays within MaxDatagramSize and decodes (a datagram past it
// is refused whole, our own commands with it).
func TestRelayFitsTheDatagram(t *testing.T) {
	const m = 2
	c, r, cmds, _, sig := relayedMember(t, m)
	c.onRelay(0, r, &wire.Relay{Member: m, Seal: 30, Commands: cmds, HasStatement: true, Statement: wire.Statement{Seal: 30, Count: 10, Signature: sig}})
	if _, ok := c.ProvenStatement(m); !ok || c.table.Stream(m).Next() != 10 {
		t.Fatalf("the relay was not taken: next %d", c.table.Stream(m).Next())
	}
	// Member 0 now says it holds nothing of member 2: we relay to it.
	r.views[m] = wire.MemberView{Next: 0, Seal: -1}
	relayed := 0
	for own := 900; own <= c.cfg.MaxDatagramSize; own++ {
		// Our own part: commands of up to 500 bytes filling own bytes.
		p := wire.Packet{Session: c.cfg.Session, From: 1, AckSeal: -1, Seal: 4}
		for p.Length() < own {
			p.Commands = append(p.Commands, wire.Command{Frame: 5})
			last := &p.Commands[len(p.Commands)-1]
			for p.Length() < own && len(last.Payload) < 500 {
				last.Payload = append(last.Payload, 0)
			}
		}
		p.Next = uint16(len(p.Commands))
		if p.Length() != own {
			continue // a length prefix grew past it
		}
		c.relayTo(&p, r)
		if p.HasRelay {
			relayed++
		}
		data, err := p.Append(nil)
		var q wire.Packet
		if err == nil {
			err = wire.Parse(data, &q)
		}
		if p.Length() > c.cfg.MaxDatagramSize || err != nil {
			t.Fatalf("own part of %d bytes: the datagram has %d with the relay (%d commands, statement %v): %v", own, p.Length(), len(p.Relay.Commands), p.Relay.HasStatement, err)
		}
	}
	if relayed == 0 {
		t.Error("no datagram carried the relay")
	}
}

// relayedMember returns a core of member 1 of three that suspects member
// m, with member 0 holding more of m than it (its view: 100 commands, seal
// 50); ten commands of m (frames 20 to 29), m's chains after 0 to 10 of
// them, and m's signature over the ten with seal 30.
func relayedMember(t *testing.T, m bucket.Slot) (c *Core, r *remote, cmds []wire.Command, chains [11]Chain, sig []byte) {
	t.Helper()
	signers, verifier := Ed25519Keys(3, []byte("test"))
	c, err := NewCore(Config{Members: 3, Self: 1, Signer: signers[1], Verifier: verifier}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.suspected |= 1 << m
	r = c.peers[0]
	r.hasView, r.mask = true, 1<<m
	r.views[m] = wire.MemberView{Next: 100, Seal: 50}
	for seq := range uint32(10) {
		wc := wire.Command{Frame: bucket.Frame(seq + 20), Payload: []byte{byte(seq)}}
		cmds = append(cmds, wc)
		chains[seq+1] = ChainNext(chains[seq], bucket.Command{Slot: m, Seq: seq, Frame: wc.Frame, Payload: wc.Payload})
	}
	sig, err = signers[m].Sign(AppendStatementMessage(nil, c.cfg.Session, m, 30, 10, chains[10]))
	if err != nil {
		t.Fatal(err)
	}
	return c, r, cmds, chains, sig
}
