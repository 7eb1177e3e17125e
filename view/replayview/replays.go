package replayview

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/view"
)

// ErrNoFrame is returned by Replays.Frame for a frame outside every replay.
var ErrNoFrame = errors.New("replayview: no such frame")

// ReplayConfig configures OpenReplays.
type ReplayConfig struct {
	// Files are the replays, the first the reference the others are
	// compared with.
	Files []string
	// Sim builds the simulation a replay was recorded with, from its
	// header (as replay.Verify's factory does). OpenReplays calls it from
	// several goroutines at once (it re-runs the files side by side).
	Sim func(replay.Header) (lockstep.Simulation, error)
	// Clone, when set, copies a simulation of Sim's: the viewer keeps
	// copies every few hundred frames to seek back quickly. Nil: seeking
	// back re-runs from frame 0. Unused for a simulation that is a
	// lockstep.Snapshotter: the viewer keeps its states instead, every 250
	// frames (more sparsely past 8,192 of them).
	Clone func(lockstep.Simulation) lockstep.Simulation
	// Describe, when set, says what a command's payload orders.
	Describe func(payload []byte) string
	// Names, when set, are the names the page shows for Files.
	Names []string
	// Reports are desync reports the files came from: shown, and where
	// the files alone show no divergence, the first one's is taken.
	Reports []view.DesyncReport
	// Worlds, when set, are the worlds the files' members had, from their
	// desync reports (nil: none), by file: each is shown beside the re-run
	// world at its frame, with what differs.
	Worlds []*view.Scene
	// FromReports, when set, are the desync reports the files came from
	// (nil: a file that is not from one), by file: the states each holds
	// (both sides' at the last agreed checkpoint and the divergent frame)
	// are restored and shown side by side at their frames. Restoring needs
	// a simulation that is a lockstep.Snapshotter.
	FromReports []*replay.Report
}

// Replays are replay files opened for the page: their buckets and
// checkpoints in memory, a simulation per file stepped to the frame asked
// for. Its methods are safe for concurrent use.
type Replays struct {
	cfg   ReplayConfig
	files []*replayFile
	info  view.ReplaysInfo

	mu sync.Mutex // guards the files' simulations, their saved states and info
}

// replayFile is one replay in memory.
type replayFile struct {
	name    string
	label   string      // the name the page shows
	world   *view.Scene // the member's own world, from its desync report
	header  replay.Header
	buckets [][]bucket.Command                // by frame
	checks  map[bucket.Frame]lockstep.Section // frame → state hash (Name unused)
	secs    map[bucket.Frame][]lockstep.Section
	changes []replay.Change
	end     string // why the recording ended, or why it was not read to the end
	sim     lockstep.Simulation
	pos     bucket.Frame                         // frames stepped by sim
	keys    map[bucket.Frame]lockstep.Simulation // copies by frames stepped
	saved   map[bucket.Frame][]byte              // or, for a lockstep.Snapshotter, its states
	every   bucket.Frame
	// checking is set while Check re-runs the file: a seek far beyond
	// the states it has kept then waits for it (see reachable).
	checking bool
	scene    view.Scene
	// restored are the states of its desync report, restored, by frame.
	restored map[int64]*view.RestoredPair
}

