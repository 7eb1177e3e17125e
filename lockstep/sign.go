package lockstep

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Signed command streams.
//
// Each member keeps a running hash, its chain, over its own command stream:
// the chain of no commands is 32 zero bytes, and each command (its frame,
// sequence number and payload) extends it (ChainNext). A statement is the
// member's signature over (session, member, seal, count, chain after count
// commands): it vouches for the whole prefix of count commands and says the
// member's seal was seal. A member signs a new statement when it sends and
// its stream grew since the last one, or its seal advanced
// Config.SignInterval frames; every datagram that carries commands carries
// the newest statement, and so does the first datagram to each member after
// a new one.
//
// A receiver recomputes the chain over the commands it holds of each member
// and checks each statement once it holds the prefix the statement covers.
// A member's datagrams reach us authenticated by the transport, so a bad
// statement in them is that member's fault. Once a member is being dropped
// its commands reach us relayed by others, with its newest statement the
// forwarder holds and the forwarder's chain where the relay (or the
// statement, if it covers less) starts. Whenever the statement covers no
// more than the relay brings, that chain extended by the relayed commands
// must carry the member's signature, whatever we hold: if it does not, the
// forwarder altered or invented the member's commands (an honest
// forwarder's chain and commands are what the member signed), and it is
// dropped for a violation ("forgery"). If it does, the member signed what
// the relay says; a difference from what we hold is then blamed by what
// it proves (contradicted): on the member itself when we had the
// difference from it directly or under a statement of it ("equivocation":
// it signed or sent two different streams), on the forwarder when the
// rest came from its relays alone, and on nobody when several forwarded
// it (each of them may hold another stream the member gave it).
//
// Limits. Commands a forwarder relays past the statement it carries are
// accepted unproven (Stats.Unproven counts them): a member signs before
// every datagram with new commands, so an honest forwarder holds a
// statement at the end of its prefix unless the issuer's datagrams were
// reordered as it failed; a forwarder that no longer remembers its chain
// where the relay starts (more than chainRing commands back) sends none. A
// statement's seal is signed, but a relayed seal past it is taken as
// relayed. A relayer whose first relay to us carries no statement has no
// chain to anchor it and is not named for a later contradiction; the
// desync detection reports what it altered. A member that signs two
// different streams is named only by a member that held one of them from
// it and is relayed the other; the members then hold different inputs, and
// the desync detection reports it.

// Signer signs this member's statements, for example with its network
// identity's private key. Sign must be deterministic in what it accepts;
// an error leaves the statement unsigned (it is not sent).
type Signer interface {
	Sign(msg []byte) ([]byte, error)
}

// Verifier checks a member's signature, for example with the public key of
// the member's network identity. It must be safe to call from the core's
// goroutine; it reports false for a signature that does not verify.
type Verifier interface {
	Verify(member bucket.Slot, msg, sig []byte) bool
}

// ChainSize is the size of a chain value: a SHA-256 digest.
const ChainSize = sha256.Size

// Chain is the running hash of a member's command stream.
type Chain [ChainSize]byte

// ChainNext returns the chain extended by one command.
func ChainNext(h Chain, cmd bucket.Command) Chain {
	d := sha256.New()
	return chainStep(d, h, cmd)
}

func chainStep(d hash.Hash, h Chain, cmd bucket.Command) Chain {
	var buf [ChainSize + 16]byte
	copy(buf[:], h[:])
	binary.LittleEndian.PutUint64(buf[ChainSize:], uint64(cmd.Frame))
	binary.LittleEndian.PutUint32(buf[ChainSize+8:], cmd.Seq)
	binary.LittleEndian.PutUint32(buf[ChainSize+12:], uint32(len(cmd.Payload)))
	d.Reset()
	d.Write(buf[:])
	d.Write(cmd.Payload)
	var out Chain
	d.Sum(out[:0])
	return out
}

// statementDomain opens every signed message, so that a signature over a
// statement is never valid as anything else.
const statementDomain = "PHXSTMT1"

// StatementMessageSize is the length of a statement's signed message.
const StatementMessageSize = len(statementDomain) + 2 + 1 + 8 + 4 + ChainSize

