package locksteptest

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Spectators (Config.Spectators) watch a run: each receives the buckets the
// members step, on a reliable ordered transfer of its own (as a libp2p
// stream would carry them), and steps them Config.SpectatorDelay behind the
// live frame. A spectator sends no command, counts for no seal and takes no
// part in any agreement: the members' cores never hear of it. Each member
// serves at most Config.SpectatorFanout spectators, and so does each
// spectator: the first spectators hang on the members, the rest on
// spectators, breadth first, so a hundred spectators load the members no
// more than a few. A spectator forwards each bucket to the spectators it
// serves as it arrives, not as it steps it, so the delay does not add up
// along the tree. Spectators that join after frame 0
// (Config.SpectatorsFrom) catch up as joiners do (catchup.go): from a
// checkpoint two members vouched for, or from frame 0.

// defaultSpectatorFanout is how many spectators a member or a spectator
// serves by default.
const defaultSpectatorFanout = 2

// spectator is one spectator in a run.
type spectator struct {
	index    int
	sim      lockstep.Simulation
	parent   int // the member (slot) or, at or above members, the spectator (index + members) it is served by
	depth    int // hops from the members
	children []int
	readyAt  time.Duration // when its catch-up is in
	from     bucket.Frame  // the first frame its parent forwards it
	ready    bool          // caught up: it steps what arrives
	next     bucket.Frame  // the next frame to step
	inbox    []delivery    // buckets arrived, not stepped yet: bounded by the delay's frames
	final    uint64
	diverged bool
	bytes    int64 // bytes received: catch-up and buckets
	snapshot bucket.Frame
}

// delivery is a bucket that reached a spectator at a time.
type delivery struct {
	at time.Duration
	b  lockstep.Bucket
}

// spectators holds the run's spectators and whom the members serve.
type spectators struct {
	list     []*spectator
	byMember [][]int // per member slot: the spectators it serves
	served   []int64 // per member slot: bucket bytes it sent spectators
}

// addSpectators creates the spectators and their tree at the run's start
// or at Config.SpectatorsFrom.
func (h *harness) addSpectators() {
	n, k := h.cfg.Spectators, h.cfg.SpectatorFanout
	sp := &spectators{byMember: make([][]int, h.cfg.Members), served: make([]int64, h.cfg.Members)}
	h.specs = sp
	var members []bucket.Slot
	for _, m := range h.members {
		if m.active() && !m.catching {
			members = append(members, m.slot)
		}
	}
	from := bucket.Frame(0)
	if h.archive != nil && h.cfg.SpectatorsFrom > 0 {
		from = h.archive.next()
	}
	for i := range n {
		s := &spectator{index: i, sim: h.cfg.NewSim(0), from: from, next: from, snapshot: -1, ready: from == 0}
		// Breadth first: the members' places, then the spectators' in
		// order of delivery.
		if i < k*len(members) {
			s.parent = int(members[i%len(members)])
			sp.byMember[s.parent] = append(sp.byMember[s.parent], i)
		} else {
			p := sp.list[(i-k*len(members))/k]
			s.parent, s.depth = h.cfg.Members+p.index, p.depth+1
			p.children = append(p.children, i)
		}
		sp.list = append(sp.list, s)
		if h.cfg.OnSpectator != nil {
			root := s
			for root.parent >= h.cfg.Members {
				root = sp.list[root.parent-h.cfg.Members]
			}
			h.cfg.OnSpectator(i, bucket.Slot(root.parent), from)
		}
		if !s.ready {
			h.spectatorCatchup(s)
		}
	}
}

// spectatorCatchup loads a late spectator from the archive: a vouched
// checkpoint and the buckets since, or every bucket from frame 0, after a
// modeled transfer as for a joiner.
func (h *harness) spectatorCatchup(s *spectator) {
	a := h.archive
	var live uint64
	for _, m := range h.members {
		if m.active() && !m.catching {
			live |= 1 << m.slot
		}
	}
	first := bucket.Frame(0)
	if snap, ok := s.sim.(lockstep.Snapshotter); ok {
		for i := len(a.cps) - 1; i >= 0; i-- {
			cp := a.cps[i]
			if cp.frame < s.from && bits.OnesCount64(cp.vouchers&live) >= min(2, bits.OnesCount64(live)) {
				if err := snap.Restore(cp.data); err != nil || s.sim.Hash() != cp.hash {
					s.diverged = true
					return
				}
				s.snapshot, first = cp.frame, cp.frame+1
				s.bytes += int64(len(cp.data))
				break
			}
		}
	}
	if first < a.from {
		s.diverged = true // the buckets it needs are gone
		return
	}
	for f := first; f < s.from; f++ {
		b := a.buckets[f-a.from]
		s.sim.Step(b.Frame, b.Commands)
		s.bytes += int64(a.sizes[f-a.from])
	}
	rate := int64(h.cfg.CatchupRate) * int64(max(1, min(bits.OnesCount64(live), h.cfg.CatchupServers)))
	s.readyAt = h.now + 2*h.cfg.Profile.Phases[0].Latency + time.Duration(s.bytes*int64(time.Second)/rate)
	h.pushSpectate(s, s.readyAt)
}

