package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/phalanx-net/phalanx/internal/quantile"
)

// What phalanx mesh keeps of a run while it runs, bounded however long it
// runs: the commands still in flight, the latencies as a sketch, and a
// bounded series of each member process's memory and CPU.

// cmdKey names one command: its submitter's slot and sequence number.
type cmdKey struct{ slot, seq int64 }

// inflight is what is known of one command whose latency is not yet
// known: when it was submitted (0: not yet heard) and which member
// processes executed it, the latest when.
type inflight struct {
	submitted int64  // unix ns
	executed  uint64 // bit i: member process i executed it
	last      int64  // unix ns of the latest execution
}

// maxInflightAge is how long a command may wait to be executed by every
// live member process before it is left out of the latencies: the pending
// table holds at most the commands of that long (a member that fails
// without being killed would otherwise keep every later command pending).
const maxInflightAge = time.Minute

// cmdLatencies turns the members' streamed submit and execute records into
// latencies: submit on one member to execution on the last live one.
type cmdLatencies struct {
	// pending holds the commands in flight: bounded by the commands of
	// maxInflightAge (swept by sweep).
	pending map[cmdKey]*inflight
	lat     quantile.Sketch // milliseconds
}

func newCmdLatencies() *cmdLatencies { return &cmdLatencies{pending: map[cmdKey]*inflight{}} }

func (c *cmdLatencies) get(k cmdKey) *inflight {
	p := c.pending[k]
	if p == nil {
		p = &inflight{}
		c.pending[k] = p
	}
	return p
}

// submitted records that the member in slot submitted command seq at unix
// ns at.
func (c *cmdLatencies) submitted(slot, seq, at int64, live uint64) {
	k := cmdKey{slot, seq}
	p := c.get(k)
	p.submitted = at
	c.complete(k, p, live)
}

// executed records that member process proc executed command (slot, seq)
// at unix ns at.
func (c *cmdLatencies) executed(proc int, slot, seq, at int64, live uint64) {
	k := cmdKey{slot, seq}
	p := c.get(k)
	p.executed |= 1 << proc
	p.last = max(p.last, at)
	c.complete(k, p, live)
}

// complete counts a command's latency once every live member process
// executed it and its submission is known.
func (c *cmdLatencies) complete(k cmdKey, p *inflight, live uint64) bool {
	if p.submitted == 0 || p.executed&live != live {
		return false
	}
	c.lat.Add(float64(p.last-p.submitted) / 1e6)
	delete(c.pending, k)
	return true
}

// recheck completes the commands that wait for no one left in live (after
// a member process was killed or ended).
func (c *cmdLatencies) recheck(live uint64) {
	for k, p := range c.pending {
		c.complete(k, p, live)
	}
}

// sweep forgets the commands submitted or first executed more than
// maxInflightAge before now.
func (c *cmdLatencies) sweep(now time.Time) {
	limit := now.Add(-maxInflightAge).UnixNano()
	for k, p := range c.pending {
		if t := max(p.submitted, p.last); t != 0 && t < limit {
			delete(c.pending, k)
		}
	}
}

// usageSample is one reading of a member process's memory and CPU.
type usageSample struct {
	Seconds    float64 `json:"t_s"`         // since phalanx mesh started
	Frame      int64   `json:"frame"`       // the member's last reported frame
	RSSMB      float64 `json:"rss_mb"`      // resident set size
	CPUPercent float64 `json:"cpu_percent"` // CPU time since the previous sample, percent of one core
}

// memberUsage is how a member process ended, and its series of samples.
type memberUsage struct {
	Index  int    `json:"index"`
	Slot   int    `json:"slot"`
	Exit   int    `json:"exit"`             // the process's exit status, -1 when killed by a signal
	Reason string `json:"reason,omitempty"` // killed, or why it stopped by the rules: dropped, minority
	Error  string `json:"error,omitempty"`
	// Samples are its memory and CPU over time.
	Samples []usageSample `json:"samples"`
	// EndHeapKB is its live heap after a collection when it finished its
	// frames, the session still open.
	EndHeapKB float64 `json:"end_heap_kb,omitempty"`
}

