package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/examples/rts/cursor"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/peer"
)

// memberRun is one member of phalanx peer or phalanx mesh once it has
// started: its game, its cursors and what it reports.
type memberRun struct {
	mf     *memberFlags
	m      *peer.Member
	res    *memberResult
	stdout io.Writer

	mu      sync.Mutex // guards everything below, used from the member's goroutines
	sess    *peer.Agreement
	g       *game
	cursors *cursor.Share
	// batch holds the commands submitted and executed since the last
	// progress line, streamed to phalanx mesh with it: bounded by the
	// commands of one progress interval.
	batch     memberMsg
	submitted int64
	cpuStart  float64
	from      time.Time
	view      memberView
	sim       lockstep.Simulation // the member's simulation, used only on the goroutine that steps it
}

// started sets up the run once the lobby has agreed on the session.
func (r *memberRun) started(s *peer.Agreement, g *game) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sess, r.g = s, g
	r.res.Slot = int(s.Self)
	r.batch.Slot = int(s.Self)
	r.cursors = cursor.New(cursor.Config{Members: r.mf.slotCount(), Self: int(s.Self), Seed: s.Seed.Uint64()})
	r.cpuStart, r.from = cpuSeconds(), time.Now()
}

func (r *memberRun) sessionTime() time.Duration { return time.Since(r.sess.Start) }

// input returns this member's commands of a frame, noting when they were
// submitted for phalanx mesh.
func (r *memberRun) input(f bucket.Frame) [][]byte {
	cmds := r.g.commands(r.sess.Self, f)
	if r.viewing() {
		r.mu.Lock()
		cmds = r.takeOrders(cmds)
		r.mu.Unlock()
	}
	if r.mf.mesh {
		now := time.Now().UnixNano()
		r.mu.Lock()
		for range cmds {
			r.batch.Submits = append(r.batch.Submits, [2]int64{r.submitted, now})
			r.submitted++
		}
		r.mu.Unlock()
	}
	return cmds
}

// onStep notes the commands executed, for phalanx mesh, and at the last
// frame the member's own memory reading.
func (r *memberRun) onStep(f bucket.Frame, cmds []bucket.Command, _ uint64) {
	if r.mf.perturb >= 0 && f == bucket.Frame(r.mf.perturb) && r.g.perturb != nil {
		r.g.perturb(r.sess.Self, r.sim) // a desync for the others to find
	}
	if r.viewing() {
		r.viewStep(f, cmds)
	}
	if r.mf.mesh {
		now := time.Now().UnixNano()
		r.mu.Lock()
		for _, c := range cmds {
			r.batch.Execs = append(r.batch.Execs, [3]int64{int64(c.Slot), int64(c.Seq), now})
		}
		r.mu.Unlock()
		if f == bucket.Frame(r.mf.frames)-1 {
			// Measured while the session is still open.
			rss, cpu, err := procUsage(os.Getpid())
			heap := liveHeapKB()
			r.mu.Lock()
			if err == nil {
				r.res.EndRSSMB, r.res.EndCPUS = rss, cpu
			}
			r.res.EndHeapKB = heap
			r.mu.Unlock()
		}
	}
}

