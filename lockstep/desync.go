package lockstep

import (
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Desync detection.
//
// The caller reports the state hash (and, optionally, section hashes) of
// every frame it steps with Stepped; the core computes every bucket's input
// hash itself and keeps both for the last Config.HashHistory frames. Every
// datagram carries the hashes of our newest checkpoint (a frame that is a
// multiple of Config.HashInterval). When a member's checkpoint differs from
// ours, both sides start sending each other the hashes of every frame after
// the last checkpoint they agreed on (a Detail block, up to 16 frames at a
// time, with the section hashes of its first frame); each side finds the
// first frame that differs, whether its inputs or only its state differ, and,
// once the other's Detail starts at that frame, the first section that
// differs. Each member then raises one EventDesync naming that frame and the
// member whose hashes differ from the majority.

// frameRecord is what the core keeps of one stepped frame.
type frameRecord struct {
	frame    bucket.Frame
	state    uint64
	input    uint64
	stepped  bool
	sections []uint64
}

// detailFrames is how many frames one Detail block carries.
const detailFrames = 16

// sectionWait is how long a found divergence waits for the other member's
// section hashes before it is reported without a section.
const sectionWait = time.Second

// detailAfter is how long a member keeps sending Detail blocks after it has
// reported a desync, so the other side can finish its own search.
const detailAfter = 3 * time.Second

func (c *Core) record(f bucket.Frame) *frameRecord {
	return &c.hist[int(f)%len(c.hist)]
}

// recorded returns the record of frame f, or nil if it is not held.
func (c *Core) recorded(f bucket.Frame) *frameRecord {
	if f < 0 {
		return nil
	}
	r := c.record(f)
	if r.frame != f || !r.stepped {
		return nil
	}
	return r
}

// Stepped reports the state hash after the caller stepped frame, and the
// simulation's section hashes when it has them (see SectionHasher; nil
// otherwise). Call it after stepping each bucket of Ready, in order; frames
// not reported are left out of desync detection. sections is copied.
func (c *Core) Stepped(frame bucket.Frame, state uint64, sections []Section) {
	rec := c.record(frame)
	if rec.frame != frame || frame > c.executed {
		return // not a frame this core emitted recently
	}
	rec.state = state
	rec.stepped = true
	rec.sections = rec.sections[:0]
	if len(sections) > 0 {
		if c.sectionNames == nil {
			for _, s := range sections {
				c.sectionNames = append(c.sectionNames, s.Name)
			}
		}
		for _, s := range sections {
			rec.sections = append(rec.sections, s.Hash)
		}
	}
	if frame%bucket.Frame(c.cfg.HashInterval) == 0 && frame > c.checkpoint.Frame {
		c.checkpoint = wire.HashReport{Frame: frame, State: state, Input: rec.input}
		c.hasCheckpoint = true
		for _, r := range c.peers {
			if r != nil {
				c.compareCheckpoints(r)
			}
		}
	}
}

// onHash takes in member r's checkpoint.
func (c *Core) onHash(r *remote, h wire.HashReport) {
	if h.Frame < 0 || h.Frame%bucket.Frame(c.cfg.HashInterval) != 0 {
		return
	}
	i := int(h.Frame/bucket.Frame(c.cfg.HashInterval)) % len(r.checkpoints)
	r.checkpoints[i] = h
	r.cpNewest = max(r.cpNewest, h.Frame)
	c.compareCheckpoints(r)
}

// compareCheckpoints compares every checkpoint of r we hold with ours.
func (c *Core) compareCheckpoints(r *remote) {
	if r.cpNewest <= r.agreed {
		return // every checkpoint of r is at or before agreed: the loop below skips them all
	}
	for _, h := range r.checkpoints {
		if h.Frame <= r.agreed || (r.mismatch >= 0 && h.Frame >= r.mismatch) {
			continue
		}
		mine := c.recorded(h.Frame)
		if mine == nil {
			continue
		}
		if mine.state == h.State && mine.input == h.Input {
			if r.mismatch < 0 {
				r.agreed = max(r.agreed, h.Frame)
			}
			continue
		}
		r.mismatch = h.Frame
		c.cfg.Logger.Warn("lockstep: checkpoint hashes differ", "member", r.slot, "frame", h.Frame)
	}
}

// detailFor fills p's Detail block for r while we are locating a desync
// with it.
func (c *Core) detailFor(now time.Duration, p *wire.Packet, r *remote) {
	if r.mismatch < 0 || (c.desynced && now > c.desyncAt+detailAfter) {
		return
	}
	start := r.agreed + 1
	if r.found >= 0 {
		start = r.found
	}
	first := c.recorded(start)
	if first == nil {
		return
	}
	d := wire.Detail{Start: start, Frames: p.Detail.Frames[:0], Sections: p.Detail.Sections[:0]}
	for f := start; f < start+detailFrames && f <= r.mismatch; f++ {
		rec := c.recorded(f)
		if rec == nil {
			break
		}
		d.Frames = append(d.Frames, wire.FrameHashes{State: rec.state, Input: rec.input})
	}
	if len(d.Frames) == 0 {
		return // nothing of the search is ours to send
	}
	if len(first.sections) <= wire.MaxSections {
		d.Sections = append(d.Sections, first.sections...)
	}
	p.HasDetail, p.Detail = true, d
}

// onDetail compares member r's frame hashes with ours.
func (c *Core) onDetail(now time.Duration, r *remote, d *wire.Detail) {
	for i, fh := range d.Frames {
		f := d.Start + bucket.Frame(i)
		mine := c.recorded(f)
		if mine == nil {
			return
		}
		if mine.state == fh.State && mine.input == fh.Input {
			if r.found < 0 {
				r.agreed = max(r.agreed, f)
			}
			continue
		}
		if r.found < 0 || f < r.found {
			r.found, r.foundAt = f, now
			c.anyFound = true
			r.inputsDiffer = mine.input != fh.Input
			r.section = ""
			r.theirSections = r.theirSections[:0]
		}
		// It may have found the difference before a checkpoint showed it to
		// us: search with it from here on.
		r.mismatch = max(r.mismatch, r.found)
		if f == r.found && i == 0 && len(d.Sections) > 0 && len(d.Sections) == len(mine.sections) {
			r.theirSections = append(r.theirSections[:0], d.Sections...)
			for k, h := range d.Sections {
				if h != mine.sections[k] {
					r.section = c.sectionNames[k]
					break
				}
			}
			r.sectionsCompared = true
		}
		return
	}
}

// reportDesync raises our desync event once a divergence is located.
func (c *Core) reportDesync(now time.Duration) {
	if c.desynced || !c.anyFound {
		return
	}
	var first *remote
	for _, r := range c.peers {
		if r == nil || r.found < 0 {
			continue
		}
		if first == nil || r.found < first.found {
			first = r
		}
	}
	if first == nil {
		return
	}
	if !first.sectionsCompared && len(c.sectionNames) > 0 && now < first.foundAt+sectionWait {
		return // wait for its section hashes
	}
	// Whose hashes differ from the majority: count the members whose
	// checkpoint at the first mismatch differs from ours.
	odd := first.slot
	differ, known := 0, 0
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) {
			continue
		}
		if r.mismatch >= 0 && r.mismatch <= first.mismatch {
			differ++
			known++
		} else if r.agreed >= first.found {
			known++
		}
	}
	if differ*2 > known {
		odd = c.self
	}
	what := "states diverged (inputs agree)"
	if first.inputsDiffer {
		what = "inputs diverged"
	}
	c.desynced, c.desyncAt = true, now
	e := Event{Type: EventDesync, Frame: first.found, Member: odd, Section: first.section, With: first.slot,
		Detail: fmt.Sprintf("%s at frame %d, found comparing with member %d", what, first.found, first.slot)}
	if mine := c.recorded(first.found); mine != nil && len(mine.sections) == len(c.sectionNames) && len(first.theirSections) == len(mine.sections) {
		for k, name := range c.sectionNames {
			e.Ours = append(e.Ours, Section{Name: name, Hash: mine.sections[k]})
			e.Theirs = append(e.Theirs, Section{Name: name, Hash: first.theirSections[k]})
		}
	}
	c.emit(e)
	c.cfg.Logger.Error("lockstep: desync", "frame", first.found, "member", odd, "section", first.section, "with", first.slot)
}
