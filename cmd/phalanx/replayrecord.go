package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/rng"
	"github.com/phalanx-net/phalanx/view"
)

// recorder writes one replay per member of a phalanx sim run, as
// DIR/member-N.phx.
type recorder struct {
	frames  bucket.Frame
	files   []*os.File
	writers []*replay.Writer
	sims    []lockstep.Simulation
	states  []*replay.StateRing // each member's recent states, for its desync report (Snapshotter simulations)
	final   []uint64            // state hash after the last frame, once recorded
	done    []bool
	tag     uint16 // the harness's session tag, under which statements are signed
	err     error
	dir     string
	reports []string // the desync reports written
}

// newRecorder creates dir and one replay file per member.
func newRecorder(dir string, f *runFlags, g *game) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	h := replay.Header{
		Session:     binary.LittleEndian.AppendUint16(nil, uint16(f.seed)), // the harness's session tag
		FrameLength: time.Duration(f.frameMS) * time.Millisecond,
		SimName:     g.name,
		SimVersion:  g.version,
		SimConfig:   g.config,
		Seed:        rng.SeedFromUint64(f.seed),
	}
	for i := range f.peers {
		h.Members = append(h.Members, fmt.Sprintf("member-%d", i))
	}
	r := &recorder{
		frames: bucket.Frame(f.frames),
		sims:   make([]lockstep.Simulation, f.peers),
		states: make([]*replay.StateRing, f.peers),
		final:  make([]uint64, f.peers),
		done:   make([]bool, f.peers),
		tag:    uint16(f.seed),
		dir:    dir,
	}
	for i := range f.peers {
		file, err := os.Create(filepath.Join(dir, fmt.Sprintf("member-%d.phx", i)))
		if err != nil {
			r.finish()
			return nil, err
		}
		r.files = append(r.files, file)
		h.Self = bucket.Slot(i)
		w, err := replay.NewWriter(file, h)
		if err != nil {
			r.finish()
			return nil, err
		}
		r.writers = append(r.writers, w)
	}
	return r, nil
}

// hook returns the locksteptest.Config.OnStep function recording every
// member's buckets up to the run's last frame, or nil for a nil recorder.
func (r *recorder) hook() func(bucket.Slot, lockstep.Bucket, lockstep.Simulation) {
	if r == nil {
		return nil
	}
	return func(slot bucket.Slot, b lockstep.Bucket, sim lockstep.Simulation) {
		if b.Frame >= r.frames {
			return // members run on while the slowest finishes: not part of the run
		}
		if b.Frame != bucket.Frame(r.writers[slot].Frames()) {
			// A member that rejoined steps on from its admission: its
			// replay ends where it died (the others' hold the session).
			return
		}
		r.sims[slot] = sim
		if sn, ok := sim.(lockstep.Snapshotter); ok {
			if r.states[slot] == nil {
				r.states[slot] = replay.NewStateRing(0)
			}
			r.states[slot].Keep(b.Frame, sn, sim.Hash())
		}
		if err := r.writers[slot].Record(b, sim); err != nil {
			// The writer keeps its error: this member's file ends at its
			// last whole chunk; the others go on.
			if r.err == nil {
				r.err = fmt.Errorf("recording member %d: %w", slot, err)
			}
			return
		}
		if b.Frame == r.frames-1 {
			r.final[slot], r.done[slot] = sim.Hash(), true
		}
	}
}

// eventHook returns the locksteptest.Config.OnEvent function recording
// every member's membership changes (drops and leaves) as its core reports
// them, or nil for a nil recorder.
func (r *recorder) eventHook() func(bucket.Slot, lockstep.Event) {
	if r == nil {
		return nil
	}
	return func(slot bucket.Slot, e lockstep.Event) {
		if c, ok := replay.ChangeOf(e); ok {
			r.writers[slot].Membership(c) // an error is kept by the writer and returned by Close
		}
		if e.Type == lockstep.EventDesync {
			r.report(slot, e)
		}
	}
}

// spectatorHook returns the locksteptest.Config.OnSpectator function
// recording each spectator's admission in the replay of the member its
// tree hangs from, at the frame it arrives (or the next frame that member
// records, if it is past it), or nil for a nil recorder.
func (r *recorder) spectatorHook() func(int, bucket.Slot, bucket.Frame) {
	if r == nil {
		return nil
	}
	return func(index int, root bucket.Slot, from bucket.Frame) {
		if int(root) >= len(r.writers) {
			return // a late joiner's slot: it has no replay here
		}
		w := r.writers[root]
		c := replay.Change{Kind: replay.ChangeSpectator, Frame: max(from, bucket.Frame(w.Frames())), Member: root, LastFrame: -1,
			Detail: fmt.Sprintf("spectator-%d, stepping from frame %d", index, from)}
		w.Membership(c) // an error is kept by the writer and returned by Close
	}
}

// report writes member slot's desync report beside its replay, with the
// replay as recorded so far.
func (r *recorder) report(slot bucket.Slot, e lockstep.Event) {
	w := r.writers[slot]
	var recorded []byte
	if w.Flush() == nil {
		recorded, _ = os.ReadFile(r.files[slot].Name())
	}
	rep := replay.NewReport(w.Header(), e, recorded)
	if d, ok := r.sims[slot].(view.Drawable); ok {
		var sc view.Scene
		d.Scene(&sc)
		if b, err := json.Marshal(&sc); err == nil {
			rep.WorldFrame, rep.World = sc.Frame, b
		}
	}
	if sn, ok := r.sims[slot].(lockstep.Snapshotter); ok {
		rep.State = sn.AppendSnapshot(nil)
	}
	// Both sides' states: the harness holds every member's, where members
	// over a network exchange theirs (peer/desyncstates.go).
	rep.AddStates(int(slot), r.states[slot])
	if e.With != slot {
		rep.AddStates(int(e.With), r.states[e.With])
	}
	path, err := replay.WriteReport(r.dir, rep)
	if err != nil {
		if r.err == nil {
			r.err = fmt.Errorf("member %d: %w", slot, err)
		}
		return
	}
	r.reports = append(r.reports, path)
}

// printReports names the desync reports written, if any.
func (r *recorder) printReports(w io.Writer) {
	if r == nil {
		return
	}
	for _, p := range r.reports {
		fmt.Fprintln(w, "phalanx sim: desync report written:", p)
	}
}

// statementHook returns the locksteptest.Config.OnStatement function
// recording the statements every member's core holds, or nil for a nil
// recorder.
func (r *recorder) statementHook() func(bucket.Slot, bucket.Slot, wire.Statement) {
	if r == nil {
		return nil
	}
	return func(slot, m bucket.Slot, st wire.Statement) {
		// An error is kept by the writer and returned by Close.
		r.writers[slot].Statement(replay.Statement{Member: m, Tag: r.tag, Seal: st.Seal, Count: st.Count, Signature: st.Signature})
	}
}

// finish closes every replay: completed for the members that recorded
// every frame, closed early for the others. It returns the first error.
func (r *recorder) finish() error {
	if r == nil {
		return nil
	}
	err := r.err
	for i, w := range r.writers {
		reason, hash := replay.EndCompleted, r.final[i]
		if !r.done[i] {
			reason, hash = replay.EndClosedEarly, 0
			if r.sims[i] != nil {
				hash = r.sims[i].Hash() // it has stepped no further than it recorded
			}
		}
		if cerr := w.Close(bucket.Frame(w.Frames()-1), hash, reason); cerr != nil && err == nil {
			err = fmt.Errorf("closing the replay of member %d: %w", i, cerr)
		}
	}
	for _, f := range r.files {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}
