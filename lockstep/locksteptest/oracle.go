package locksteptest

import (
	"slices"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// completed records a command's latency once every active member executed
// it.
func (h *harness) completed(p *pending) bool {
	var last time.Duration
	for i, m := range h.members {
		if !m.active() {
			continue
		}
		if p.executed[i] < 0 {
			return false
		}
		last = max(last, p.executed[i])
	}
	h.res.addLatency(last-p.submitted, h.cfg.KeepSamples)
	return true
}

func (h *harness) finish() {
	h.settleAll()
	h.res.Duration = h.now
	// Commands that waited for a member that has since gone.
	keys := make([]commandKey, 0, len(h.cmds))
	for k := range h.cmds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b commandKey) int {
		if a.slot != b.slot {
			return int(a.slot) - int(b.slot)
		}
		return int(a.seq) - int(b.seq)
	})
	for _, k := range keys {
		h.completed(h.cmds[k])
	}
	for _, m := range h.members {
		h.res.Members = append(h.res.Members, Member{
			Slot: m.slot, Killed: m.killed, Left: m.left, Open: m.open, Stopped: m.core.Err(), Frozen: m.wasFrozen, MaxWait: m.maxWait, PeakHeld: m.peakHeld,
			Stepped: m.stepped, FinalHash: m.final,
			Stats: m.core.Stats(), Events: m.events, Errors: m.errs,
		})
		if m.active() {
			h.res.Survivors = append(h.res.Survivors, m.slot)
		}
	}
	if h.streams != nil {
		h.streams.account(h.res)
	}
	// Group survivors by identical histories.
	n := h.cfg.Frames
	for _, s := range h.res.Survivors {
		n = min(n, int(h.members[s].stepped)+1)
	}
	same := func(a, b *member) (bool, bucket.Frame) { return h.history.same(a.slot, b.slot, n) }
	for _, s := range h.res.Survivors {
		placed := false
		for gi, g := range h.res.Groups {
			if ok, _ := same(h.members[g[0]], h.members[s]); ok {
				h.res.Groups[gi] = append(g, s)
				placed = true
				break
			}
		}
		if !placed {
			h.res.Groups = append(h.res.Groups, []bucket.Slot{s})
		}
	}
	slices.SortStableFunc(h.res.Groups, func(a, b []bucket.Slot) int { return len(b) - len(a) })
	h.res.Identical = len(h.res.Groups) <= 1
	if len(h.res.Survivors) > 0 {
		ref := h.members[h.res.Survivors[0]]
		for _, s := range h.res.Survivors[1:] {
			if ok, f := same(ref, h.members[s]); !ok {
				h.res.Desynced++
				if h.res.Diverged < 0 || f < h.res.Diverged {
					h.res.Diverged = f
				}
			}
		}
		for _, s := range h.res.Survivors {
			if int(h.members[s].stepped)+1 < h.cfg.Frames {
				h.res.Identical = false
			}
		}
	}
	var final uint64
	if len(h.res.Survivors) > 0 {
		final = h.members[h.res.Survivors[0]].final
	}
	if !h.spectatorResults(final, len(h.res.Survivors) > 0) {
		h.res.Identical = false
	}
}

// Percentile returns the nearest-rank p-th percentile of ds (sorting a copy),
// or 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}
