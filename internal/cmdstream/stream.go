package cmdstream

import (
	"errors"
	"fmt"
)

// maxOutOfOrder bounds how far past the contiguous prefix a stream buffers
// commands that arrived early.
const maxOutOfOrder = 4096

// Errors returned by Stream methods when an insertion would break the
// stream's rules. The engine reports them as protocol violations of the
// member that sent the command.
var (
	ErrUnderSeal      = errors.New("cmdstream: command frame at or below the stream's seal")
	ErrFrameDecreases = errors.New("cmdstream: command frame lower than an earlier command's")
	ErrConflict       = errors.New("cmdstream: command differs from the one held under the same sequence number")
	ErrTooFarAhead    = errors.New("cmdstream: sequence number too far ahead of the held prefix")
)

// Stream is one member's command stream as one holder knows it: the
// contiguous prefix of commands it has, a few commands that arrived past a
// gap, and the seal it may rely on.
//
// Commands below Base have been trimmed (executed and no longer needed).
// A Stream is not safe for concurrent use.
type Stream struct {
	// What every datagram of or to its member reads (Next, Seal,
	// Promise) comes first, in the first 64 bytes; the padding at the
	// end makes a Stream 128 bytes, which the allocator places at
	// multiples of 128, so that those fields lie in one cache line
	// (a table of 64 members holds 64 streams, a run in virtual time
	// 64 tables).
	slot    Slot
	base    uint32 // sequence number of held[0]
	seal    Frame
	lastFrm Frame     // frame of the newest command ever in held (or -1)
	held    []Command // contiguous: held[i].Seq == base+i; bounded by its holder's Trim (the lockstep core keeps a window of frames)
	// pending holds promises whose commands have not all arrived, by
	// increasing next and increasing seal; each becomes the seal once the
	// prefix reaches its next. At most maxPending.
	pending []pendingPromise
	early   []Command // past the prefix, sorted by Seq, no duplicates: at most maxOutOfOrder
	table   *Table    // the table it is part of, or nil
	_       [24]byte
}

// prefixChanged tells the stream's table, once the prefix has changed,
// that it did (Table.Changed) and the frames of its first and newest
// commands.
func (s *Stream) prefixChanged() {
	if t := s.table; t != nil {
		t.changed |= 1 << s.slot
		t.lastFrames[s.slot] = s.lastFrm
		t.firstFrames[s.slot] = NoFrame
		if len(s.held) > 0 {
			t.firstFrames[s.slot] = s.held[0].Frame
		}
	}
}

type pendingPromise struct {
	seal Frame
	next uint32
}

// maxPending bounds the promises a stream keeps waiting for their commands.
const maxPending = 16

// NewStream returns an empty stream for slot whose initial seal is seal:
// the member promises nothing at or below it (a session starts every stream
// sealed at initial delay - 1, so the first frames run empty).
func NewStream(slot Slot, seal Frame) *Stream {
	return &Stream{slot: slot, seal: seal, lastFrm: -1}
}

// Slot returns the member the stream belongs to.
func (s *Stream) Slot() Slot { return s.slot }

// Seal returns the highest frame for which the holder has every command.
func (s *Stream) Seal() Frame { return s.seal }

// Base returns the sequence number of the oldest command still held.
func (s *Stream) Base() uint32 { return s.base }

// Next returns the length of the contiguous prefix: every command with a
// sequence number below Next has been received (some may be trimmed).
func (s *Stream) Next() uint32 { return s.base + uint32(len(s.held)) }

// LastFrame returns the frame of the newest command in the prefix, or -1.
func (s *Stream) LastFrame() Frame { return s.lastFrm }

// Append adds the holder's own next command. It panics if the command does
// not continue the stream (wrong slot or sequence, frame under the seal or
// decreasing): the engine stamps its own commands and must never do that.
func (s *Stream) Append(c Command) {
	if err := s.check(c); err != nil || c.Seq != s.Next() || len(s.early) > 0 {
		panic(fmt.Sprintf("cmdstream: Append(slot %d seq %d frame %d) to stream at next %d seal %d: %v", c.Slot, c.Seq, c.Frame, s.Next(), s.seal, err))
	}
	s.held = append(s.held, c)
	s.lastFrm = c.Frame
	s.prefixChanged()
}

func (s *Stream) check(c Command) error {
	if c.Slot != s.slot {
		return fmt.Errorf("cmdstream: command of slot %d in stream of slot %d", c.Slot, s.slot)
	}
	if c.Seq == s.Next() {
		if c.Frame <= s.seal {
			return fmt.Errorf("%w: seq %d frame %d, seal %d", ErrUnderSeal, c.Seq, c.Frame, s.seal)
		}
		if c.Frame < s.lastFrm {
			return fmt.Errorf("%w: seq %d frame %d after frame %d", ErrFrameDecreases, c.Seq, c.Frame, s.lastFrm)
		}
	}
	return nil
}