// pushSpectate schedules a look at spectator s at time at.
func (h *harness) pushSpectate(s *spectator, at time.Duration) {
	e := h.newEvent()
	e.kind, e.gen = evSpectate, uint64(s.index)
	h.schedule(at, e)
}

// serve sends bucket b, which member m just stepped, to the spectators it
// serves. They get the archive's copy of it, which is immutable and shared
// (the members' buckets are identical: the history checks it).
func (h *harness) serve(m *member, b lockstep.Bucket) {
	if h.specs == nil || len(h.specs.byMember[m.slot]) == 0 || b.Frame < h.archive.from || b.Frame >= h.archive.next() {
		return
	}
	kept := h.archive.buckets[b.Frame-h.archive.from]
	size := h.archive.sizes[b.Frame-h.archive.from]
	for _, i := range h.specs.byMember[m.slot] {
		h.forward(h.specs.list[i], kept, size, h.now)
		h.specs.served[m.slot] += int64(size)
	}
}

// forward delivers bucket b of size bytes, sent at time sent, to spectator
// s one hop later, and on from there to the spectators s serves as it
// arrives.
func (h *harness) forward(s *spectator, b lockstep.Bucket, size int, sent time.Duration) {
	if b.Frame < s.from || s.diverged {
		return
	}
	at := sent + h.cfg.Profile.Phases[0].Latency + time.Duration(int64(size)*int64(time.Second)/int64(h.cfg.CatchupRate))
	if n := len(s.inbox); n > 0 {
		at = max(at, s.inbox[n-1].at) // a stream keeps its order
	}
	s.inbox = append(s.inbox, delivery{at: at, b: b})
	s.bytes += int64(size)
	h.pushSpectate(s, at)
	for _, c := range s.children {
		h.forward(h.specs.list[c], b, size, at)
	}
}

// spectate steps spectator s as far as what has arrived and its delay
// allow, forwarding what arrived to its children.
func (h *harness) spectate(i int) {
	s := h.specs.list[i]
	if s.diverged {
		return
	}
	if !s.ready && h.now >= s.readyAt {
		s.ready = true
	}
	frame := h.members[0].core.Config().Frame
	for len(s.inbox) > 0 && s.inbox[0].at <= h.now {
		a := s.inbox[0]
		due := time.Duration(a.b.Frame)*frame + h.cfg.SpectatorDelay
		if !s.ready || a.b.Frame != s.next || h.now < due {
			if h.now < due {
				h.pushSpectate(s, due)
			}
			break
		}
		s.sim.Step(a.b.Frame, a.b.Commands)
		s.next++
		state := s.sim.Hash()
		if a.b.Frame <= bucket.Frame(h.cfg.Frames-1) {
			s.final = state
		}
		if ref, ok := h.history.stateOf(a.b.Frame); ok && ref != state {
			s.diverged = true
		}
		s.inbox[0] = delivery{}
		s.inbox = s.inbox[1:]
	}
}

// spectatorsDone reports whether every spectator that did not fail has
// stepped the run's last frame.
func (h *harness) spectatorsDone() bool {
	if h.specs == nil {
		return h.cfg.Spectators == 0
	}
	for _, s := range h.specs.list {
		if !s.diverged && s.next < bucket.Frame(h.cfg.Frames) {
			return false
		}
	}
	return true
}

// spectatorResults reports the spectators and whether every one that
// finished reached the members' final hash.
func (h *harness) spectatorResults(final uint64, ok bool) bool {
	if h.specs == nil {
		return true
	}
	same := true
	frame := h.members[0].core.Config().Frame
	for _, s := range h.specs.list {
		by := fmt.Sprintf("member %d", s.parent)
		if s.parent >= h.cfg.Members {
			by = fmt.Sprintf("spectator %d", s.parent-h.cfg.Members)
		}
		r := Spectator{Index: s.index, ServedBy: by, Depth: s.depth, Stepped: s.next - 1, FinalHash: s.final, Diverged: s.diverged,
			DelayFrames: int(h.cfg.SpectatorDelay / frame), Snapshot: s.snapshot, Bytes: s.bytes, From: s.from}
		h.res.Spectators = append(h.res.Spectators, r)
		if s.diverged || ok && s.next >= bucket.Frame(h.cfg.Frames) && s.final != final {
			same = false
		}
	}
	h.res.SpectatorBytes = h.specs.served
	return same
}