// usageSamples is how many samples a run of the nominal length takes: the
// series is bounded by the run's time limit over usageInterval's result.
const usageSamples = 60

// usageInterval returns the time between samples for a run of nominal
// length run: a sixtieth of it, at least 5 s.
func usageInterval(run time.Duration) time.Duration {
	return max(5*time.Second, run/usageSamples)
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's CPU
// times: 100 on every Linux platform Go supports.
const clockTicks = 100

// procUsage reads a process's resident set size in MB and the CPU time it
// has used in seconds from /proc.
func procUsage(pid int) (rssMB, cpuS float64, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, 0, fmt.Errorf("VmRSS %q: %w", v, err)
			}
			rssMB = kb / 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: CPU times %q %q", pid, f[11], f[12])
	}
	return rssMB, (ut + st) / clockTicks, nil
}

// sampleUsage appends a sample of member process p, t after the start.
func (p *meshProc) sampleUsage(t time.Duration) {
	if p.cmd.Process == nil {
		return
	}
	rss, cpu, err := procUsage(p.cmd.Process.Pid)
	if err != nil {
		return // gone already
	}
	p.addUsage(t, p.progress.Frame, rss, cpu)
}

// addUsage appends a sample of member process p, t after the start, from
// its resident set size in MB and the CPU seconds it has used in all.
func (p *meshProc) addUsage(t time.Duration, frame int64, rssMB, cpuS float64) {
	s := usageSample{Seconds: math.Round(t.Seconds()*10) / 10, Frame: frame, RSSMB: math.Round(rssMB*10) / 10}
	if dt := (t - p.usageAt).Seconds(); len(p.usage) > 0 && dt > 0 {
		s.CPUPercent = math.Round((cpuS-p.usageCPU)/dt*1000) / 10
	}
	p.usage = append(p.usage, s)
	p.usageAt, p.usageCPU = t, cpuS
}

// live returns the member processes not killed, a bit each.
func (m *meshRun) live() uint64 {
	var l uint64
	for _, p := range m.procs {
		if !p.killed && !p.spectator {
			l |= 1 << p.index
		}
	}
	return l
}

// usage returns every member process's series of samples.
func (m *meshRun) usage() []memberUsage {
	out := []memberUsage{}
	for _, p := range m.procs {
		u := memberUsage{Index: p.index, Slot: p.slot, Exit: p.cmd.ProcessState.ExitCode(), Samples: p.usage}
		if p.killed {
			u.Reason = "killed"
		}
		if p.result != nil {
			u.Slot, u.EndHeapKB, u.Error = p.result.Slot, math.Round(p.result.EndHeapKB), p.result.Error
			if p.result.Stopped != "" {
				u.Reason = p.result.Stopped
			}
		}
		out = append(out, u)
	}
	return out
}

// printUsage prints each member process's memory and CPU at the start, the
// middle and the end of its series.
func printUsage(w io.Writer, usage []memberUsage) {
	for _, u := range usage {
		n := len(u.Samples)
		if n == 0 {
			continue
		}
		fmt.Fprintf(w, "  member %d memory and CPU:", u.Index)
		for _, i := range []int{0, n / 2, n - 1} {
			s := u.Samples[i]
			fmt.Fprintf(w, " at %.0f s %.1f MB %.1f %%;", s.Seconds, s.RSSMB, s.CPUPercent)
		}
		fmt.Fprintln(w)
	}
}

// liveHeapKB collects garbage and returns the live heap in KiB. It
// collects twice, so what sync.Pools held is gone as well.
func liveHeapKB() float64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapAlloc) / 1024
}

// roundMS rounds milliseconds to hundredths.
func roundMS(v float64) float64 { return math.Round(v*100) / 100 }
