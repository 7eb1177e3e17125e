package replayview

import (
	"context"
	"sync"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/view"
)

// Check re-runs every file from its buckets, side by side on simulations
// of its own, and compares the hashes with the recorded checkpoints: it
// fills in each file's Reproduces, RerunFrame and RerunSection, and sets
// Info().Checked when done. On the way it keeps the states (or copies)
// Frame seeks from, so a seek after Check re-runs at most a few hundred
// frames. The page is served meanwhile: Frame answers while Check runs.
// Call it once; it returns when every file is checked or ctx ends (then
// Checked stays false).
func (r *Replays) Check(ctx context.Context) {
	results := make([]view.ReplayFileInfo, len(r.files))
	errs := make([]error, len(r.files))
	var wg sync.WaitGroup
	for i, f := range r.files {
		wg.Go(func() { errs[i] = r.check(ctx, f, &results[i]) })
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

// check steps a simulation of f's own through all of f, noting the first
// recorded checkpoint whose hash it does not reproduce, and hands Frame a
// saved state (or a copy) every f.every frames.
func (r *Replays) check(ctx context.Context, f *replayFile, fi *view.ReplayFileInfo) error {
	sim, err := r.cfg.Sim(f.header)
	if err != nil {
		return err
	}
	sn, snapshots := sim.(lockstep.Snapshotter)
	fi.Reproduces, fi.RerunFrame = true, -1
	var secs []lockstep.Section
	for fr := range bucket.Frame(len(f.buckets)) {
		if fr%1000 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		sim.Step(fr, f.buckets[fr])
		if want, ok := f.checks[fr]; ok && fi.Reproduces && sim.Hash() != want.Hash {
			fi.Reproduces, fi.RerunFrame = false, int64(fr)
			if sh, ok := sim.(lockstep.SectionHasher); ok {
				secs = sh.SectionHashes(secs[:0])
				fi.RerunSection = firstSection(f.secs[fr], secs)
			}
		}
		if at := fr + 1; at%f.every == 0 {
			switch {
			case snapshots:
				state := sn.AppendSnapshot(nil)
				r.mu.Lock()
				if f.saved[at] == nil {
					f.saved[at] = state
				}
				r.mu.Unlock()
			case r.cfg.Clone != nil:
				c := r.cfg.Clone(sim)
				r.mu.Lock()
				if f.keys[at] == nil {
					f.keys[at] = c
				}
				r.mu.Unlock()
			}
		}
	}
	return nil
}