// AppendStatementMessage appends the message a member signs for a
// statement: the ASCII domain "PHXSTMT1", the session tag (u16), the member
// slot (u8), the seal (i64), the count (u32), all little-endian, and the
// chain after count commands.
func AppendStatementMessage(dst []byte, session uint16, member bucket.Slot, seal bucket.Frame, count uint32, chain Chain) []byte {
	dst = append(dst, statementDomain...)
	dst = binary.LittleEndian.AppendUint16(dst, session)
	dst = append(dst, byte(member))
	dst = binary.LittleEndian.AppendUint64(dst, uint64(seal))
	dst = binary.LittleEndian.AppendUint32(dst, count)
	return append(dst, chain[:]...)
}

// chainRing is how many recent points of a member's chain a core keeps to
// check statements that cover less than it holds.
const chainRing = 64

// maxPendingStatements bounds the statements kept waiting for commands.
const maxPendingStatements = 8

type chainPoint struct {
	count uint32
	hash  Chain
}

type pendingStatement struct {
	st     wire.Statement
	from   bucket.Slot // who sent it: the member itself, or a forwarder
	signed bool        // it verified over its relay's Chain and commands: the member signed it
}

// chainState is what a core holds of one member's chain and statements.
type chainState struct {
	hash   Chain // the chain of the commands hashed, Core.chainCounts[m] of them: the stream's prefix up to that count
	broken bool  // commands were trimmed before they were hashed, or what we hold contradicts a statement
	ring   [chainRing]chainPoint
	// proven is the newest statement verified over what we hold, which
	// we forward with relays of its commands (ours: the newest we signed).
	proven    wire.Statement
	hasProven bool
	pending   []pendingStatement
	// The relayed span: once relays brought commands (relayed), those
	// from own on came from forwarders, below own from the member itself.
	// relayer forwarded the first of them; relayerOK holds while it is
	// the only forwarder into the span, its first relay's Chain was ours
	// where that relay started, and nothing else entered the span (blame).
	relayed   bool
	own       uint32
	relayer   bucket.Slot
	relayerOK bool
}

// at returns the chain after count commands, if known, of a chain that
// hashed hashed commands.
func (cs *chainState) at(count, hashed uint32) (Chain, bool) {
	if count == hashed {
		return cs.hash, true
	}
	if count == 0 {
		return Chain{}, true
	}
	p := cs.ring[count%chainRing]
	return p.hash, p.count == count && count < hashed
}

// extendChain hashes member m's commands that entered its prefix since the
// last call, then checks the statements that waited for them.
func (c *Core) extendChain(now time.Duration, m bucket.Slot) {
	if (m == c.self && c.cfg.Signer == nil) || (m != c.self && c.cfg.Verifier == nil) {
		return // our chain serves our statements, the others' our checks
	}
	s := c.table.Stream(m)
	count := c.chainCounts[m] // beside the other members' counts: a datagram without new commands reads no more of m's chain state
	if count >= s.Next() {
		return
	}
	cs := &c.chains[m]
	if count < s.Base() {
		cs.broken = true
		return
	}
	if c.hasher == nil {
		c.hasher = sha256.New()
	}
	for _, cmd := range s.Since(count) {
		cs.hash = chainStep(c.hasher, cs.hash, cmd)
		count++
		cs.ring[count%chainRing] = chainPoint{count, cs.hash}
	}
	c.chainCounts[m] = count
	if m == c.self || len(cs.pending) == 0 {
		return
	}
	n := 0
	for n < len(cs.pending) && cs.pending[n].st.Count <= count {
		n++
	}
	ready := cs.pending[:n]
	cs.pending = cs.pending[n:]
	for _, ps := range ready {
		c.checkStatement(now, m, ps.from, ps.st, ps.signed)
	}
	if len(cs.pending) == 0 {
		cs.pending = nil
	}
}

