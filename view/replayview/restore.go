package replayview

import (
	"fmt"

	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/view"
)

// Restoring the states a desync report holds (lockstep/replay.Report's
// States): each is loaded into a fresh simulation of the replay's (a
// lockstep.Snapshotter), checked against the hash the report recorded,
// drawn and section-hashed, so that the page shows both sides' worlds as
// they were, not as the replay's commands would give them.

// restoreReport restores the states of rep, the desync report f came
// from, into f.restored by frame.
func (r *Replays) restoreReport(f *replayFile, rep *replay.Report) {
	for _, fr := range []int64{rep.Agreed, rep.Frame} {
		if fr < 0 || f.restored[fr] != nil {
			continue
		}
		role := "divergent frame"
		if fr != rep.Frame {
			role = "last agreed checkpoint"
		}
		pair := &view.RestoredPair{Frame: fr, Role: role, Diff: []view.UnitDiff{}}
		var secs [][]lockstep.Section
		for _, member := range []int{rep.Self, rep.With} {
			st, ok := rep.StateOf(member, fr)
			if !ok || (member == rep.With && rep.With == rep.Self) {
				continue
			}
			w, s := r.restoreState(f, st)
			pair.Worlds = append(pair.Worlds, w)
			secs = append(secs, s)
		}
		if len(pair.Worlds) == 0 {
			continue
		}
		if len(pair.Worlds) == 2 {
			pair.Section = firstSection(secs[0], secs[1])
			pair.Diff = diffScenes(pair.Worlds[0].Scene, pair.Worlds[1].Scene)
		}
		f.restored[fr] = pair
	}
}

// restoreState restores one state into a fresh simulation of f's.
func (r *Replays) restoreState(f *replayFile, st replay.ReportState) (view.RestoredWorld, []lockstep.Section) {
	w := view.RestoredWorld{Member: st.Member, Sections: []view.SectionHash{}}
	sim, err := r.cfg.Sim(f.header)
	if err != nil {
		w.Error = err.Error()
		return w, nil
	}
	sn, ok := sim.(lockstep.Snapshotter)
	if !ok {
		w.Error = "the simulation cannot restore a state (it is not a lockstep.Snapshotter)"
		return w, nil
	}
	if err := sn.Restore(st.Data); err != nil {
		w.Error = fmt.Sprintf("the state does not restore: %v", err)
		return w, nil
	}
	w.Hash = fmt.Sprintf("%016x", sim.Hash())
	if w.Hash != st.Hash {
		w.Error = fmt.Sprintf("restored, its hash is %s where the report recorded %s", w.Hash, st.Hash)
	}
	var secs []lockstep.Section
	if sh, ok := sim.(lockstep.SectionHasher); ok {
		secs = sh.SectionHashes(nil)
		for _, s := range secs {
			w.Sections = append(w.Sections, view.SectionHash{Name: s.Name, Hash: fmt.Sprintf("%016x", s.Hash)})
		}
	}
	if d, ok := sim.(view.Drawable); ok {
		w.Scene = new(view.Scene)
		d.Scene(w.Scene)
	}
	return w, secs
}
