package view_test

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/view"
)

// TestMemberOf: a session's stats become the page's figures, durations in
// milliseconds, the hash once a frame is stepped.
func TestMemberOf(t *testing.T) {
	st := lockstep.SessionStats{
		Core: lockstep.Stats{Frame: 12, Executed: 10, Delay: 2, Lead: 45 * time.Millisecond, Stalls: 3,
			Datagrams: 100, BytesSent: 9000, DatagramsReceived: 90, BytesReceived: 8000},
		Peers:   []lockstep.PeerStats{{Slot: 1, RTT: 38 * time.Millisecond, Lateness50: 19 * time.Millisecond, Lateness99: 27 * time.Millisecond, Seal: 14}},
		Hash:    0xabc,
		Stepped: 10,
	}
	m := view.MemberOf(0, "playing", st)
	if m.Frame != 12 || m.Executed != 10 || m.LeadMS != 45 || m.Stalls != 3 || m.BytesSent != 9000 || m.DatagramsReceived != 90 ||
		m.Hash != "0000000000000abc" || len(m.Peers) != 1 {
		t.Fatalf("%+v", m)
	}
	if p := m.Peers[0]; p.Slot != 1 || p.RTTMS != 38 || p.Late50 != 19 || p.Late99 != 27 || p.Seal != 14 {
		t.Errorf("peer %+v", p)
	}
	st.Stepped = -1
	if m := view.MemberOf(0, "playing", st); m.Hash != "" {
		t.Errorf("hash %q before any frame", m.Hash)
	}
}

// TestEventOf: drops and leaves keep their last frame, desyncs their
// section.
func TestEventOf(t *testing.T) {
	e := view.EventOf(2, lockstep.Event{Type: lockstep.EventDrop, Frame: 50, Member: 1, LastFrame: 48, Reason: lockstep.ReasonSilent})
	if e.Observer != 2 || e.Type != "drop" || e.LastFrame != 48 || e.Reason != "silent" {
		t.Errorf("%+v", e)
	}
	e = view.EventOf(0, lockstep.Event{Type: lockstep.EventDesync, Frame: 100, Member: 1, Section: "units"})
	if e.Type != "desync" || e.Section != "units" || e.LastFrame != 0 {
		t.Errorf("%+v", e)
	}
}
