package replay

import (
	"errors"
	"fmt"
	"io"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// ErrSignature: a recorded statement's signature does not hold over the
// recorded commands it covers: the replay's commands of that member are not
// the ones it signed.
var ErrSignature = errors.New("replay: signature mismatch")

// Signatures is what CheckSignatures found.
type Signatures struct {
	// Statements is the number of statements recorded; Checked how many
	// of them were verified over the recorded commands; Unchecked how
	// many cover commands the replay does not hold (stamped for frames
	// past its end, or past a member's drop), so they could not be.
	Statements int
	Checked    int
	Unchecked  int
	// Covered is, per member slot, how many of its first commands a
	// verified statement vouches for.
	Covered []uint32
}

// memberChain is a member's recorded commands as CheckSignatures sees them.
type memberChain struct {
	hashes  []lockstep.Chain // hashes[i]: the chain after i+1 commands
	frames  []bucket.Frame   // frames[i]: the frame of command i
	gap     bool             // a sequence number is missing: the chain stops there
	pending []Statement
	// from is the frame its stream (re)started at: an admission starts a
	// new chain, and commands of the earlier stream stamped before it are
	// no part of the new one.
	from bucket.Frame
}

// CheckSignatures reads replay r and checks every recorded statement with
// v over the recorded commands: each member's commands, in sequence order,
// form its chain (lockstep.ChainNext), and a statement of Count commands
// must carry the member's signature over the chain after them
// (lockstep.AppendStatementMessage). It returns an error wrapping
// ErrSignature for the first statement that fails, naming the member and
// the frames of the commands between the last statement that held and the
// failing one: one of them differs from what the member signed. A replay
// without statements (format version 1, or an unsigned session) gives
// Statements 0 and no error: it is unsigned, not forged. The reader's
// errors (damage) are returned as they are, with what was found so far.
func CheckSignatures(r io.Reader, v lockstep.Verifier) (Signatures, error) {
	var res Signatures
	rd, err := NewReader(r)
	if err != nil {
		return res, err
	}
	h := rd.Header()
	chains := make([]memberChain, len(h.Members))
	res.Covered = make([]uint32, len(h.Members))
	var msg []byte
	check := func(s Statement) error {
		c := &chains[s.Member]
		var chain lockstep.Chain
		if s.Count > 0 {
			chain = c.hashes[s.Count-1]
		}
		msg = lockstep.AppendStatementMessage(msg[:0], s.Tag, s.Member, s.Seal, s.Count, chain)
		if !v.Verify(s.Member, msg, s.Signature) {
			from := res.Covered[s.Member]
			if from >= s.Count {
				from = 0
			}
			if s.Count == 0 {
				return fmt.Errorf("%w: member %d's statement (seal %d, no commands) does not carry its signature", ErrSignature, s.Member, s.Seal)
			}
			if from == s.Count-1 {
				return fmt.Errorf("%w: member %d's statement (seal %d, %d commands) fails over the recorded commands: its command %d, on frame %d, is not what it signed",
					ErrSignature, s.Member, s.Seal, s.Count, from, c.frames[from])
			}
			return fmt.Errorf("%w: member %d's statement (seal %d, %d commands) fails over the recorded commands: one of its commands %d to %d, on frames %d to %d, is not what it signed",
				ErrSignature, s.Member, s.Seal, s.Count, from, s.Count-1, c.frames[from], c.frames[s.Count-1])
		}
		res.Checked++
		res.Covered[s.Member] = max(res.Covered[s.Member], s.Count)
		return nil
	}
	for {
		rec, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err
		}
		switch rec.Kind {
		case KindChange:
			if rec.Change.Kind.admission() {
				// A new stream: its statements follow this record, its
				// commands its frame. What the old one still waits for
				// cannot be checked any more.
				res.Unchecked += len(chains[rec.Change.Member].pending)
				chains[rec.Change.Member] = memberChain{from: rec.Change.Frame}
				res.Covered[rec.Change.Member] = 0
			}
		case KindStatement:
			res.Statements++
			s := rec.Statement
			c := &chains[s.Member]
			if s.Count > uint32(len(c.hashes)) {
				s.Signature = append([]byte(nil), s.Signature...)
				c.pending = append(c.pending, s)
				continue
			}
			if err := check(s); err != nil {
				return res, err
			}
		case KindFrame:
			for _, cmd := range rec.Commands {
				c := &chains[cmd.Slot]
				if cmd.Frame < c.from {
					continue // the earlier stream's last commands
				}
				if c.gap || cmd.Seq != uint32(len(c.hashes)) {
					c.gap = true
					continue
				}
				var prev lockstep.Chain
				if len(c.hashes) > 0 {
					prev = c.hashes[len(c.hashes)-1]
				}
				c.hashes = append(c.hashes, lockstep.ChainNext(prev, cmd))
				c.frames = append(c.frames, cmd.Frame)
				// Statements waiting for this many commands hold now.
				kept := c.pending[:0]
				for _, s := range c.pending {
					if s.Count > uint32(len(c.hashes)) {
						kept = append(kept, s)
					} else if err := check(s); err != nil {
						return res, err
					}
				}
				c.pending = kept
			}
		}
	}
	for _, c := range chains {
		res.Unchecked += len(c.pending)
	}
	return res, nil
}