// drive shares the cursors and, for phalanx mesh, reports progress every
// half second, until the member is done.
func (r *memberRun) drive(ctx context.Context) {
	// Every half frame of the session clock, not of a ticker's own: the
	// member wakes at the frame's start anyway, and wakes once for both.
	half := time.Duration(r.mf.frameMS) * time.Millisecond / 2
	tick := time.NewTimer(half)
	defer tick.Stop()
	var (
		lastProgress     time.Time
		playing          bool
		playFrom         time.Time
		upFrom, downFrom int64
		lastView         time.Time
	)
	for {
		select {
		case <-r.m.Done():
			r.flushCmds()
			return
		case <-ctx.Done():
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = r.m.Close(closeCtx)
			cancel()
			return
		case <-tick.C:
		}
		r.mu.Lock()
		wait := half
		if r.sess != nil {
			wait = half - (r.sessionTime()%half+half)%half
		}
		r.mu.Unlock()
		tick.Reset(wait)
		if r.m.Phase() != peer.PhasePlaying {
			continue
		}
		if r.viewing() && time.Since(lastView) >= viewEvery {
			lastView = time.Now()
			if r.view.srv != nil {
				r.publishView(false, "")
			} else {
				r.viewLine()
			}
		}
		r.mu.Lock()
		pos := r.sessionTime()
		if pos >= 0 {
			r.cursors.Tick(pos, func(u []byte) { _ = r.m.Broadcast(u) })
		}
		r.mu.Unlock()
		if !r.mf.mesh || time.Since(lastProgress) < 500*time.Millisecond {
			continue
		}
		lastProgress = time.Now()
		st := r.m.Status()
		up, down, _ := wireBytes(r.m.TransportStats())
		// Rates of the play itself: from frame 0 on, not the lobby's and
		// the handshakes' bytes before it.
		if !playing && pos >= 0 {
			playing, playFrom, upFrom, downFrom = true, time.Now(), up, down
		}
		secs := max(time.Since(playFrom).Seconds(), 1e-3)
		up, down = up-upFrom, down-downFrom
		if !playing {
			up, down = 0, 0
		}
		var rtt time.Duration
		for _, p := range st.Stats.Peers {
			rtt = max(rtt, p.RTT)
		}
		b, _ := json.Marshal(memberMsg{Type: "progress", Slot: st.Slot, Frame: int64(st.Frame),
			RTTms: float64(rtt) / 1e6, Delay: st.Stats.Core.Delay, Stalls: st.Stats.Core.Stalls,
			UpBps: float64(up) / secs, DownBps: float64(down) / secs})
		fmt.Fprintln(r.stdout, string(b))
		r.flushCmds()
	}
}

// finish fills the report from the member's final status.
func (r *memberRun) finish(st peer.Status) *memberResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := r.res
	if r.sess == nil {
		return res // it never played
	}
	res.Seconds = time.Since(r.from).Seconds()
	res.CPUSeconds = cpuSeconds() - r.cpuStart
	res.Reckon = r.cursors.Metrics(r.sessionTime())
	res.Completed, res.Stepped = st.Completed, int64(st.Frame)
	if st.Frame >= 0 {
		res.FinalHash = fmt.Sprintf("%016x", st.Hash)
	}
	res.Stalls, res.Delay = st.Stats.Core.Stalls, st.Stats.Core.Delay
	res.StalledMS = ms(st.Stats.Core.Stalled)
	res.Signed, res.Verified = st.Stats.Core.StatementsSigned, st.Stats.Core.StatementsVerified
	if a, ok := r.m.Admission(); ok {
		res.Admission = &memberAdmission{Frame: int64(a.Frame), CheckpointFrame: int64(a.CheckpointFrame), Verified: a.Verified,
			CatchupFrames: a.CatchupFrames, Bytes: a.Bytes, Servers: a.Servers, TransferMS: ms(a.Transfer), FetchMS: ms(a.Fetch), ResimulateMS: ms(a.Resimulate), CatchupMS: ms(a.Catchup)}
	}
	for _, e := range r.m.Events() {
		if e.Type == lockstep.EventRejoin || e.Type == lockstep.EventJoin {
			res.Admitted = append(res.Admitted, [2]int64{int64(e.Member), int64(e.Frame)})
			continue // the contract's events are drops, leaves, desyncs and violations
		}
		if e.Type == lockstep.EventStop {
			res.Stopped = string(e.Reason)
		}
		ev := event{Observer: res.Slot, Type: eventType(e), Frame: int64(e.Frame), Member: int(e.Member), Section: e.Section, Reason: string(e.Reason), Detail: e.Detail}
		if e.Type == lockstep.EventDrop || e.Type == lockstep.EventLeave {
			last := int64(e.LastFrame)
			ev.LastFrame = &last
		}
		res.Events = append(res.Events, ev)
	}
	ts := r.m.TransportStats()
	res.Paths = newPathsReport(r.m.Paths())
	res.BytesUp, res.BytesDown, res.Packets = wireBytes(ts)
	res.OneWay = oneWaySample(ts)
	return res
}

// flushCmds prints the batch of submitted and executed commands, if any,
// for phalanx mesh, and empties it. It writes without holding mu: a
// parent slow to read (a full pipe) holds up this goroutine only, never
// the stepping one, which takes mu in onStep and input.
func (r *memberRun) flushCmds() {
	r.mu.Lock()
	if len(r.batch.Submits)+len(r.batch.Execs) == 0 {
		r.mu.Unlock()
		return
	}
	b, _ := json.Marshal(r.batch)
	r.batch.Submits, r.batch.Execs = r.batch.Submits[:0], r.batch.Execs[:0]
	r.mu.Unlock()
	fmt.Fprintln(r.stdout, string(b))
}
