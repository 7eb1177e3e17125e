package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/reckon"
)

// meshReport is the JSON of phalanx mesh: the report of the contract and
// how the packets travelled.
type meshReport struct {
	*report
	Transport string        `json:"transport"` // datagram or stream
	Members   []memberUsage `json:"members"`   // each member process: how it ended, its memory and CPU over time
	// RejoinStallRate: the survivors' stalls per frame while members that
	// came back (--rejoin) caught up, from their start to their first
	// stepped frame.
	RejoinStallRate *float64 `json:"rejoin_stall_rate,omitempty"`
}

func (m *meshRun) progressLine(p *meshProc) string {
	pr := p.progress
	state := "running"
	switch {
	case p.killed:
		state = "killed"
	case p.result != nil:
		state = "done"
	case len(p.addrs) == 0:
		state = "starting"
	case pr.Type == "":
		state = "joining"
	}
	// Slot and frames only once known: the lobby gives the slot; a member
	// reports the newest frame it stepped (-1 before the first), and its
	// result the last frame of the run it stepped.
	slot, frames := " -", "    -"
	switch {
	case p.result != nil && p.result.Slot >= 0:
		slot, frames = fmt.Sprintf("%2d", p.result.Slot), fmt.Sprintf("%5d", min(p.result.Stepped+1, int64(m.f.frames)))
	case pr.Type != "":
		slot, frames = fmt.Sprintf("%2d", pr.Slot), fmt.Sprintf("%5d", min(pr.Frame+1, int64(m.f.frames)))
	}
	return fmt.Sprintf("  member %d (slot %s) %-8s frames %s/%d  rtt %6.1f ms  delay %2d frames  stalls %4d  %7.0f B/s up %7.0f B/s down",
		p.index, slot, state, frames, m.f.frames, pr.RTTms, pr.Delay, pr.Stalls, pr.UpBps, pr.DownBps)
}

// drawTable redraws the progress table in place; drawn is how many lines
// the previous call drew.
func (m *meshRun) drawTable(drawn int) int {
	if drawn > 0 {
		fmt.Fprintf(m.stdout, "\x1b[%dA", drawn)
	}
	for _, p := range m.procs {
		fmt.Fprintf(m.stdout, "\x1b[2K%s\n", m.progressLine(p))
	}
	return len(m.procs)
}

func (m *meshRun) printProgress() {
	for _, p := range m.procs {
		fmt.Fprintln(m.stdout, m.progressLine(p))
	}
}

// report merges the members' results into the contract's report. It
// returns false when a member that was not killed failed to report.
func (m *meshRun) report(wall time.Duration) (*report, bool) {
	f := m.f
	r := &report{Peers: f.peers, Frames: f.frames, FrameMS: f.frameMS, Sim: f.sim, Profile: f.profile, Seed: f.seed}
	r.Survivors, r.Events, r.Stopped = []int{}, []event{}, []stopped{}
	ok := true
	var results []*memberResult
	for _, p := range m.procs {
		if p.killed || p.spectator {
			continue
		}
		if p.result == nil {
			ok = false
			fmt.Fprintf(m.stderr, "phalanx mesh: member process %d did not report a result (%v)\n", p.index, p.exitErr)
			continue
		}
		if p.result.Stopped != "" {
			// Stopped by the rules: dropped, or in a minority. Not a
			// survivor, and not a failure of the run.
			st := stopped{Member: p.result.Slot, Reason: p.result.Stopped, Error: p.result.Error, Frame: p.result.Stepped + 1}
			r.Stopped = append(r.Stopped, st)
			r.Events = append(r.Events, p.result.Events...)
			continue
		}
		if p.result.Error != "" {
			ok = false
			fmt.Fprintf(m.stderr, "phalanx mesh: member process %d: %s\n", p.index, p.result.Error)
		}
		results = append(results, p.result)
	}
	slices.SortFunc(results, func(a, b *memberResult) int { return a.Slot - b.Slot })
	hashes := map[string][]int{}
	var stalls, up, down, packets, signed, verified int64
	var secs, cpu, stalledMS float64
	var oneway []time.Duration
	var cursors []map[reckon.Method]reckon.Metrics
	for _, res := range results {
		if res.Reckon != nil {
			cursors = append(cursors, res.Reckon)
		}
		r.Survivors = append(r.Survivors, res.Slot)
		if res.Completed {
			hashes[res.FinalHash] = append(hashes[res.FinalHash], res.Slot)
		} else {
			ok = false
		}
		stalls += res.Stalls
		stalledMS += res.StalledMS
		up += res.BytesUp
		down += res.BytesDown
		packets += res.Packets
		signed += res.Signed
		verified += res.Verified
		secs = max(secs, res.Seconds)
		if res.Seconds > 0 {
			cpu += res.CPUSeconds / res.Seconds
		}
		r.DelayFrames = append(r.DelayFrames, res.Delay)
		r.Events = append(r.Events, res.Events...)
		for _, d := range res.OneWay {
			oneway = append(oneway, time.Duration(d*float64(time.Millisecond)))
		}
	}
	r.Identical = ok && len(hashes) == 1 && len(results) > 0
	best := 0
	for h, slots := range hashes {
		if len(slots) > best {
			best, r.FinalHash = len(slots), h
		}
	}
	r.Desyncs = len(results) - best
	// Commands still waiting for a member that has since gone count once
	// every survivor executed them; the rest were not executed on every
	// survivor within the run.
	var survivors uint64
	for _, p := range m.procs {
		if !p.killed && p.result != nil {
			survivors |= 1 << p.index
		}
	}
	m.lat.recheck(survivors)
	lat := &m.lat.lat
	n := float64(max(1, len(results)))
	secs = max(secs, 1e-9)
	r.StallRate = math.Round(float64(stalls)/n/float64(f.frames)*1e5) / 1e5
	r.setStalled(time.Duration(stalledMS*float64(time.Millisecond)), len(results), f.frames)
	r.Bytes.Up = math.Round(float64(up) / n / secs)
	r.Bytes.Down = math.Round(float64(down) / n / secs)
	r.Datagrams = math.Round(float64(packets)/n/secs*10) / 10
	r.Statements.Signed = math.Round(float64(signed)/n/secs*10) / 10
	r.Statements.Verified = math.Round(float64(verified)/n/secs*10) / 10
	r.CPUPercent = math.Round(cpu/n*1000) / 10
	r.Latency.P50 = roundMS(lat.Quantile(50))
	r.Latency.P95 = roundMS(lat.Quantile(95))
	r.Latency.P99 = roundMS(lat.Quantile(99))
	r.Latency.Max = roundMS(lat.Quantile(100))
	r.OneWay.P50 = ms(locksteptest.Percentile(oneway, 50))
	r.OneWay.P99 = ms(locksteptest.Percentile(oneway, 99))
	r.Commands = int(lat.Count())
	r.Reckon = mergeReckon(cursors)
	r.VirtualS = math.Round(secs*100) / 100
	r.WallS = math.Round(wall.Seconds()*100) / 100
	return r, ok
}

// prefixWriter prefixes every line written to w.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := slices.Index(p.buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