// OpenReplays reads every file of cfg and compares the others with the
// first: their buckets and recorded hashes. Check then re-runs each, to
// check that it reproduces its own hashes.
func OpenReplays(cfg ReplayConfig) (*Replays, error) {
	if len(cfg.Files) == 0 || cfg.Sim == nil {
		return nil, errors.New("replayview: OpenReplays needs files and a simulation factory")
	}
	r := &Replays{cfg: cfg}
	for _, name := range cfg.Files {
		f, err := readReplay(name)
		if err != nil {
			return nil, err
		}
		if f.sim, err = cfg.Sim(f.header); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		f.every = max(500, bucket.Frame(len(f.buckets)/32))
		f.keys = map[bucket.Frame]lockstep.Simulation{}
		if sn, ok := f.sim.(lockstep.Snapshotter); ok {
			// States are far smaller than copies: keep one every
			// saveEvery frames, at most maxSaved of them.
			f.every = max(saveEvery, bucket.Frame(len(f.buckets)/maxSaved))
			f.saved = map[bucket.Frame][]byte{0: sn.AppendSnapshot(nil)}
		} else if cfg.Clone != nil {
			f.keys[0] = cfg.Clone(f.sim) // seeking back to the start builds nothing
		}
		r.files = append(r.files, f)
	}
	fis := make([]view.ReplayFileInfo, len(r.files))
	for i, f := range r.files {
		name := filepath.Base(f.name)
		if i < len(cfg.Names) {
			name = cfg.Names[i]
		}
		f.label = name
		if i < len(cfg.Worlds) && cfg.Worlds[i] != nil {
			f.world = cfg.Worlds[i]
		}
		fi := view.ReplayFileInfo{
			Name: name, Sim: f.header.SimName + " " + f.header.SimVersion,
			Members: f.header.Members, Self: int(f.header.Self), Frames: int64(len(f.buckets)),
			FrameMS: float64(f.header.FrameLength) / 1e6, Checkpoints: len(f.checks), RerunFrame: -1, End: f.end, WorldFrame: -1,
			Changes: []view.Event{}, RestoredFrames: []int64{},
		}
		for _, c := range f.changes {
			typ := c.Kind.String() // drop, leave, rejoin, join, spectator
			fi.Changes = append(fi.Changes, view.Event{Observer: int(f.header.Self), Type: typ, Frame: int64(c.Frame), Member: int(c.Member), LastFrame: int64(c.LastFrame), Detail: c.Detail})
		}
		if f.world != nil && f.world.Frame > 0 {
			fi.WorldFrame = f.world.Frame - 1 // the scene is after that many frames: after frame Frame-1
		}
		f.restored = map[int64]*view.RestoredPair{}
		if i < len(cfg.FromReports) && cfg.FromReports[i] != nil {
			r.restoreReport(f, cfg.FromReports[i])
			for _, fr := range []int64{cfg.FromReports[i].Agreed, cfg.FromReports[i].Frame} {
				if f.restored[fr] != nil {
					fi.RestoredFrames = append(fi.RestoredFrames, fr)
				}
			}
		}
		fis[i] = fi
	}
	for i, f := range r.files {
		r.info.Files = append(r.info.Files, fis[i])
		r.info.Frames = max(r.info.Frames, int64(len(f.buckets)))
		if i > 0 && r.info.Divergence == nil {
			r.info.Divergence = compare(r.files[0], f, 0, i)
		}
	}
	r.info.Reports = append([]view.DesyncReport{}, cfg.Reports...)
	if r.info.Divergence == nil && len(cfg.Reports) > 0 {
		d := cfg.Reports[0]
		r.info.Divergence = &view.Divergence{A: 0, B: 0, Frame: d.Frame, Section: d.Section, LastAgreed: d.Agreed, InputsFrame: -1,
			Text: fmt.Sprintf("desync report of member %d: %s", d.Self, d.Detail)}
	}
	return r, nil
}

