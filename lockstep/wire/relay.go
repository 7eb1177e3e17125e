package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
)

// Relay forwards commands of another member (one being dropped) that the
// receiver lacks: sequence numbers First .. First+len(Commands)-1, with that
// member's seal Seal, which holds once the receiver has every command below
// First+len(Commands). A Relay without commands forwards the seal alone.
//
// With HasStatement the relay carries the relayed member's own signed
// Statement, which the forwarder holds, and Chain, the forwarder's chain of
// the member's stream (lockstep.Chain) after min(First, Statement.Count)
// commands. Whenever the statement covers no more than the relay brings
// (Statement.Count <= First+len(Commands)), Chain extended by the relayed
// commands up to Statement.Count is what the member signed, so the receiver
// checks the signature over the relay alone, whatever it holds itself.
type Relay struct {
	Member   bucket.Slot
	First    uint32
	Seal     bucket.Frame
	Commands []Command

	HasStatement bool
	Statement    Statement
	Chain        [ChainSize]byte // with HasStatement
}

// ChainSize is the size of a relay's chain value (a SHA-256 digest).
const ChainSize = 32

// check reports why the relay block cannot be encoded, if it cannot (its
// statement is checked with the extension blocks).
func (rl *Relay) check() error {
	if rl.Seal < -1 || rl.Seal >= maxFrame {
		return fmt.Errorf("wire: relay of %d commands with seal %d", len(rl.Commands), rl.Seal)
	}
	for i, c := range rl.Commands {
		if c.Frame < 0 || c.Frame >= maxFrame || (i > 0 && c.Frame < rl.Commands[i-1].Frame) {
			return fmt.Errorf("wire: relayed command %d has frame %d", i, c.Frame)
		}
	}
	return nil
}

// length returns the bytes appendTo writes.
func (rl *Relay) length() int {
	return 1 + uvarintLen(uint64(rl.First)) + uvarintLen(frameCode(rl.Seal)) + commandsLength(rl.Seal, rl.Commands)
}

// appendTo appends the relay block: the member's slot, the first sequence
// number, the seal and the command list (a count of 0 for a seal alone).
// The relay's statement goes with the extension blocks.
func (rl *Relay) appendTo(b []byte) []byte {
	b = append(b, byte(rl.Member))
	b = binary.AppendUvarint(b, uint64(rl.First))
	b = binary.AppendUvarint(b, frameCode(rl.Seal))
	return appendCommands(b, rl.Seal, rl.Commands)
}

// parse decodes a relay block into rl, appending to rl.Commands.
func (rl *Relay) parse(r *reader) error {
	rl.Member = bucket.Slot(r.byte())
	rl.First = r.uint32()
	rl.Seal = r.frame()
	if r.err != nil {
		return r.fail("relay")
	}
	if n := r.peekByte(); r.err == nil && n == 0 {
		r.off++ // a relayed seal without commands
		return nil
	}
	var err error
	rl.Commands, err = r.commands(rl.Seal, rl.Commands, "relayed command")
	return err
}