// onStatement takes in a statement of member m that member from sent us
// (m itself, or a forwarder in a relay); signed says it verified over its
// relay's Chain and commands (preverifyRelay). st's signature may alias
// the datagram.
func (c *Core) onStatement(now time.Duration, m, from bucket.Slot, st wire.Statement, signed bool) {
	if c.cfg.Verifier == nil {
		return
	}
	cs := &c.chains[m]
	if cs.hasProven && st.Count <= cs.proven.Count && st.Seal <= cs.proven.Seal {
		return // nothing new
	}
	st.Signature = append([]byte(nil), st.Signature...)
	if st.Count > c.chainCounts[m] {
		// It covers commands we lack: keep it, by count, until we hold them.
		i := 0
		for i < len(cs.pending) && cs.pending[i].st.Count < st.Count {
			i++
		}
		if i < len(cs.pending) && cs.pending[i].st.Count == st.Count && cs.pending[i].st.Seal >= st.Seal {
			return
		}
		cs.pending = append(cs.pending, pendingStatement{})
		copy(cs.pending[i+1:], cs.pending[i:])
		cs.pending[i] = pendingStatement{st, from, signed}
		if len(cs.pending) > maxPendingStatements {
			cs.pending = cs.pending[1:] // forget the one needing the fewest commands
		}
		return
	}
	c.checkStatement(now, m, from, st, signed)
}

// checkStatement verifies statement st of member m over the commands we
// hold. On failure it reports a violation of m when m sent it itself, and
// otherwise lets contradicted decide whom it proves at fault.
func (c *Core) checkStatement(now time.Duration, m, from bucket.Slot, st wire.Statement, signed bool) {
	cs := &c.chains[m]
	chain, ok := cs.at(st.Count, c.chainCounts[m])
	if cs.broken || !ok {
		c.stats.StatementsStale++
		return
	}
	c.msgBuf = AppendStatementMessage(c.msgBuf[:0], c.cfg.Session, m, st.Seal, st.Count, chain)
	c.stats.StatementsVerified++
	if c.cfg.Verifier.Verify(m, c.msgBuf, st.Signature) {
		if !cs.hasProven || st.Count > cs.proven.Count || (st.Count == cs.proven.Count && st.Seal > cs.proven.Seal) {
			cs.proven, cs.hasProven = st, true
			c.out.Statements = append(c.out.Statements, StatementOf{m, st})
			if st.Count >= c.table.Stream(m).Next() && c.table.Stream(m).Buffered() == 0 {
				cs.relayed = false // all we hold is signed: no relayed span left
			}
		}
		return
	}
	if from == m {
		c.stats.StatementsFailed++
		cs.broken, cs.pending = true, nil
		c.violation(now, m, "signature", fmt.Sprintf("its statement (seal %d, %d commands) does not match the commands it sent", st.Seal, st.Count))
		return
	}
	c.contradicted(now, m, from, st, st.Count, signed)
}

// contradicted handles a statement st of member m, relayed by from, that
// does not hold over the first p commands we hold of m (signed: m did sign
// it, over the relay's Chain and commands). What we hold of m is then not
// what m signed: no later statement can hold over our chain, so we check
// no more of them over it. It blames whom that proves at fault, if anyone:
//
//   - m, when it signed it (signed) and the p commands came from m itself
//     or are covered by a statement of m we verified: m signed or sent two
//     different streams (equivocation);
//   - from, when the commands past what m gave us came through relays of
//     from alone, and its first relay's Chain was ours where it started:
//     an honest forwarder's chain is then ours up to p, where m's signature
//     holds (forgery);
//   - nobody otherwise: the commands came from other forwarders as well,
//     and m may have given each a different stream. The members then hold
//     different inputs and the desync search reports it.
//
// It reports whether it blamed from.
func (c *Core) contradicted(now time.Duration, m, from bucket.Slot, st wire.Statement, p uint32, signed bool) bool {
	cs := &c.chains[m]
	c.stats.StatementsFailed++
	cs.broken, cs.pending = true, nil
	trusted := c.chainCounts[m]
	if cs.relayed {
		trusted = cs.own
		if cs.hasProven {
			trusted = max(trusted, cs.proven.Count)
		}
	}
	switch {
	case signed && p <= trusted:
		detail := fmt.Sprintf("signed a statement (seal %d, %d commands), relayed by member %d, over other commands than the %d it gave us", st.Seal, st.Count, from, p)
		if c.live(m) {
			c.violation(now, m, "equivocation", detail)
			return false
		}
		// It is being dropped already (relays are of members being
		// dropped): the drop goes on, the event names it.
		c.stats.Violations++
		c.emit(Event{Type: EventViolation, Frame: c.executed + 1, Member: m, Detail: "equivocation: " + detail})
		c.cfg.Logger.Warn("lockstep: protocol violation", "member", m, "rule", "equivocation", "detail", detail)
	case p > trusted && cs.relayed && cs.relayerOK && cs.relayer == from:
		c.violation(now, from, "forgery", fmt.Sprintf("forwarded commands of member %d that fail its signed statement (seal %d, %d commands)", m, st.Seal, st.Count))
		return true
	default:
		c.cfg.Logger.Warn("lockstep: a relayed statement contradicts what we hold", "member", m, "forwarder", from, "seal", st.Seal, "count", st.Count)
	}
	return false
}

