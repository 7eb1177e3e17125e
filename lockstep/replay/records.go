package replay

import (
	"fmt"
	"math"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// frame returns the record of frame r.next with cmds, and moves on.
func (r *Reader) frame(cmds []bucket.Command) *Record {
	r.rec = Record{Kind: KindFrame, Frame: r.next, Commands: cmds}
	r.next++
	return &r.rec
}

// record decodes the next record of the current chunk. It returns no
// record and no error for a record that delivers nothing.
func (r *Reader) record() (*Record, error) {
	t := r.p[0]
	d := decoder{b: r.p[1:]}
	switch {
	case t&recSkip != 0:
		r.p = d.b
		r.skip = bucket.Frame(t&^recSkip) + 1
	case t == recSkipLong:
		n := d.uvarint(maxFrame, "run of empty frames")
		if d.err == nil && n == 0 {
			return nil, r.malformed("empty run of empty frames")
		}
		r.skip = bucket.Frame(n)
	case t&0xc0 == recSingle:
		restartStreams(r.expect, r.restart, r.next)
		r.cmds = r.cmds[:0]
		r.command(&d, bucket.Slot(t&^recSingle), 0)
	case t == recBucket:
		n := d.uvarint(uint64(len(d.b)/3), "command count")
		if d.err == nil && n == 0 {
			return nil, r.malformed("bucket without commands")
		}
		restartStreams(r.expect, r.restart, r.next)
		r.cmds = r.cmds[:0]
		for i := range n {
			slot := bucket.Slot(d.uvarint(math.MaxUint8, "slot"))
			if i > 0 && d.err == nil && slot < r.cmds[len(r.cmds)-1].Slot {
				d.fail("command %d of slot %d after slot %d: not in canonical order", i, slot, r.cmds[len(r.cmds)-1].Slot)
			}
			r.command(&d, slot, d.uvarint(math.MaxUint32, "sequence gap"))
		}
	case t == recSections:
		n := d.uvarint(maxSections, "section count")
		if d.err == nil && n == 0 {
			return nil, r.malformed("no section names")
		}
		r.names = r.names[:0]
		for range n {
			r.names = append(r.names, string(d.bytes(maxString, "section name")))
		}
	case t == recCheckpoint:
		if r.next == 0 {
			return nil, r.malformed("a checkpoint before the first frame")
		}
		hash := d.u64("state hash")
		n := d.uvarint(maxSections, "section hash count")
		if d.err == nil && n != 0 && int(n) != len(r.names) {
			d.fail("%d section hashes for %d section names", n, len(r.names))
		}
		r.secs = r.secs[:0]
		for i := range int(n) {
			if h := d.u64("section hash"); d.err == nil {
				r.secs = append(r.secs, lockstep.Section{Name: r.names[i], Hash: h})
			}
		}
		if d.err == nil {
			r.rec = Record{Kind: KindCheckpoint, Frame: r.next - 1, Hash: hash}
			if n > 0 {
				r.rec.Sections = r.secs
			}
		}
	case t == recChange:
		var c Change
		c.Kind = ChangeKind(d.u8("change kind"))
		c.Member = bucket.Slot(d.uvarint(uint64(len(r.expect)-1), "member slot"))
		c.Frame = d.frame("change frame")
		c.LastFrame = d.frame("last frame")
		c.Detail = string(d.bytes(maxDetail, "detail"))
		if d.err == nil && !c.Kind.known(r.h.Version) {
			d.fail("membership change of kind %d", c.Kind)
		}
		if d.err == nil && c.Kind.atFrame() && c.Frame < r.next {
			d.fail("%s of slot %d at frame %d, after frame %d", c.Kind, c.Member, c.Frame, r.next-1)
		}
		if d.err == nil && c.Kind.admission() {
			r.restart[c.Member] = c.Frame
		}
		r.rec = Record{Kind: KindChange, Frame: c.Frame, Change: c}
	case t == recStatement && r.h.Version >= 2:
		var s Statement
		s.Member = bucket.Slot(d.uvarint(uint64(len(r.expect)-1), "statement member"))
		s.Tag = uint16(d.uvarint(0xffff, "session tag"))
		s.Seal = d.frame("statement seal")
		s.Count = uint32(d.uvarint(1<<32-1, "statement count"))
		s.Signature = d.bytes(maxSignature, "signature")
		r.rec = Record{Kind: KindStatement, Frame: r.next - 1, Statement: s}
	default:
		d.fail("unknown record type 0x%02x", t)
	}
	if d.err != nil {
		return nil, r.malformed(d.err.Error())
	}
	r.p = d.b
	switch {
	case t&recSkip != 0 || t == recSkipLong:
		if err := r.checkFrames(r.skip); err != nil {
			r.skip = 0
			return nil, err
		}
		r.skip--
		return r.frame(nil), nil
	case t == recBucket || t&0xc0 == recSingle:
		if err := r.checkFrames(1); err != nil {
			return nil, err
		}
		return r.frame(r.cmds), nil
	case t == recSections:
		return nil, nil
	}
	return &r.rec, nil
}

// checkFrames checks that a record of n frames at the cursor stays within
// its chunk's MaxChunkFrames and the file's last frame.
func (r *Reader) checkFrames(n bucket.Frame) error {
	end := r.next + n - 1 // the record's last frame
	switch {
	case end-r.first >= MaxChunkFrames:
		return r.malformed(fmt.Sprintf("a record of %d frames ends at frame %d, making a chunk of more than %d frames", n, end, MaxChunkFrames))
	case end > r.last && r.last == maxFrame-1:
		return r.malformed("frame numbers beyond 2^40")
	case end > r.last:
		return r.malformed(fmt.Sprintf("a record of %d frames ends at frame %d, after the trailer's last frame %d", n, end, r.last))
	}
	return nil
}

// command decodes one command of slot whose sequence number is gap above
// the slot's next expected one, and appends it to r.cmds.
func (r *Reader) command(d *decoder, slot bucket.Slot, gap uint64) {
	payload := d.bytes(MaxChunkSize, "payload")
	if d.err != nil {
		return
	}
	if int(slot) >= len(r.expect) {
		d.fail("command of slot %d with %d members", slot, len(r.expect))
		return
	}
	seq := r.expect[slot] + gap
	if seq > math.MaxUint32 {
		d.fail("sequence number %d of slot %d", seq, slot)
		return
	}
	r.expect[slot] = seq + 1
	r.cmds = append(r.cmds, bucket.Command{Slot: slot, Seq: uint32(seq), Frame: r.next, Payload: payload})
}

func (d *decoder) u8(what string) uint8 {
	if b := d.fixed(1, what); b != nil {
		return b[0]
	}
	return 0
}

// restartStreams starts the sequence numbers of every slot admitted at or
// before frame from 0 again: the admitted member's commands are a new
// stream (ChangeRejoin, ChangeJoin). Its commands before the admission,
// all stamped on frames before it, were read already.
func restartStreams(expect []uint64, restart []bucket.Frame, frame bucket.Frame) {
	for s, at := range restart {
		if at >= 0 && frame >= at {
			expect[s], restart[s] = 0, -1
		}
	}
}
