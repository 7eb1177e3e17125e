package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
)

// phalanx mesh --spectators N: once every member plays, N phalanx watch
// processes watch the session over QUIC, each asking two members (the
// members serve spectators: phalanx member --spectators). Each serves up
// to --spectators-serve others; with --spectators-per-member below what
// they need, the members send the rest to spectators that serve. The JSON
// lists them under spectators, and identical covers them.

// sessionID is the session of the run's member processes.
func (m *meshRun) sessionID() string { return fmt.Sprintf("mesh-%d-%d", m.f.seed, os.Getpid()) }

// spectatorPlaces is how many spectators each member serves: every
// spectator takes a place at two members, or --spectators-per-member.
func (m *meshRun) spectatorPlaces() int {
	if m.spectatorsPerMember > 0 {
		return m.spectatorsPerMember
	}
	return max(2, (2*m.spectators+m.n-1)/m.n)
}

// spectatorsDue starts the spectators once every member process has
// stepped frame --spectators-at. m.mu is held.
func (m *meshRun) spectatorsDue(ctx context.Context, exe string) {
	if m.spectators == 0 {
		return
	}
	var members []*meshProc
	for _, p := range m.procs {
		if p.spectator {
			return // started already
		}
		if p.index < m.n {
			if p.progress.Frame < m.spectatorsAt && !p.killed || len(p.addrs) == 0 {
				return
			}
			members = append(members, p)
		}
	}
	var live []*meshProc
	for _, p := range members {
		if !p.killed {
			live = append(live, p)
		}
	}
	for i := range m.spectators {
		a, b := live[i%len(live)], live[(i+1)%len(live)]
		args := []string{"watch", "--mesh", "--session", m.sessionID(), "--delay", m.spectatorDelay.String(), "--join", a.addrs[0],
			"--spectators", strconv.Itoa(m.spectatorsServe)}
		if b != a {
			args = append(args, "--join", b.addrs[0])
		}
		p, err := m.startProc(ctx, exe, len(m.procs), args)
		if err != nil {
			fmt.Fprintln(m.stderr, "phalanx mesh: starting a spectator:", err)
			return
		}
		p.spectator = true
	}
	fmt.Fprintf(m.stderr, "phalanx mesh: %d spectators started\n", m.spectators)
}

// watchReport adds the spectators to r: identical holds only when each
// stepped the last frame on the members' final hash.
func (m *meshRun) watchReport(r *report) {
	if r.Admissions == nil {
		r.Admissions = []admission{}
	}
	r.Spectators = []watcher{}
	for _, p := range m.procs {
		if !p.spectator {
			continue
		}
		w := p.watch
		if w == nil {
			fmt.Fprintf(m.stderr, "phalanx mesh: spectator process %d did not report (%v)\n", p.index, p.exitErr)
			r.Identical = false
			continue
		}
		if w.Error != "" {
			fmt.Fprintf(m.stderr, "phalanx mesh: spectator process %d: %s\n", p.index, w.Error)
		}
		diverged := w.FinalHash != r.FinalHash || w.Stepped != int64(m.f.frames)-1
		r.Identical = r.Identical && !diverged
		by, depth := "members", 0
		if w.Followed > 0 {
			by, depth = "spectators", 1 // at least one hop down the tree
		}
		r.Spectators = append(r.Spectators, watcher{FinalHash: w.FinalHash, DelayFrames: w.DelayFrames, ServedBy: by, Depth: depth,
			Stepped: w.Stepped, From: w.From, Snapshot: w.Snapshot, Bytes: w.Bytes, Diverged: diverged})
	}
}
