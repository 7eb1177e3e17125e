package main

import (
	"fmt"
	"io"
	"math"

	"github.com/phalanx-net/phalanx/examples/rts/cursor"
	"github.com/phalanx-net/phalanx/reckon"
)

// interestReport is the "interest" object of the "reckon" report: the
// entity channel (the cursors' updates) with every update sent to every
// member ("all") and with the interest filters of reckon.Interest
// ("filtered"), over the same impairment: the bytes each member sends, and
// the error of what each member displays of the cursors on its screen
// (docs/dead-reckoning.md, §10).
type interestReport struct {
	View           [2]float64 `json:"view"` // every member's camera, tiles
	Margin         float64    `json:"margin"`
	Far            float64    `json:"far"`
	NearIntervalMS float64    `json:"near_interval_ms"`
	FarIntervalMS  float64    `json:"far_interval_ms"`
	// BytesPerMemberPerS is the entity updates' bytes each member sends per
	// second (wire.Overhead counted per datagram); Reduction is all over
	// filtered.
	BytesPerMemberPerS   allFiltered `json:"bytes_per_member_per_s"`
	UpdatesPerMemberPerS allFiltered `json:"updates_per_member_per_s"`
	Reduction            float64     `json:"reduction"`
	CatchUps             int         `json:"catch_ups"` // updates the filters sent outside the owners' schedule
	// OnScreen is the share of frames in which a member had another's
	// cursor on its screen (of those it displayed it), without filters.
	OnScreen float64 `json:"on_screen"`
	// VisibleErrorP99 and VisibleErrorMean are, per convergence method,
	// the error of the cursors on screen (averaged over members).
	VisibleErrorP99  map[string]allFiltered `json:"visible_error_p99"`
	VisibleErrorMean map[string]allFiltered `json:"visible_error_mean"`
}

// allFiltered is one figure without and with the interest filters.
type allFiltered struct {
	All      float64 `json:"all"`
	Filtered float64 `json:"filtered"`
}

// compareInterest sums up the runs without and with the filters.
func compareInterest(all, filtered cursorRun) *interestReport {
	in := reckon.Interest{}
	r := &interestReport{
		View:   [2]float64{cursor.DefaultViewWidth, cursor.DefaultViewHeight},
		Margin: reckon.DefaultMargin, Far: reckon.DefaultFar,
		NearIntervalMS: float64(in.Interval(reckon.DefaultMargin + 1e-9).Milliseconds()),
		FarIntervalMS:  float64(in.Interval(math.Inf(1)).Milliseconds()),
		CatchUps:       filtered.catchUps, OnScreen: round3(all.onScreen),
	}
	members := float64(max(1, len(all.metrics)))
	perS := func(n int64, c cursorRun) float64 {
		if c.seconds <= 0 {
			return 0
		}
		return round3(float64(n) / c.seconds / members)
	}
	r.BytesPerMemberPerS = allFiltered{perS(all.bytes, all), perS(filtered.bytes, filtered)}
	r.UpdatesPerMemberPerS = allFiltered{perS(all.updates, all), perS(filtered.updates, filtered)}
	if r.BytesPerMemberPerS.Filtered > 0 {
		r.Reduction = round3(r.BytesPerMemberPerS.All / r.BytesPerMemberPerS.Filtered)
	}
	a, f := mergeMethods(all.visible), mergeMethods(filtered.visible)
	r.VisibleErrorP99, r.VisibleErrorMean = map[string]allFiltered{}, map[string]allFiltered{}
	for k, v := range a {
		r.VisibleErrorP99[k] = allFiltered{v.ErrorP99, f[k].ErrorP99}
		r.VisibleErrorMean[k] = allFiltered{v.ErrorMean, f[k].ErrorMean}
	}
	return r
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// print writes the interest figures of the text report; nothing for nil.
func (r *interestReport) print(w io.Writer) {
	if r == nil {
		return
	}
	c, cm := r.VisibleErrorP99["cubic"], r.VisibleErrorMean["cubic"]
	fmt.Fprintf(w, "  cursors with interest filters: %.0f B/s per member instead of %.0f (%.1f× fewer); on screen (cubic) error p99 %.3f instead of %.3f, mean %.3f instead of %.3f (cursors on screen %.1f%% of the time)\n",
		r.BytesPerMemberPerS.Filtered, r.BytesPerMemberPerS.All, r.Reduction, c.Filtered, c.All, cm.Filtered, cm.All, 100*r.OnScreen)
}
