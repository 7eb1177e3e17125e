package locksteptest

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Rejoins and late joins: a member comes back (FaultRejoin) or takes an
// open slot (FaultJoin) with a new core made with lockstep.Config.Join. Once
// its core is admitted at frame A, it catches its simulation up to A-1 from
// what the other members hold:
//
//   - with Config.CheckpointEvery and a lockstep.Snapshotter simulation,
//     the newest checkpoint at or before A-1 whose state hash at least two
//     live members reached (every live member, if fewer than two), then the
//     buckets after it;
//   - otherwise every bucket from frame 0, stepped on a new simulation.
//
// The transfer runs beside the datagrams, on a path of its own as a libp2p
// stream would, from at most Config.CatchupServers members at
// Config.CatchupRate each: it takes a round trip plus its bytes at their
// combined rate, and ends no earlier than the servers have stepped A-1. The
// joiner then restores and steps the catch-up frames (on this machine's
// clock, measured) and the live buckets its core emitted meanwhile, and runs
// live. Its core sealed frames from A on from the moment it was admitted,
// so the others never wait for its catch-up.

// Defaults of the transfer model.
const (
	defaultCatchupRate    = 1 << 20
	defaultCatchupServers = 3
	// keptCheckpoints is how many checkpoints the members keep.
	keptCheckpoints = 2
)

// checkpoint is the members' saved state at one frame.
type checkpoint struct {
	frame    bucket.Frame
	hash     uint64
	data     []byte // the first member's snapshot; the others' equal it when their hash does
	vouchers uint64 // members whose state hash at frame was hash
}

// archive is what the members hold for joiners: their newest checkpoints,
// and the buckets since the oldest of them (every bucket from frame 0
// without checkpoints). The members' buckets are identical (the history
// checks it), so one copy stands for every member's.
type archive struct {
	from    bucket.Frame      // frame of buckets[0]
	buckets []lockstep.Bucket // deep copies, consecutive frames
	sizes   []int             // each bucket's bytes in the transfer (bucketBytes)
	cps     []checkpoint      // at most keptCheckpoints, oldest first
	buf     []byte
}

// next returns the first frame the archive does not hold.
func (a *archive) next() bucket.Frame { return a.from + bucket.Frame(len(a.buckets)) }

// bucketBytes is the size of a bucket in the catch-up transfer: the frame
// and the command count as varints, then per command its slot, its
// sequence number and payload length as varints, and the payload.
func bucketBytes(b lockstep.Bucket) int {
	n := varintLen(uint64(b.Frame)) + varintLen(uint64(len(b.Commands)))
	for _, c := range b.Commands {
		n += 1 + varintLen(uint64(c.Seq)) + varintLen(uint64(len(c.Payload))) + len(c.Payload)
	}
	return n
}

func varintLen(v uint64) int { return len(binary.AppendUvarint(nil, v)) }

// keep records member m's bucket of frame f into the archive (the first
// member to step a frame records it) and, at checkpoint frames, its
// snapshot.
func (h *harness) keep(m *member, b lockstep.Bucket, state uint64) {
	a := h.archive
	if a == nil {
		return
	}
	if b.Frame == a.next() {
		cmds := make([]bucket.Command, len(b.Commands))
		for i, c := range b.Commands {
			c.Payload = slices.Clone(c.Payload)
			cmds[i] = c
		}
		a.buckets = append(a.buckets, lockstep.Bucket{Frame: b.Frame, Commands: cmds})
		a.sizes = append(a.sizes, bucketBytes(b))
	}
	every := bucket.Frame(h.cfg.CheckpointEvery)
	snap, ok := m.sim.(lockstep.Snapshotter)
	if every <= 0 || !ok || b.Frame%every != every-1 {
		return
	}
	// The checkpoint of frame f is the state after stepping f.
	i := slices.IndexFunc(a.cps, func(cp checkpoint) bool { return cp.frame == b.Frame })
	if i < 0 {
		a.buf = snap.AppendSnapshot(a.buf[:0])
		a.cps = append(a.cps, checkpoint{frame: b.Frame, hash: state, data: slices.Clone(a.buf)})
		if len(a.cps) > keptCheckpoints {
			a.cps = slices.Delete(a.cps, 0, 1)
			// Buckets before the oldest checkpoint are no longer served.
			if drop := int(a.cps[0].frame + 1 - a.from); drop > 0 && drop <= len(a.buckets) {
				clear(a.buckets[:drop])
				a.buckets = slices.Delete(a.buckets, 0, drop)
				a.sizes = slices.Delete(a.sizes, 0, drop)
				a.from += bucket.Frame(drop)
			}
		}
		i = len(a.cps) - 1
	} else {
		// Every member saves its state; the first one's bytes stand for
		// the others' that hash the same.
		a.buf = snap.AppendSnapshot(a.buf[:0])
	}
	if a.cps[i].hash == state {
		a.cps[i].vouchers |= 1 << m.slot
	}
}