// readReplay reads a replay's buckets and checkpoints. A damaged file is
// read up to its last whole chunk.
func readReplay(name string) (*replayFile, error) {
	rf, err := replay.OpenFile(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer rf.Close()
	f := &replayFile{name: name, header: rf.Header(), checks: map[bucket.Frame]lockstep.Section{}, secs: map[bucket.Frame][]lockstep.Section{}}
	for {
		rec, err := rf.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if len(f.buckets) == 0 {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			f.end = err.Error()
			break // what came before the damage is shown
		}
		switch rec.Kind {
		case replay.KindFrame:
			var cmds []bucket.Command
			for _, c := range rec.Commands {
				c.Payload = append([]byte(nil), c.Payload...)
				cmds = append(cmds, c)
			}
			f.buckets = append(f.buckets, cmds)
		case replay.KindCheckpoint:
			f.checks[rec.Frame] = lockstep.Section{Hash: rec.Hash}
			f.secs[rec.Frame] = append([]lockstep.Section(nil), rec.Sections...)
		case replay.KindChange:
			f.changes = append(f.changes, rec.Change)
		case replay.KindEnd:
			f.end = rec.Trailer.Reason.String()
		}
	}
	return f, nil
}

// reset rebuilds f's simulation at frame 0.
func (r *Replays) reset(f *replayFile) error {
	sim, err := r.cfg.Sim(f.header)
	if err != nil {
		return err
	}
	f.sim, f.pos = sim, 0
	return nil
}

// saveEvery and maxSaved: a Snapshotter's states are kept every saveEvery
// frames, or more sparsely to keep at most maxSaved; a seek then re-runs
// fewer than saveEvery frames (12.5 s of a 20 Hz replay) up to a day long.
const (
	saveEvery = 250
	maxSaved  = 8192
)

// stepTo steps f's simulation until it has stepped n frames (or all of
// f), keeping copies (or states) every f.every frames.
func (r *Replays) stepTo(f *replayFile, n bucket.Frame) {
	n = min(n, bucket.Frame(len(f.buckets)))
	if f.saved != nil {
		r.stepSaved(f, n)
		return
	}
	if n < f.pos || r.cfg.Clone != nil {
		// Start from the nearest copy at or before n when it is ahead,
		// else from frame 0 when seeking back.
		best := bucket.Frame(-1)
		for at := range f.keys {
			if at <= n && at > best {
				best = at
			}
		}
		switch {
		case best >= 0 && (n < f.pos || best > f.pos):
			f.sim, f.pos = r.cfg.Clone(f.keys[best]), best
		case n < f.pos:
			if r.reset(f) != nil {
				return // the factory built it once: it does not fail now
			}
		}
	}
	for ; f.pos < n; f.pos++ {
		f.sim.Step(f.pos, f.buckets[f.pos])
		if r.cfg.Clone != nil && (f.pos+1)%f.every == 0 {
			if _, ok := f.keys[f.pos+1]; !ok {
				f.keys[f.pos+1] = r.cfg.Clone(f.sim)
			}
		}
	}
}

// stepSaved is stepTo for a Snapshotter: it restores the nearest state
// kept at or before n when that is ahead of f.pos (or n is behind it),
// and keeps one every f.every frames.
func (r *Replays) stepSaved(f *replayFile, n bucket.Frame) {
	sn := f.sim.(lockstep.Snapshotter)
	if n < f.pos || n-f.pos >= f.every || f.saved[n/f.every*f.every] != nil {
		// Restoring is cheaper than stepping even one frame more: start
		// from the newest state kept at or before n when it is ahead.
		best := n / f.every * f.every
		for best > 0 && f.saved[best] == nil {
			best -= f.every
		}
		if n < f.pos || best > f.pos {
			if sn.Restore(f.saved[best]) == nil {
				f.pos = best
			} else if r.reset(f) == nil { // a state it saved itself: not expected
				sn = f.sim.(lockstep.Snapshotter)
			}
		}
	}
	for ; f.pos < n; f.pos++ {
		f.sim.Step(f.pos, f.buckets[f.pos])
		if (f.pos+1)%f.every == 0 && f.saved[f.pos+1] == nil {
			f.saved[f.pos+1] = sn.AppendSnapshot(nil)
		}
	}
}

// reachable returns n, the frames a seek steps f's simulation to, or
// fewer while Check is re-running f and has not yet kept a state (or a
// copy) within f.every frames before n: then the frames of the nearest it
// has kept, or f.pos when that is nearer. Such a seek shows an earlier
// world at once instead of re-running, under r.mu, the way Check is
// re-running anyway; asked again when Check has got there, it steps fewer
// than f.every frames. So a seek steps at most f.every frames while Check
// runs.
func (r *Replays) reachable(f *replayFile, n bucket.Frame) bucket.Frame {
	n = min(n, bucket.Frame(len(f.buckets)))
	if !f.checking || (f.saved == nil && r.cfg.Clone == nil) {
		return n
	}
	best := bucket.Frame(0)
	if f.saved != nil {
		for best = n / f.every * f.every; best > 0 && f.saved[best] == nil; best -= f.every {
		}
	} else {
		for at := range f.keys {
			if at <= n && at > best {
				best = at
			}
		}
	}
	if f.pos <= n && f.pos > best {
		best = f.pos
	}
	if n-best <= f.every {
		return n
	}
	return best
}

// compare finds where b first disagrees with a.
func compare(a, b *replayFile, ia, ib int) *view.Divergence {
	d := &view.Divergence{A: ia, B: ib, Frame: -1, LastAgreed: -1, InputsFrame: -1}
	n := min(len(a.buckets), len(b.buckets))
	for fr := range n {
		if lockstep.InputHash(bucket.Frame(fr), a.buckets[fr]) != lockstep.InputHash(bucket.Frame(fr), b.buckets[fr]) {
			d.InputsFrame = int64(fr)
			break
		}
	}
	for fr := range bucket.Frame(n) {
		ca, ok1 := a.checks[fr]
		cb, ok2 := b.checks[fr]
		if !ok1 || !ok2 {
			continue
		}
		if ca.Hash == cb.Hash {
			d.LastAgreed = int64(fr)
			continue
		}
		d.Frame = int64(fr)
		d.Section = firstSection(a.secs[fr], b.secs[fr])
		break
	}
	if d.Frame < 0 && d.InputsFrame < 0 {
		return nil
	}
	if d.InputsFrame >= 0 && (d.Frame < 0 || d.InputsFrame <= d.Frame) {
		d.Frame, d.Section = d.InputsFrame, ""
		d.Text = fmt.Sprintf("the buckets of %s and %s differ from frame %d: their inputs diverged", a.label, b.label, d.InputsFrame)
		return d
	}
	d.Text = fmt.Sprintf("the recorded states of %s and %s first differ at frame %d", a.label, b.label, d.Frame)
	if d.Section != "" {
		d.Text += fmt.Sprintf(", first in section %q", d.Section)
	}
	if d.LastAgreed >= 0 {
		d.Text += fmt.Sprintf(" (the checkpoint of frame %d agreed)", d.LastAgreed)
	}
	if d.InputsFrame < 0 {
		d.Text += "; their buckets agree: the states diverged with the same commands"
	}
	return d
}

// firstSection returns the name of the first section whose hashes differ.
func firstSection(a, b []lockstep.Section) string {
	for i := range min(len(a), len(b)) {
		if a[i].Hash != b[i].Hash {
			return a[i].Name
		}
	}
	return ""
}

// Info describes the replays and where they first disagree.
// Until Check has returned, Info.Checked is false and no file is said to
// reproduce its hashes.
func (r *Replays) Info() view.ReplaysInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	info := r.info
	info.Files = append([]view.ReplayFileInfo(nil), r.info.Files...)
	return info
}

