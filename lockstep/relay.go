package lockstep

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/cmdstream"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Relays: while a suspect is being dropped, members that hold more of its
// stream send those that hold less its commands and seal (relayTo), and
// receivers take them in within what the relayer's own view says it holds
// (onRelay); signed statements go with them (sign.go).

// onRelay takes in commands of a suspect relayed by member r. A relay must
// stay within what r's own membership view says it holds of the suspect, and
// within the window and the limits per frame; anything else is a violation.
// (A member that lies about another's commands within those bounds cannot be
// caught here, as commands carry no signature of their author; the members'
// input hashes then differ and every member reports the desync.)
func (c *Core) onRelay(now time.Duration, r *remote, rl *wire.Relay) {
	m := rl.Member
	if int(m) >= c.cfg.Members || m == c.self || c.live(m) || c.finalized&(1<<m) != 0 {
		return // not one we are dropping: nothing to learn
	}
	n := uint32(len(rl.Commands))
	limit := c.windowEnd()
	switch {
	case !r.hasView || r.mask&(1<<m) == 0:
		c.violation(now, r.slot, "relay", fmt.Sprintf("relays member %d without naming it in its membership view", m))
		return
	case rl.First > ^uint32(0)-n || rl.First+n > r.views[m].Next || rl.Seal > r.views[m].Seal:
		c.violation(now, r.slot, "relay", fmt.Sprintf("relays member %d beyond what it holds (seal %d, next %d)", m, r.views[m].Seal, r.views[m].Next))
		return
	case rl.Seal > limit:
		c.violation(now, r.slot, "relay", fmt.Sprintf("relayed seal %d of member %d outside the window (executed %d)", rl.Seal, m, c.executed))
		return
	}
	check, onOurs := c.preverifyRelay(now, r.slot, rl)
	if check == relayForged {
		return // forged: nothing of it enters m's stream
	}
	s := c.table.Stream(m)
	before := s.Next()
	c.noteRelayed(r.slot, rl, before, onOurs)
	for i, wc := range rl.Commands {
		seq := rl.First + uint32(i)
		if wc.Frame > limit {
			c.violation(now, r.slot, "relay", fmt.Sprintf("relayed command %d of member %d at frame %d outside the window", seq, m, wc.Frame))
			return
		}
		if len(wc.Payload) > c.cfg.MaxCommandSize {
			c.violation(now, r.slot, "relay", fmt.Sprintf("relayed command %d of member %d has %d bytes, limit %d", seq, m, len(wc.Payload), c.cfg.MaxCommandSize))
			return
		}
		cmd := bucket.Command{Slot: m, Seq: seq, Frame: wc.Frame, Payload: c.heldPayload(seq, s.Next(), wc.Payload)}
		if _, err := s.Insert(cmd); err != nil {
			if errors.Is(err, cmdstream.ErrConflict) {
				// It differs from the command we hold: m may have
				// given r and us different commands (equivocation,
				// sign.go), so it proves nothing of r. We keep ours.
				c.chains[m].relayerOK = false
				continue
			}
			if errors.Is(err, cmdstream.ErrUnderSeal) {
				// The seal we hold of m came from m itself or from
				// another relay: it proves nothing of r.
				c.chains[m].relayerOK = false
				break
			}
			c.violation(now, r.slot, "relay", fmt.Sprintf("relayed command %d of member %d: %v", seq, m, err))
			return
		}
	}
	if detail := c.countFrames(m, before); detail != "" {
		c.violation(now, r.slot, "relay", fmt.Sprintf("relayed commands of member %d: %s", m, detail))
		return
	}
	s.Promise(rl.Seal, rl.First+n)
	c.signedRelay(now, r.slot, rl, check)
}

// relayTo fills p's relay block with what we hold of a suspect beyond what
// r holds: commands, or our seal alone. It relays dropped members too, as
// long as r lacks their stream up to the agreed frame.
func (c *Core) relayTo(p *wire.Packet, r *remote) {
	if !r.hasView {
		return
	}
	pending := c.suspected & r.mask
	for pending != 0 {
		m := bucket.Slot(bits.TrailingZeros64(pending))
		pending &^= 1 << m
		theirs := r.views[m]
		s := c.table.Stream(m)
		seal := c.holds(m)
		if s.Next() <= theirs.Next && seal <= theirs.Seal {
			continue
		}
		if c.finalized&(1<<m) != 0 && theirs.Seal >= c.table.Closed(m) {
			// r holds m's stream up to the agreed frame: what we hold
			// past it counts for nobody, and relaying it would take the
			// place of another suspect's relay in every datagram.
			continue
		}
		first := min(theirs.Next, s.Next()) // our seal holds for our prefix
		if first < s.Base() {
			continue // trimmed: someone else must relay
		}
		cmds := s.Since(first)
		rel := wire.Relay{Member: m, First: first, Seal: seal, Commands: p.Relay.Commands[:0]}
		budget := c.cfg.MaxDatagramSize - p.Length() - 32
		if budget < 0 {
			return // not even a relay's header fits this datagram
		}
		// The member's newest statement we verified goes with its commands,
		// with our chain of it where the relay starts (or the statement
		// ends, if it covers less), so the receiver can check what we
		// forward by the relay alone (sign.go), if the datagram has room
		// for them. Without that chain (too old to remember: chainRing)
		// the commands go unproven.
		if st, ok := c.ProvenStatement(m); ok && c.cfg.Verifier != nil && budget >= wire.StatementLength(st)+wire.ChainSize {
			cs := &c.chains[m]
			if chain, known := cs.at(min(first, st.Count), c.chainCounts[m]); known && !cs.broken {
				rel.HasStatement, rel.Statement, rel.Chain = true, st, chain
				budget -= wire.StatementLength(st) + wire.ChainSize
			}
		}
		for i, bc := range cmds {
			if bc.Frame >= c.overfull[m] {
				break // past the limits: never relayed (holds)
			}
			need := wire.CommandLength(bc.Frame, wire.Command{Frame: bc.Frame, Payload: bc.Payload}) + 10
			if budget < need {
				rel.Seal = min(seal, cmds[i].Frame-1)
				break
			}
			budget -= need
			rel.Commands = append(rel.Commands, wire.Command{Frame: bc.Frame, Payload: bc.Payload})
		}
		if len(rel.Commands) == 0 && s.Next() > theirs.Next && rel.Seal <= theirs.Seal {
			continue // does not fit this datagram
		}
		p.HasRelay, p.Relay = true, rel
		return
	}
}
