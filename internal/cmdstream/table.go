package cmdstream

import "fmt"

// Table holds every member's stream as one member knows them, and answers
// which frames are ready and what their buckets hold.
//
// A Table is not safe for concurrent use.
type Table struct {
	streams []*Stream // one per member (see Stream for what each holds)
	closed  []Frame   // per slot: last frame that counts, or NoFrame while live
	changed uint64    // bit s: stream s's prefix changed since ClearChanged
	// lastFrames is each stream's LastFrame, beside the table: a bucket
	// reaches only the streams that may hold a command of its frame.
	// firstFrames is the frame of each stream's first held command, or
	// NoFrame (FirstFrame).
	lastFrames, firstFrames []Frame
}

// NewTable returns a table for members slots 0..members-1, every stream
// sealed at seal. It panics if members is not in [1, MaxMembers].
func NewTable(members int, seal Frame) *Table {
	if members < 1 || members > MaxMembers {
		panic(fmt.Sprintf("cmdstream: %d members, want 1..%d", members, MaxMembers))
	}
	t := &Table{streams: make([]*Stream, members), closed: make([]Frame, members), lastFrames: make([]Frame, members), firstFrames: make([]Frame, members)}
	for i := range t.streams {
		t.streams[i] = NewStream(Slot(i), seal)
		t.streams[i].table = t
		t.closed[i] = NoFrame
		t.lastFrames[i], t.firstFrames[i] = t.streams[i].lastFrm, NoFrame
	}
	return t
}

// Changed returns the set of slots (bit s for slot s) whose streams'
// prefixes of held commands have changed since ClearChanged (or since the
// table was made): a command joined one, Trim removed some, or Reset
// emptied it. A holder that trims every stream by the same rule need not
// reach the others again until that rule changes.
func (t *Table) Changed() uint64 { return t.changed }

// ClearChanged empties the set Changed returns.
func (t *Table) ClearChanged() { t.changed = 0 }

// FirstFrame returns the frame of the first command slot's stream holds,
// or NoFrame when it holds none, without reaching the stream: a holder
// trimming many streams by frame passes over those with nothing to trim.
func (t *Table) FirstFrame(slot Slot) Frame { return t.firstFrames[slot] }

// Members returns the number of slots, live or not.
func (t *Table) Members() int { return len(t.streams) }

// Stream returns the stream of slot. It panics if slot is out of range.
func (t *Table) Stream(slot Slot) *Stream { return t.streams[slot] }

// Close ends slot's stream at last: commands of it stamped after last do not
// count, and frames after last no longer wait for its seal. Closing again
// may only lower the last frame (a member announced a leave, then failed
// before its commands up to that frame arrived, and the others agreed on less);
// raising it panics.
func (t *Table) Close(slot Slot, last Frame) {
	if t.closed[slot] != NoFrame && last > t.closed[slot] {
		panic(fmt.Sprintf("cmdstream: slot %d closed at %d, then at %d", slot, t.closed[slot], last))
	}
	t.closed[slot] = last
}

// Reopen makes slot's stream count again after Close: a member admitted
// again after its drop. The caller resets the stream first (Stream.Reset)
// so that it seals every frame before the one the member counts from.
func (t *Table) Reopen(slot Slot) { t.closed[slot] = NoFrame }

// Closed returns the last frame of slot's stream that counts, or NoFrame
// while the member is live.
func (t *Table) Closed(slot Slot) Frame { return t.closed[slot] }

// EffectiveSeal returns the seal the holder may rely on for slot: its stream
// seal while live, and NoFrame once closed and every command up to the last
// frame is held.
func (t *Table) EffectiveSeal(slot Slot) Frame {
	s := t.streams[slot]
	if last := t.closed[slot]; last != NoFrame && s.seal >= last {
		return NoFrame
	}
	return s.seal
}

// MinSeal returns the lowest effective seal over all slots: every frame at or
// below it is ready.
func (t *Table) MinSeal() Frame {
	m := NoFrame
	for i := range t.streams {
		if s := t.EffectiveSeal(Slot(i)); s < m {
			m = s
		}
	}
	return m
}

// Ready reports whether frame's bucket is complete: every slot's effective
// seal is at least frame.
func (t *Table) Ready(frame Frame) bool { return t.MinSeal() >= frame }

// Waiting appends to dst the slots whose seal holds frame back.
func (t *Table) Waiting(dst []Slot, frame Frame) []Slot {
	for i := range t.streams {
		if t.EffectiveSeal(Slot(i)) < frame {
			dst = append(dst, Slot(i))
		}
	}
	return dst
}

// AppendBucket appends frame's bucket to dst in canonical order (slot, then
// sequence) and returns the extended slice. Commands of a closed slot
// stamped after its last frame are left out. The caller checks Ready first;
// the payloads alias the streams' storage.
func (t *Table) AppendBucket(dst []Command, frame Frame) []Command {
	for i, s := range t.streams {
		if frame > t.closed[i] || frame > t.lastFrames[i] {
			continue // closed, or every command held is of an earlier frame
		}
		dst = s.AppendFrame(dst, frame)
	}
	return dst
}

// Window bounds how far ahead of the receiver's executed frame a command or
// seal may reach. A member stamping commands past the window breaks the
// protocol; the bound keeps the memory a member holds for others finite.
type Window struct {
	Ahead Frame // frames past the executed frame; must be positive
}

// Contains reports whether frame lies within the window for a member that has
// executed every frame up to executed.
func (w Window) Contains(executed, frame Frame) bool {
	return frame <= executed+w.Ahead
}