// ownStatement returns our newest statement, signing a new one when our
// stream grew since the last or our seal advanced Config.SignInterval
// frames. It reports false without a Signer, or when signing failed.
func (c *Core) ownStatement() (wire.Statement, bool) {
	if c.cfg.Signer == nil {
		return wire.Statement{}, false
	}
	if c.statementCurrent() {
		return c.chains[c.self].proven, true
	}
	cs := &c.chains[c.self]
	own := c.table.Stream(c.self)
	seal := own.Seal()
	c.extendChain(0, c.self)
	count := c.chainCounts[c.self]
	if cs.broken || count != own.Next() {
		return cs.proven, cs.hasProven
	}
	c.msgBuf = AppendStatementMessage(c.msgBuf[:0], c.cfg.Session, c.self, seal, count, cs.hash)
	sig, err := c.cfg.Signer.Sign(c.msgBuf)
	if err != nil || len(sig) > wire.MaxSignatureSize {
		c.cfg.Logger.Warn("lockstep: signing a statement failed", "err", err, "size", len(sig))
		return cs.proven, cs.hasProven
	}
	c.stats.StatementsSigned++
	cs.proven, cs.hasProven = wire.Statement{Seal: seal, Count: count, Signature: sig}, true
	c.out.Statements = append(c.out.Statements, StatementOf{c.self, cs.proven})
	return cs.proven, true
}

// statementCurrent reports whether our newest statement still stands for
// our stream (ownStatement returns it as it is): it covers every command
// of ours and our seal has not advanced SignInterval frames past it.
func (c *Core) statementCurrent() bool {
	cs := &c.chains[c.self]
	own := c.table.Stream(c.self)
	return cs.hasProven && cs.proven.Count == own.Next() && own.Seal() < cs.proven.Seal+bucket.Frame(c.cfg.SignInterval)
}

// ProvenStatement returns member m's newest statement this core verified
// over the commands it holds (with a Verifier), or for m = Self its newest
// own (with a Signer), and whether there is one.
func (c *Core) ProvenStatement(m bucket.Slot) (wire.Statement, bool) {
	if int(m) >= len(c.chains) {
		return wire.Statement{}, false
	}
	cs := &c.chains[m]
	return cs.proven, cs.hasProven
}

// relayCheck is what preverifyRelay found of a relay's statement.
type relayCheck uint8

const (
	relayUnchecked   relayCheck = iota // no statement it could check by the relay alone
	relaySigned                        // m signed the relay's Chain and commands up to the statement's count
	relayContradicts                   // as relaySigned, but we hold other commands: reported (contradicted)
	relayForged                        // reported as a forgery of the forwarder: nothing of it is taken in
)

// noteRelayed records that forwarder from's relay rl brings commands of
// member rl.Member past before, our Next of it, before they go in: the
// relayed span starts at before if it had not, and from stays its only
// trusted forwarder while nothing else enters it (contradicted). onOurs
// says the relay's Chain is ours where it starts (preverifyRelay).
func (c *Core) noteRelayed(from bucket.Slot, rl *wire.Relay, before uint32, onOurs bool) {
	if c.cfg.Verifier == nil || rl.First+uint32(len(rl.Commands)) <= before || len(rl.Commands) == 0 {
		return
	}
	cs := &c.chains[rl.Member]
	// Commands held past a gap (the member's own, or another's) would
	// join the span when this relay fills the gap; relayed commands below
	// our trimmed base are not compared with ours.
	s := c.table.Stream(rl.Member)
	clean := rl.First <= before && rl.First >= s.Base() && s.Buffered() == 0
	switch {
	case !cs.relayed:
		cs.relayed, cs.own, cs.relayer, cs.relayerOK = true, before, from, onOurs && clean
	case from != cs.relayer || !clean:
		cs.relayerOK = false
	}
}