// Insert adds a command received from the stream's member, in any order and
// possibly more than once. It reports whether the command was new. A command
// below the prefix is compared with the one held (when still held) and
// otherwise ignored; one past the prefix is buffered until the gap fills. It
// returns an error, and changes nothing, if the command breaks the stream's
// rules.
func (s *Stream) Insert(c Command) (bool, error) {
	if err := s.check(c); err != nil {
		return false, err
	}
	next := s.Next()
	switch {
	case c.Seq < next:
		if c.Seq >= s.base {
			h := s.held[c.Seq-s.base]
			if h.Frame != c.Frame || string(h.Payload) != string(c.Payload) {
				return false, fmt.Errorf("%w: seq %d", ErrConflict, c.Seq)
			}
		}
		return false, nil
	case c.Seq > next:
		if c.Seq-next > maxOutOfOrder {
			return false, fmt.Errorf("%w: seq %d, prefix ends at %d", ErrTooFarAhead, c.Seq, next)
		}
		return s.buffer(c)
	}
	s.held = append(s.held, c)
	s.lastFrm = c.Frame
	// Drain buffered commands that now continue the prefix.
	for len(s.early) > 0 && s.early[0].Seq == s.Next() {
		e := s.early[0]
		if e.Frame <= s.seal || e.Frame < s.lastFrm {
			// The early command lied about its frame; drop it and everything
			// buffered after it, the member's later datagrams resend them.
			s.early = s.early[:0]
			break
		}
		s.held = append(s.held, e)
		s.lastFrm = e.Frame
		s.early = s.early[1:]
	}
	if len(s.early) == 0 {
		s.early = nil
	}
	s.prefixChanged()
	s.applyPendingSeal()
	return true, nil
}

func (s *Stream) buffer(c Command) (bool, error) {
	i := 0
	for i < len(s.early) && s.early[i].Seq < c.Seq {
		i++
	}
	if i < len(s.early) && s.early[i].Seq == c.Seq {
		return false, nil
	}
	s.early = append(s.early, Command{})
	copy(s.early[i+1:], s.early[i:])
	s.early[i] = c
	return true, nil
}

// Promise records the member's seal, valid once the holder has every command
// with a sequence number below next. A seal that arrives before its commands
// waits for them; a seal lower than the one held changes nothing (datagrams
// arrive out of order, so an old promise may come late). Detecting a member
// whose promises really go backwards needs datagram order and is the
// engine's job.
func (s *Stream) Promise(seal Frame, next uint32) {
	if next <= s.Next() {
		if seal > s.seal {
			s.seal = seal
		}
		return
	}
	if seal <= s.seal {
		return
	}
	// Keep the list increasing in both next and seal: a promise needing more
	// commands for a seal no higher than another's is worthless.
	i := 0
	for _, p := range s.pending {
		if p.next >= next && p.seal <= seal {
			continue // dominated by the new promise
		}
		if p.next <= next && p.seal >= seal {
			return // the new promise is dominated
		}
		s.pending[i] = p
		i++
	}
	s.pending = s.pending[:i]
	at := len(s.pending)
	for at > 0 && s.pending[at-1].next > next {
		at--
	}
	s.pending = append(s.pending, pendingPromise{})
	copy(s.pending[at+1:], s.pending[at:])
	s.pending[at] = pendingPromise{seal, next}
	if len(s.pending) > maxPending {
		// Forget the second most demanding promise: the least demanding
		// applies soonest and the most demanding says the most; the member
		// repeats its seal in later datagrams anyway.
		k := len(s.pending) - 2
		s.pending = append(s.pending[:k], s.pending[k+1])
	}
}

// SetSeal advances the holder's own seal. It panics if seal moves backwards.
func (s *Stream) SetSeal(seal Frame) {
	if seal < s.seal {
		panic(fmt.Sprintf("cmdstream: seal of slot %d moved backwards from %d to %d", s.slot, s.seal, seal))
	}
	s.seal = seal
}

func (s *Stream) applyPendingSeal() {
	n := 0
	for n < len(s.pending) && s.pending[n].next <= s.Next() {
		s.seal = max(s.seal, s.pending[n].seal)
		n++
	}
	if n > 0 {
		s.pending = append(s.pending[:0], s.pending[n:]...)
	}
}

// Since returns the held commands with sequence numbers from seq on, oldest
// first. The slice aliases the stream's storage and is valid until the next
// mutation. Sequence numbers below Base are no longer held and are skipped.
func (s *Stream) Since(seq uint32) []Command {
	if seq < s.base {
		seq = s.base
	}
	if seq >= s.Next() {
		return nil
	}
	return s.held[seq-s.base:]
}

// Trim forgets the commands with sequence numbers below seq.
func (s *Stream) Trim(seq uint32) {
	if seq > s.Next() {
		seq = s.Next()
	}
	if seq <= s.base {
		return
	}
	n := int(seq - s.base)
	// Move what remains to the front so the array's storage is reused.
	kept := copy(s.held, s.held[n:])
	clear(s.held[kept:])
	s.held = s.held[:kept]
	s.base = seq
	s.prefixChanged()
}

// AppendFrame appends to dst the held commands stamped frame, in sequence
// order, and returns the extended slice.
func (s *Stream) AppendFrame(dst []Command, frame Frame) []Command {
	// Frames never decrease along the stream: find the first at or past frame
	// by binary search, then copy the run.
	lo, hi := 0, len(s.held)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.held[m].Frame < frame {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for ; lo < len(s.held) && s.held[lo].Frame == frame; lo++ {
		dst = append(dst, s.held[lo])
	}
	return dst
}

// Buffered returns the number of commands held past a gap.
func (s *Stream) Buffered() int { return len(s.early) }

// Reset empties the stream and starts it again at sequence number base with
// seal seal, as a new incarnation of the member: one admitted again after
// its drop, whose commands count from a later frame on, or one whose
// earlier commands the holder will never need (it joined late). Everything
// held, buffered or promised is forgotten.
func (s *Stream) Reset(base uint32, seal Frame) {
	clear(s.held)
	clear(s.early)
	s.held, s.early, s.pending = s.held[:0], s.early[:0], s.pending[:0]
	s.base, s.seal, s.lastFrm = base, seal, -1
	s.prefixChanged()
}
