package lockstep

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"math/bits"
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
// statement in them is that member's fault; but once a member is being
// dropped its commands reach us relayed by others, with its newest
// statement the forwarder holds: a relayed statement that fails over what
// we then hold proves that a forwarder altered or invented the member's
// commands, and the forwarder is dropped for a violation ("forgery").
//
// Limits. Commands a forwarder relays past the statement it carries are
// accepted unproven (Stats.Unproven counts them): a member signs before
// every datagram with new commands, so an honest forwarder holds a
// statement at the end of its prefix unless the issuer's datagrams were
// reordered as it failed. A statement's seal is signed, but a relayed seal
// past it is taken as relayed. A member that signs two different streams to
// two members is not caught as such: the members then hold different
// inputs and the desync detection reports it.

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
	st   wire.Statement
	from bucket.Slot // who sent it: the member itself, or a forwarder
}

// chainState is what a core holds of one member's chain and statements.
type chainState struct {
	hash   Chain // the chain of the commands hashed, Core.chainCounts[m] of them: the stream's prefix up to that count
	broken bool  // commands were trimmed before they were hashed, or the member's own statement failed
	ring   [chainRing]chainPoint
	// proven is the newest statement verified over what we hold, which
	// we forward with relays of its commands (ours: the newest we signed).
	proven    wire.Statement
	hasProven bool
	pending   []pendingStatement
	// Forwarders whose relayed commands lie past proven.Count.
	suppliers uint64
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
		c.checkStatement(now, m, ps.from, ps.st)
	}
	if len(cs.pending) == 0 {
		cs.pending = nil
	}
}

// onStatement takes in a statement of member m that member from sent us
// (m itself, or a forwarder in a relay). st's signature may alias the
// datagram.
func (c *Core) onStatement(now time.Duration, m, from bucket.Slot, st wire.Statement) {
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
		cs.pending[i] = pendingStatement{st, from}
		if len(cs.pending) > maxPendingStatements {
			cs.pending = cs.pending[1:] // forget the one needing the fewest commands
		}
		return
	}
	c.checkStatement(now, m, from, st)
}

// checkStatement verifies statement st of member m over the commands we
// hold, and on failure reports a violation: of m when m sent it itself,
// of the forwarder of the commands it covers otherwise.
func (c *Core) checkStatement(now time.Duration, m, from bucket.Slot, st wire.Statement) {
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
			if !cs.hasProven || st.Count > cs.proven.Count {
				cs.suppliers = 0
			}
			cs.proven, cs.hasProven = st, true
			c.out.Statements = append(c.out.Statements, StatementOf{m, st})
		}
		return
	}
	c.stats.StatementsFailed++
	// What we hold of m is not what it signed: no later statement of it
	// can hold over our chain, and no later forwarder is to blame for it.
	cs.broken, cs.pending = true, nil
	if from == m {
		c.violation(now, m, "signature", fmt.Sprintf("its statement (seal %d, %d commands) does not match the commands it sent", st.Seal, st.Count))
		return
	}
	// The signature is the member's, the commands are not: blame the
	// forwarder of them. If several forwarded into the unproven span, the
	// one whose relay carried the statement vouched for them.
	culprit := from
	if cs.suppliers != 0 && cs.suppliers&(1<<from) == 0 {
		culprit = bucket.Slot(bits.TrailingZeros64(cs.suppliers))
	}
	c.violation(now, culprit, "forgery", fmt.Sprintf("forwarded commands of member %d that fail its signed statement (seal %d, %d commands)", m, st.Seal, st.Count))
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

// signedRelay checks what forwarder from relayed of member rl.Member
// against the member's statements: the commands extend our chain of it,
// and the relay's statement is checked once we hold what it covers.
func (c *Core) signedRelay(now time.Duration, from bucket.Slot, rl *wire.Relay) {
	if c.cfg.Verifier == nil {
		return
	}
	m := rl.Member
	cs := &c.chains[m]
	end := rl.First + uint32(len(rl.Commands))
	if len(rl.Commands) > 0 && (!cs.hasProven || end > cs.proven.Count) {
		cs.suppliers |= 1 << from
	}
	covered := uint32(0)
	if rl.HasStatement {
		covered = rl.Statement.Count
	}
	if end > max(covered, rl.First) {
		c.stats.Unproven += int64(end - max(covered, rl.First))
	}
	c.extendChain(now, m)
	if rl.HasStatement && c.live(from) {
		c.onStatement(now, m, from, rl.Statement)
	}
}

// preverifyRelay checks a relay whose statement covers the commands it
// brings before any of them enters member rl.Member's stream: the chain of
// what we hold, extended by the relayed commands up to the statement's
// count, must carry the member's signature. It reports false, after a
// forgery violation of forwarder from, when it does not; true when it
// holds or cannot be checked yet (the statement then waits as usual).
func (c *Core) preverifyRelay(now time.Duration, from bucket.Slot, rl *wire.Relay) bool {
	if c.cfg.Verifier == nil || !rl.HasStatement || len(rl.Commands) == 0 {
		return true
	}
	m, st := rl.Member, rl.Statement
	cs := &c.chains[m]
	s := c.table.Stream(m)
	held := s.Next()
	end := rl.First + uint32(len(rl.Commands))
	if cs.broken || c.chainCounts[m] != held || rl.First > held || st.Count <= held || st.Count > end {
		return true // nothing new it covers, or not all of it here
	}
	if cs.hasProven && st.Count <= cs.proven.Count && st.Seal <= cs.proven.Seal {
		return true
	}
	if c.hasher == nil {
		c.hasher = sha256.New()
	}
	chain := cs.hash
	for seq := held; seq < st.Count; seq++ {
		wc := rl.Commands[seq-rl.First]
		chain = chainStep(c.hasher, chain, bucket.Command{Slot: m, Seq: seq, Frame: wc.Frame, Payload: wc.Payload})
	}
	c.msgBuf = AppendStatementMessage(c.msgBuf[:0], c.cfg.Session, m, st.Seal, st.Count, chain)
	c.stats.StatementsVerified++
	if c.cfg.Verifier.Verify(m, c.msgBuf, st.Signature) {
		return true // checked again, over the stream, once inserted
	}
	c.stats.StatementsFailed++
	c.violation(now, from, "forgery", fmt.Sprintf("forwarded commands of member %d that fail its signed statement (seal %d, %d commands)", m, st.Seal, st.Count))
	return false
}
