package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// phalanx mesh --kill INDEX@FRAME --rejoin INDEX@FRAME: the member process
// is killed with SIGKILL, and once a survivor has stepped the rejoin frame
// a new process is started with the same identity key (phalanx member
// --rejoin --key FILE), told the live members' addresses, and comes back
// into the session (peer.MemberConfig.Rejoin): admitted at a frame the
// members agree on, caught up from them over the catch-up protocol.
//
// phalanx mesh --slots N --late SLOT@FRAME: once a member stepped FRAME, a
// new process with a fresh identity (phalanx member --late) joins into the
// lowest open slot free, the same way.

// checkLate checks --slots and the --late slots against the run's flags.
func checkLate(f *runFlags, slots int, lateAt map[int]int64) error {
	if slots != 0 && (slots < f.peers || slots > 64) {
		return fmt.Errorf("--slots %d: want --peers (%d) to 64", slots, f.peers)
	}
	if _, err := newGame(f.sim, max(f.peers, slots), f.seed); err != nil {
		return fmt.Errorf("--slots: %w", err)
	}
	for slot, fr := range lateAt {
		if slot < f.peers || slot >= slots {
			return fmt.Errorf("--late %d@%d: slot %d is not open (open slots are %d..%d, see --slots)", slot, fr, slot, f.peers, slots-1)
		}
	}
	return nil
}

// meshRejoin is one member process that came back, or joined late.
type meshRejoin struct {
	old, proc *meshProc // old: nil for a late joiner
	late      int       // the --late slot, or -1
	frame     int64     // the --rejoin or --late frame
	started   time.Time
	// The survivors' stalls and frames (by process index) when the new
	// process started and when it first reported a stepped frame: the
	// window of its catch-up.
	stallsFrom, framesFrom map[int]int64
	stallsTo, framesTo     map[int]int64
}

// keyFile is the identity key of member process index, for one that comes
// back.
func (m *meshRun) keyFile(index int) string {
	return filepath.Join(m.keyDir, fmt.Sprintf("member-%d.key", index))
}

// rejoinDue starts the process of each killed member whose --rejoin frame
// the member of process p (a progress line just came from it) reached, and
// closes the catch-up window of a process that came back once it steps.
// m.mu is held.
func (m *meshRun) rejoinDue(ctx context.Context, exe string, p *meshProc) {
	for _, rj := range m.rejoins {
		if rj.proc == p && rj.stallsTo == nil && p.progress.Frame >= 0 {
			rj.stallsTo, rj.framesTo = m.survivorsProgress(rj)
		}
	}
	if p.killed || p.spectator {
		return
	}
	for idx, fr := range m.rejoinAt {
		old := m.procs[idx]
		if !old.killed || p.progress.Frame < fr || m.rejoining(old) {
			continue
		}
		index := len(m.procs)
		args := append(m.memberArgs(idx), "--rejoin", "--index", strconv.Itoa(index))
		np, err := m.startProc(ctx, exe, index, args)
		if err != nil {
			fmt.Fprintln(m.stderr, "phalanx mesh: starting a member that comes back:", err)
			continue
		}
		rj := &meshRejoin{old: old, proc: np, late: -1, frame: fr, started: time.Now()}
		m.rejoins = append(m.rejoins, rj)
		rj.stallsFrom, rj.framesFrom = m.survivorsProgress(rj)
		fmt.Fprintf(m.stderr, "phalanx mesh: member process %d comes back as process %d with the same key at frame %d\n", idx, index, p.progress.Frame)
	}
	for _, slot := range slices.Sorted(maps.Keys(m.lateAt)) {
		if fr := m.lateAt[slot]; p.progress.Frame < fr || m.lateStarted(slot) {
			continue
		}
		index := len(m.procs)
		args := append(m.memberArgs(index), "--late")
		np, err := m.startProc(ctx, exe, index, args)
		if err != nil {
			fmt.Fprintln(m.stderr, "phalanx mesh: starting a late joiner:", err)
			continue
		}
		rj := &meshRejoin{proc: np, late: slot, frame: m.lateAt[slot], started: time.Now()}
		m.rejoins = append(m.rejoins, rj)
		rj.stallsFrom, rj.framesFrom = m.survivorsProgress(rj)
		fmt.Fprintf(m.stderr, "phalanx mesh: a late joiner starts as process %d with a new key at frame %d, for open slot %d\n", index, p.progress.Frame, slot)
	}
}

