package main

import (
	"fmt"
	"io"

	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
)

// admission is one rejoin or late join in the JSON of the contract. The
// catch-up of a member runs from its admission (when it learned the frame
// it counts from) until its game stepped every frame up to it: the
// transfer of checkpoint and buckets in virtual time (the harness's model,
// TransferMS), then restoring and re-simulating on this machine's clock
// (ResimulateMS); CatchupMS is their sum.
type admission struct {
	Slot           int     `json:"slot"`
	Kind           string  `json:"kind"` // rejoin or late
	RequestedFrame int64   `json:"requested_frame"`
	AdmittedFrame  int64   `json:"admitted_frame"`
	CatchupFrames  int     `json:"catchup_frames"`
	CatchupMS      float64 `json:"catchup_ms"`
	BytesReceived  int64   `json:"bytes_received"`
	SnapshotFrame  int64   `json:"snapshot_frame"` // the checkpoint loaded, or -1: every frame from 0 re-simulated
	Verified       bool    `json:"snapshot_verified"`
	TransferMS     float64 `json:"transfer_ms"`
	ResimulateMS   float64 `json:"resimulate_ms"`
	Servers        int     `json:"servers"`
	// ReportedBy lists the members whose engine reported the admission
	// (lockstep.EventRejoin or EventJoin) at AdmittedFrame: every member
	// live then, the admitted one included.
	ReportedBy []int `json:"reported_by"`
}

// admissionsOf returns the run's admissions for the report.
func admissionsOf(res *locksteptest.Result) []admission {
	out := []admission{}
	for _, a := range res.Admissions {
		out = append(out, admission{
			Slot: int(a.Slot), Kind: a.Kind, RequestedFrame: int64(a.RequestedFrame), AdmittedFrame: int64(a.AdmittedFrame),
			CatchupFrames: a.CatchupFrames, CatchupMS: ms(a.Transfer + a.Resimulate), BytesReceived: a.Bytes,
			SnapshotFrame: int64(a.Snapshot), Verified: a.Verified, TransferMS: ms(a.Transfer), ResimulateMS: ms(a.Resimulate), Servers: a.Servers,
			ReportedBy: reportedBy(res, a),
		})
	}
	return out
}

// reportedBy returns the members that reported admission a.
func reportedBy(res *locksteptest.Result, a locksteptest.Admission) []int {
	by := []int{}
	for _, m := range res.Members {
		for _, e := range m.Events {
			if (e.Type == lockstep.EventRejoin || e.Type == lockstep.EventJoin) && e.Member == a.Slot && e.Frame == a.AdmittedFrame {
				by = append(by, int(m.Slot))
				break
			}
		}
	}
	return by
}

// printAdmissions prints one line per admission, and the spectators.
func (r *report) printAdmissions(w io.Writer) {
	if n := len(r.Spectators); n > 0 {
		same, deepest := 0, 0
		for _, s := range r.Spectators {
			if !s.Diverged && s.FinalHash == r.FinalHash {
				same++
			}
			deepest = max(deepest, s.Depth)
		}
		fmt.Fprintf(w, "  %d spectators, %d frames behind, trees %d deep: %d of them on the members' final hash\n", n, r.Spectators[0].DelayFrames, deepest+1, same)
	}
	for _, a := range r.Admissions {
		from := "every frame from 0"
		if a.SnapshotFrame >= 0 {
			from = fmt.Sprintf("the checkpoint of frame %d (hash verified: %v)", a.SnapshotFrame, a.Verified)
		}
		fmt.Fprintf(w, "  %s of member %d asked at frame %d, admitted at frame %d (reported by members %v): caught up in %.0f ms (transfer %.0f ms, re-simulation %.0f ms) from %s, %d frames, %d bytes from %d members\n",
			a.Kind, a.Slot, a.RequestedFrame, a.AdmittedFrame, a.ReportedBy, a.CatchupMS, a.TransferMS, a.ResimulateMS, from, a.CatchupFrames, a.BytesReceived, a.Servers)
	}
}

// watcher is one spectator in the JSON of the contract.
type watcher struct {
	FinalHash   string `json:"final_hash"`
	DelayFrames int    `json:"delay_frames"`
	ServedBy    string `json:"served_by"`
	Depth       int    `json:"depth"`
	Stepped     int64  `json:"stepped"`
	From        int64  `json:"from_frame"`
	Snapshot    int64  `json:"snapshot_frame"`
	Bytes       int64  `json:"bytes_received"`
	Diverged    bool   `json:"diverged"`
}

// spectatorsOf returns the run's spectators for the report.
func spectatorsOf(res *locksteptest.Result) []watcher {
	out := []watcher{}
	for _, s := range res.Spectators {
		out = append(out, watcher{FinalHash: fmt.Sprintf("%016x", s.FinalHash), DelayFrames: s.DelayFrames, ServedBy: s.ServedBy, Depth: s.Depth,
			Stepped: int64(s.Stepped), From: int64(s.From), Snapshot: int64(s.Snapshot), Bytes: s.Bytes, Diverged: s.Diverged})
	}
	return out
}