// join brings member slot back (FaultRejoin) or into its open slot
// (FaultJoin) with a new core that asks to be admitted.
func (h *harness) join(f Fault) {
	m := h.members[f.Slot]
	if m.active() {
		return
	}
	kind := "rejoin"
	if f.Kind == FaultJoin {
		kind = "late"
	}
	cc := h.coreCfg[f.Slot]
	cc.Join = true
	core, err := lockstep.NewCore(cc, h.now)
	if err != nil {
		m.fail(err)
		return
	}
	m.core, m.sim = core, h.cfg.NewSim(f.Slot)
	m.killed, m.stopped, m.left, m.open = false, false, false, false
	m.muted, m.frozen = false, 0
	m.catching, m.transfer, m.stallsAt = true, false, -1
	m.pendingLive = m.pendingLive[:0]
	// Its earlier incarnation's commands that never ran everywhere are
	// forgotten: the new one numbers its commands from 0 again.
	for k := range h.cmds {
		if k.slot == f.Slot {
			delete(h.cmds, k)
		}
	}
	m.admission = len(h.res.Admissions)
	h.res.Admissions = append(h.res.Admissions, Admission{Slot: f.Slot, Kind: kind, RequestedFrame: f.Frame, AdmittedFrame: -1, Snapshot: -1})
	h.wake(m, h.now)
}

// holdLive keeps a catching-up member's live bucket until its catch-up is
// done: a deep copy, since the core's buckets are valid until its next
// Ready only.
func (m *member) holdLive(b lockstep.Bucket) {
	cmds := make([]bucket.Command, len(b.Commands))
	for i, c := range b.Commands {
		c.Payload = slices.Clone(c.Payload)
		cmds[i] = c
	}
	m.pendingLive = append(m.pendingLive, lockstep.Bucket{Frame: b.Frame, Commands: cmds})
}

// servers returns the members that may serve a catch-up: active, caught
// up, not m.
func (h *harness) servers(m *member) uint64 {
	var s uint64
	for _, o := range h.members {
		if o != m && o.active() && !o.catching {
			s |= 1 << o.slot
		}
	}
	return s
}

// startCatchup begins m's transfer once its core is admitted.
func (h *harness) startCatchup(m *member) {
	m.transfer = true
	m.admittedAt = h.now
	ad := &h.res.Admissions[m.admission]
	ad.AdmittedFrame = m.core.AdmittedAt()
	ad.Servers = min(bits.OnesCount64(h.servers(m)), h.cfg.CatchupServers)
	h.scheduleCatchup(m, h.now)
}

// checkpointFor returns the newest checkpoint before frame at whose state
// hash at least two live members reached (every live member, when fewer
// than two are left), or nil.
func (h *harness) checkpointFor(m *member, at bucket.Frame) *checkpoint {
	if _, ok := m.sim.(lockstep.Snapshotter); !ok || h.archive == nil {
		return nil
	}
	live := h.servers(m)
	need := min(2, bits.OnesCount64(live))
	for i := len(h.archive.cps) - 1; i >= 0; i-- {
		cp := &h.archive.cps[i]
		if cp.frame < at && bits.OnesCount64(cp.vouchers&live) >= need {
			return cp
		}
	}
	return nil
}