// signedRelay checks what forwarder from relayed of member rl.Member
// against the member's statements once its commands are in: the commands
// extend our chain of it, and the relay's statement is checked once we
// hold what it covers, unless check found that it contradicts what we
// hold.
func (c *Core) signedRelay(now time.Duration, from bucket.Slot, rl *wire.Relay, check relayCheck) {
	if c.cfg.Verifier == nil {
		return
	}
	m := rl.Member
	end := rl.First + uint32(len(rl.Commands))
	covered := uint32(0)
	if rl.HasStatement {
		covered = rl.Statement.Count
	}
	if end > max(covered, rl.First) {
		c.stats.Unproven += int64(end - max(covered, rl.First))
	}
	c.extendChain(now, m)
	if rl.HasStatement && c.live(from) && check != relayContradicts {
		c.onStatement(now, m, from, rl.Statement, check == relaySigned)
	}
}

// preverifyRelay checks a relay's statement, before any of its commands
// enters member rl.Member's stream, over the relay alone: whenever the
// statement covers no more than the relay brings, the relay's Chain
// extended by its commands up to the statement's count must carry the
// member's signature, whatever we hold. If it does not, the forwarder
// altered or invented what it forwards: a forgery violation of forwarder
// from, and relayForged. If it does, what the member signed is compared
// with what we hold, and a difference goes to contradicted. It also
// reports whether the relay's Chain is ours at its First (onOurs).
func (c *Core) preverifyRelay(now time.Duration, from bucket.Slot, rl *wire.Relay) (check relayCheck, onOurs bool) {
	if c.cfg.Verifier == nil || !rl.HasStatement {
		return relayUnchecked, false
	}
	m, st := rl.Member, rl.Statement
	cs := &c.chains[m]
	held := c.chainCounts[m]
	if rl.First <= st.Count && rl.First <= held && !cs.broken {
		ours, ok := cs.at(rl.First, held)
		onOurs = ok && ours == Chain(rl.Chain)
	}
	end := rl.First + uint32(len(rl.Commands))
	if st.Count > end {
		return relayUnchecked, onOurs // cut short: checked over the stream once we hold what it covers
	}
	if cs.hasProven && st.Count <= cs.proven.Count && st.Seal <= cs.proven.Seal {
		return relayUnchecked, onOurs // nothing new
	}
	k := min(rl.First, st.Count)
	p := min(st.Count, held) // where we compare it with ours, if we can
	var ours, theirs Chain
	compare := false
	if !cs.broken && p >= k {
		ours, compare = cs.at(p, held)
	}
	if next := c.table.Stream(m).Next(); !compare && (rl.First > next || end <= next) {
		return relayUnchecked, onOurs // nothing of it enters now, nothing to compare: no signature to check
	}
	if c.hasher == nil {
		c.hasher = sha256.New()
	}
	chain := Chain(rl.Chain)
	if p == k {
		theirs = chain
	}
	for seq := k; seq < st.Count; seq++ {
		wc := rl.Commands[seq-rl.First]
		chain = chainStep(c.hasher, chain, bucket.Command{Slot: m, Seq: seq, Frame: wc.Frame, Payload: wc.Payload})
		if seq+1 == p {
			theirs = chain
		}
	}
	c.msgBuf = AppendStatementMessage(c.msgBuf[:0], c.cfg.Session, m, st.Seal, st.Count, chain)
	c.stats.StatementsVerified++
	if !c.cfg.Verifier.Verify(m, c.msgBuf, st.Signature) {
		c.stats.StatementsFailed++
		c.violation(now, from, "forgery", fmt.Sprintf("forwarded commands of member %d that fail its signed statement (seal %d, %d commands)", m, st.Seal, st.Count))
		return relayForged, onOurs
	}
	if compare && theirs != ours {
		if c.contradicted(now, m, from, st, p, true) {
			return relayForged, onOurs
		}
		return relayContradicts, onOurs
	}
	return relaySigned, onOurs // checked again, over the stream, once inserted
}