// Frame returns every replay at frame f: the worlds after it, its
// buckets, the checkpoints. It returns ErrNoFrame outside every replay.
func (r *Replays) Frame(f int64) (view.ReplayFrame, error) {
	if f < 0 || f >= r.info.Frames {
		return view.ReplayFrame{}, fmt.Errorf("%w: %d (the replays hold frames 0 to %d)", ErrNoFrame, f, r.info.Frames-1)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := view.ReplayFrame{Frame: f}
	for _, rf := range r.files {
		side := view.ReplaySide{Commands: []view.ReplayCommand{}, Diff: []view.UnitDiff{}, At: f}
		if f < int64(len(rf.buckets)) {
			n := r.reachable(rf, bucket.Frame(f)+1)
			r.stepTo(rf, n)
			if side.At = int64(rf.pos) - 1; side.At != f {
				out.Pending = true
			}
			side.Hash = fmt.Sprintf("%016x", rf.sim.Hash())
			if d, ok := rf.sim.(view.Drawable); ok {
				d.Scene(&rf.scene)
				sc := rf.scene
				sc.Units = append([]view.Unit(nil), rf.scene.Units...)
				sc.Blocked = append([]byte(nil), rf.scene.Blocked...)
				side.Scene = &sc
			}
			for _, c := range rf.buckets[f] {
				rc := view.ReplayCommand{Slot: int(c.Slot), Seq: c.Seq, Text: fmt.Sprintf("%d bytes", len(c.Payload))}
				if r.cfg.Describe != nil {
					rc.Text = r.cfg.Describe(c.Payload)
				}
				side.Commands = append(side.Commands, rc)
			}
		}
		if rf.world != nil && side.Scene != nil && rf.world.Frame == f+1 {
			side.Recorded, side.RecordedDiff = rf.world, diffScenes(side.Scene, rf.world)
		}
		side.Restored = rf.restored[f]
		for at := bucket.Frame(f); at >= 0; at-- {
			if c, ok := rf.checks[at]; ok {
				cp := &view.ReplayCheckpoint{Frame: int64(at), Hash: fmt.Sprintf("%016x", c.Hash), Sections: []view.SectionHash{}}
				for _, s := range rf.secs[at] {
					cp.Sections = append(cp.Sections, view.SectionHash{Name: s.Name, Hash: fmt.Sprintf("%016x", s.Hash)})
				}
				side.Checkpoint = cp
				break
			}
			if bucket.Frame(f)-at > 4096 {
				break
			}
		}
		out.Sides = append(out.Sides, side)
	}
	for i := 1; i < len(out.Sides); i++ {
		out.Sides[i].Diff = diffScenes(out.Sides[0].Scene, out.Sides[i].Scene)
	}
	return out, nil
}

// diffScenes lists the units of b that differ from a's.
func diffScenes(a, b *view.Scene) []view.UnitDiff {
	out := []view.UnitDiff{}
	if a == nil || b == nil {
		return out
	}
	byID := make(map[uint32]view.Unit, len(a.Units))
	for _, u := range a.Units {
		byID[u.ID] = u
	}
	seen := make(map[uint32]bool, len(b.Units))
	for _, u := range b.Units {
		seen[u.ID] = true
		v, ok := byID[u.ID]
		switch {
		case !ok:
			out = append(out, view.UnitDiff{ID: u.ID, What: "only here"})
		case v.X != u.X || v.Y != u.Y:
			out = append(out, view.UnitDiff{ID: u.ID, What: "moved"})
		case v.HP != u.HP:
			out = append(out, view.UnitDiff{ID: u.ID, What: "hp"})
		}
	}
	for _, u := range a.Units {
		if !seen[u.ID] {
			out = append(out, view.UnitDiff{ID: u.ID, What: "missing here"})
		}
	}
	return out
}