func (h *harness) scheduleCatchup(m *member, at time.Duration) {
	e := h.newEvent()
	e.kind, e.to = evCatchup, m.slot
	h.schedule(at, e)
}

// catchup completes m's transfer if its data is in by now, or schedules
// another look.
func (h *harness) catchup(m *member) {
	ad := &h.res.Admissions[m.admission]
	a := h.archive
	frame := m.core.Config().Frame
	if a.next() < ad.AdmittedFrame {
		// The servers have not stepped the frame before the admission yet.
		h.scheduleCatchup(m, h.now+frame)
		return
	}
	from := bucket.Frame(0) // first bucket to transfer
	cp := h.checkpointFor(m, ad.AdmittedFrame)
	if cp != nil {
		ad.Snapshot, from = cp.frame, cp.frame+1
	}
	if from < a.from {
		m.fail(fmt.Errorf("locksteptest: member %d cannot catch up: buckets from frame %d are gone", m.slot, from))
		m.killed = true
		return
	}
	var bytes int64
	if cp != nil {
		bytes += int64(len(cp.data))
	}
	for f := from; f < ad.AdmittedFrame; f++ {
		bytes += int64(a.sizes[f-a.from])
	}
	rate := int64(h.cfg.CatchupRate) * int64(max(ad.Servers, 1))
	latency := h.cfg.Profile.Phases[0].Latency
	done := m.admittedAt + 2*latency + time.Duration(bytes*int64(time.Second)/rate)
	if h.now < done {
		h.scheduleCatchup(m, done)
		return
	}
	ad.Bytes, ad.Transfer = bytes, h.now-m.admittedAt
	start := time.Now()
	sim := h.cfg.NewSim(m.slot)
	if cp != nil {
		if err := sim.(lockstep.Snapshotter).Restore(cp.data); err != nil || sim.Hash() != cp.hash {
			m.fail(fmt.Errorf("locksteptest: member %d: checkpoint of frame %d does not restore to its vouched hash (%v)", m.slot, cp.frame, err))
			m.killed = true
			return
		}
		ad.Verified = true
	}
	for f := from; f < ad.AdmittedFrame; f++ {
		b := a.buckets[f-a.from]
		sim.Step(b.Frame, b.Commands)
		h.executedBy(m, b)
	}
	m.sim, m.stepped = sim, ad.AdmittedFrame-1
	h.history.joined(m.slot, ad.AdmittedFrame)
	m.catching = false
	ad.CatchupFrames = int(ad.AdmittedFrame-from) + len(m.pendingLive)
	m.lastStep = h.now
	for _, b := range m.pendingLive {
		h.step(m, b)
	}
	clear(m.pendingLive)
	m.pendingLive = m.pendingLive[:0]
	ad.Resimulate = time.Since(start)
}

// stallWindow counts m's stalls over Config.StallFrom..StallTo as it
// steps frame f.
func (h *harness) stallWindow(m *member, f bucket.Frame) {
	switch f {
	case h.cfg.StallFrom:
		m.stallsAt = m.core.Stats().Stalls
	case h.cfg.StallTo:
		if m.stallsAt >= 0 {
			h.res.WindowStalls += m.core.Stats().Stalls - m.stallsAt
			h.res.WindowFrames += int64(h.cfg.StallTo - h.cfg.StallFrom)
		}
	}
}

// executedBy marks the commands of b executed by member m.
func (h *harness) executedBy(m *member, b lockstep.Bucket) {
	for _, c := range b.Commands {
		k := commandKey{c.Slot, c.Seq}
		if p := h.cmds[k]; p != nil {
			p.executed[m.slot] = h.now
			if h.completed(p) {
				delete(h.cmds, k)
			}
		}
	}
}
