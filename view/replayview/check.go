package replayview

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/view"
)

// Check re-runs every file from its buckets, on simulations of its own,
// and compares the hashes with the recorded checkpoints: it fills in each
// file's Reproduces, RerunFrame and RerunSection, and sets Info().Checked
// when done. On the way it keeps the states (or copies) Frame seeks from,
// so a seek after Check re-runs at most a few hundred frames. The page is
// served meanwhile: Frame answers while Check runs, without re-running
// far itself (see ReplayFrame.Pending).
//
// Files of one session (the same header but for the member that recorded
// it, and buckets of which one's are the start of the other's) are re-run
// as one: a simulation built from a header must not depend on its Self,
// as a lockstep simulation is the same on every member. Other files are
// re-run side by side.
//
// Call it once, best before the page is served (Frame shares its work
// from the moment it starts); it returns when every file is checked or
// ctx ends (then Checked stays false, and seeks re-run the way
// themselves).
func (r *Replays) Check(ctx context.Context) {
	results := make([]view.ReplayFileInfo, len(r.files))
	errs := make([]error, len(r.files))
	r.mu.Lock()
	for _, f := range r.files {
		f.checking = true
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, run := range r.runs() {
		wg.Go(func() {
			err := r.check(ctx, run, results)
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, i := range run {
				errs[i] = err
				r.files[i].checking = false
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.files {
		fi := &r.info.Files[i]
		fi.Reproduces, fi.RerunFrame, fi.RerunSection = results[i].Reproduces, results[i].RerunFrame, results[i].RerunSection
		if errs[i] != nil {
			fi.Error = errs[i].Error()
		}
	}
	r.info.Checked = true
}

// runs groups the files into re-runs: each is the indexes of files of one
// session, the longest first (it is the one stepped).
func (r *Replays) runs() [][]int {
	var out [][]int
	for i, f := range r.files {
		joined := false
		for k, run := range out {
			if g := r.files[run[0]]; sameRun(g, f) {
				out[k] = append(run, i)
				if len(f.buckets) > len(g.buckets) {
					out[k][0], out[k][len(run)] = i, run[0]
				}
				joined = true
				break
			}
		}
		if !joined {
			out = append(out, []int{i})
		}
	}
	return out
}

// sameRun reports whether re-running a and b gives the same states: the
// same header but for Self, the version and the engine, and buckets of
// which the shorter's are the start of the longer's.
func sameRun(a, b *replayFile) bool {
	ha, hb := a.header, b.header
	if ha.SimName != hb.SimName || ha.SimVersion != hb.SimVersion || !bytes.Equal(ha.SimConfig, hb.SimConfig) ||
		ha.Seed != hb.Seed || ha.FrameLength != hb.FrameLength || !bytes.Equal(ha.Session, hb.Session) ||
		!slices.Equal(ha.Members, hb.Members) {
		return false
	}
	for fr := range min(len(a.buckets), len(b.buckets)) {
		if lockstep.InputHash(bucket.Frame(fr), a.buckets[fr]) != lockstep.InputHash(bucket.Frame(fr), b.buckets[fr]) {
			return false
		}
	}
	return true
}

// check steps a simulation of its own through the buckets of run[0], the
// longest of the files of one run, noting for each file the first of its
// recorded checkpoints whose hash it does not reproduce (in results), and
// hands Frame a saved state (or a copy) every f.every frames of each.
func (r *Replays) check(ctx context.Context, run []int, results []view.ReplayFileInfo) error {
	lead := r.files[run[0]]
	sim, err := r.cfg.Sim(lead.header)
	if err != nil {
		return err
	}
	sn, snapshots := sim.(lockstep.Snapshotter)
	for _, i := range run {
		results[i].Reproduces, results[i].RerunFrame = true, -1
	}
	var secs []lockstep.Section
	for fr := range bucket.Frame(len(lead.buckets)) {
		if fr%1000 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		sim.Step(fr, lead.buckets[fr])
		var hash uint64
		hashed := false
		for _, i := range run {
			f, fi := r.files[i], &results[i]
			want, ok := f.checks[fr]
			if !ok || !fi.Reproduces || int(fr) >= len(f.buckets) {
				continue
			}
			if !hashed {
				hash, hashed = sim.Hash(), true
			}
			if hash != want.Hash {
				fi.Reproduces, fi.RerunFrame = false, int64(fr)
				if sh, ok := sim.(lockstep.SectionHasher); ok {
					secs = sh.SectionHashes(secs[:0])
					fi.RerunSection = firstSection(f.secs[fr], secs)
				}
			}
		}
		r.keep(run, sim, sn, snapshots, fr+1)
	}
	return nil
}

// keep hands Frame the state (or a copy) of sim after at frames, for
// each file of run whose f.every divides at, and notes how far each is
// checked.
func (r *Replays) keep(run []int, sim lockstep.Simulation, sn lockstep.Snapshotter, snapshots bool, at bucket.Frame) {
	var state []byte // shared by the files: restoring only reads it
	var c lockstep.Simulation
	note := false
	for _, i := range run {
		f := r.files[i]
		if at > bucket.Frame(len(f.buckets)) {
			continue
		}
		if at%f.every == 0 || int(at) == len(f.buckets) {
			note = true
		}
		switch {
		case at%f.every != 0:
		case snapshots && state == nil:
			state = sn.AppendSnapshot(nil)
		case !snapshots && r.cfg.Clone != nil && c == nil:
			c = r.cfg.Clone(sim)
		}
	}
	if !note {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, i := range run {
		f := r.files[i]
		if at > bucket.Frame(len(f.buckets)) {
			continue
		}
		if at%f.every == 0 {
			if state != nil && f.saved[at] == nil {
				f.saved[at] = state
			}
			if c != nil && f.keys[at] == nil {
				f.keys[at] = c // shared too: a seek steps a copy of it
			}
		}
		r.info.Files[i].CheckedTo = max(r.info.Files[i].CheckedTo, int64(min(at, bucket.Frame(len(f.buckets)))))
	}
}