// lateStarted reports whether the late joiner of --late slot started.
func (m *meshRun) lateStarted(slot int) bool {
	for _, rj := range m.rejoins {
		if rj.old == nil && rj.late == slot {
			return true
		}
	}
	return false
}

// rejoining reports whether a process was started to bring old back.
func (m *meshRun) rejoining(old *meshProc) bool {
	for _, rj := range m.rejoins {
		if rj.old == old && old != nil {
			return true
		}
	}
	return false
}

// survivorsProgress returns the stalls and frames the live member
// processes last reported, but rj's.
func (m *meshRun) survivorsProgress(rj *meshRejoin) (stalls, frames map[int]int64) {
	stalls, frames = map[int]int64{}, map[int]int64{}
	for _, q := range m.procs {
		if !q.killed && q != rj.proc && q.progress.Type != "" {
			stalls[q.index], frames[q.index] = q.progress.Stalls, q.progress.Frame
		}
	}
	return stalls, frames
}

// rejoinAddrs tells a process that comes back, once it printed its
// addresses, the addresses of the live members.
func (m *meshRun) rejoinAddrs(p *meshProc) {
	for _, rj := range m.rejoins {
		if rj.proc != p {
			continue
		}
		var others []string
		for _, q := range m.procs {
			if q != p && !q.killed && len(q.addrs) > 0 {
				others = append(others, q.addrs[0])
			}
		}
		b, _ := json.Marshal(memberMsg{Type: "peers", Addrs: others})
		fmt.Fprintln(p.stdin, string(b))
	}
}

// rejoinReport adds the admissions of the processes that came back to r,
// and returns the survivors' stall rate over their catch-up windows (nil
// without one).
func (m *meshRun) rejoinReport(r *report) *float64 {
	var stalls, frames int64
	for _, rj := range m.rejoins {
		res := rj.proc.result
		if res == nil || res.Admission == nil {
			continue
		}
		a := res.Admission
		kind := "rejoin"
		if rj.old == nil {
			kind = "late"
		}
		ad := admission{
			Slot: res.Slot, Kind: kind, RequestedFrame: rj.frame, AdmittedFrame: a.Frame,
			CatchupFrames: a.CatchupFrames, CatchupMS: a.CatchupMS, BytesReceived: a.Bytes,
			SnapshotFrame: a.CheckpointFrame, Verified: a.Verified, TransferMS: a.TransferMS,
			ResimulateMS: a.ResimulateMS, Servers: a.Servers, ReportedBy: []int{},
		}
		for _, q := range m.procs {
			if q.result == nil || q.killed {
				continue
			}
			for _, e := range q.result.Admitted {
				if int(e[0]) == res.Slot && e[1] == a.Frame {
					ad.ReportedBy = append(ad.ReportedBy, q.result.Slot)
					break
				}
			}
		}
		r.Admissions = append(r.Admissions, ad)
		verb := "came back into"
		if rj.old == nil {
			verb = "joined late into"
		}
		fmt.Fprintf(m.stderr, "phalanx mesh: member process %d %s slot %d at frame %d: %d bytes from %d members, fetched in %.1f ms once they had stepped frame %d\n",
			rj.proc.index, verb, res.Slot, a.Frame, a.Bytes, a.Servers, a.FetchMS, a.Frame-1)
		for idx, s := range rj.stallsTo {
			if f0, ok := rj.framesFrom[idx]; ok {
				stalls += s - rj.stallsFrom[idx]
				frames += rj.framesTo[idx] - f0
			}
		}
	}
	if frames <= 0 {
		return nil
	}
	rate := math.Round(float64(stalls)/float64(frames)*1e5) / 1e5
	return &rate
}
