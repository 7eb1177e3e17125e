package peer

import (
	"encoding/json"
	"os"

	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/replay"
	"github.com/phalanx-net/phalanx/view"
)

// desyncReport writes the report of desync event e (replay.Report) into
// MemberConfig.DesyncReports, or beside the member's replay: the
// divergent frame and section, both sides' section hashes as the members
// exchanged them, the versions, and the replay recorded so far. It runs
// once per session (a core raises one desync), with m.mu held, on the
// goroutine that steps: the replay, flushed, is read back from its file.
func (m *Member) desyncReport(e lockstep.Event) {
	dir := m.cfg.DesyncReports
	if dir == "" && m.cfg.Record != nil {
		dir = m.cfg.Record.Dir
	}
	if dir == "" || m.sess == nil {
		return
	}
	var recorded []byte
	h := replay.Header{
		Session: []byte(m.sess.ID), FrameLength: m.sess.Frame(),
		SimName: m.cfg.Params.Sim, SimVersion: m.cfg.Params.SimVersion, Self: m.sess.Self,
	}
	for _, id := range m.sess.Members {
		h.Members = append(h.Members, id.String())
	}
	if m.rec != nil && m.rec.err == nil {
		if m.rec.err = m.rec.w.Flush(); m.rec.err == nil {
			recorded, _ = os.ReadFile(m.rec.file.Name())
			h = m.rec.w.Header()
		}
	}
	rep := replay.NewReport(h, e, recorded)
	rep.WorldFrame, rep.World = worldOf(m.drawn)
	if sn, ok := m.drawn.(lockstep.Snapshotter); ok {
		rep.State = sn.AppendSnapshot(nil)
	}
	rep.Agreed = int64(replay.LastAgreedCheckpoint(e.Frame, m.hashInterval))
	rep.AddStates(rep.Self, m.states)
	path, err := replay.WriteReport(dir, rep)
	if err != nil {
		m.log.Error("peer: desync report not written", "err", err)
		return
	}
	m.log.Info("peer: desync report written", "path", path, "frame", e.Frame)
	m.reports = append(m.reports, path)
	if m.states != nil && rep.With != rep.Self {
		// The other side's states come from the member compared with; the
		// report is written again when they arrive.
		sess := m.sess
		m.fetches.Go(func() { m.fetchStates(m.ctx, sess, dir, rep) })
	}
}

// DesyncReports returns the paths of the desync reports the member wrote.
func (m *Member) DesyncReports() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.reports...)
}

// worldOf describes sim's world for a desync report, when it can be drawn
// (view.Drawable): the frames stepped and the scene in JSON.
func worldOf(sim lockstep.Simulation) (int64, json.RawMessage) {
	d, ok := sim.(view.Drawable)
	if !ok {
		return 0, nil
	}
	var sc view.Scene
	d.Scene(&sc)
	b, err := json.Marshal(&sc)
	if err != nil {
		return 0, nil
	}
	return sc.Frame, b
}
