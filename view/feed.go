package view

import (
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/lockstep"
)

// Snapshot is everything a page shows at one moment of a live session.
// Every field is plain data: a Snapshot handed to Server.Publish must not
// be modified afterwards.
type Snapshot struct {
	Title   string  `json:"title"`
	Seconds float64 `json:"t"` // time since the session started (or the view did)
	// Members are the members' own figures, by slot or process order.
	Members []Member `json:"members"`
	// Events are the session's events seen so far, each with the member
	// that saw it (at most a few thousand).
	Events []Event `json:"events"`
	// Scene is the world as one member's simulation has it; nil when the
	// simulation is not Drawable.
	Scene *Scene `json:"scene,omitempty"`
	// SceneSlot is the member whose simulation Scene comes from.
	SceneSlot int `json:"scene_slot"`
	// Commands are the commands issued from the page and where they ran.
	Commands []Command `json:"commands"`
	// Done is set once the session is over; Summary then says how it ended.
	Done    bool   `json:"done"`
	Summary string `json:"summary,omitempty"`
}

// Member is one member's figures. Counters only grow; the page turns them
// into rates between snapshots.
type Member struct {
	Slot       int     `json:"slot"`
	Phase      string  `json:"phase"`          // lobby, playing, ended, failed, killed
	Frame      int64   `json:"frame"`          // frame clock
	Executed   int64   `json:"executed"`       // newest frame stepped
	Hash       string  `json:"hash,omitempty"` // state hash after Executed
	Delay      int     `json:"delay"`          // frames ahead a command is stamped now
	LeadMS     float64 `json:"lead_ms"`        // the adaptive lead
	LagMS      float64 `json:"lag_ms"`         // the largest lateness report: what sizes the lead
	SendWaitMS float64 `json:"send_wait_ms"`   // high percentile of how long a seal change waited for a send
	Stalls     int64   `json:"stalls"`         // frames that waited for a seal
	Commands   int64   `json:"commands"`       // commands stepped (all members')

	DatagramsSent     int64 `json:"dg_sent"`
	BytesSent         int64 `json:"bytes_sent"` // with Config.Overhead per datagram
	DatagramsReceived int64 `json:"dg_recv"`
	BytesReceived     int64 `json:"bytes_recv"`

	Peers []Peer `json:"peers"`
	Error string `json:"error,omitempty"`
}

// Peer is what a member knows of its path to another member.
type Peer struct {
	Slot   int     `json:"slot"`
	RTTMS  float64 `json:"rtt_ms"`    // smoothed round-trip time
	Late50 float64 `json:"late50_ms"` // median lateness of its datagrams' news, by our frame clock
	Late99 float64 `json:"late99_ms"` // 99th percentile of it
	LagMS  float64 `json:"lag_ms"`    // its report of how late our news reaches it
	Seal   int64   `json:"seal"`      // its seal as we hold it
}

// Event is a session event as one member saw it.
type Event struct {
	Observer  int    `json:"observer"` // the member that reported it
	Type      string `json:"type"`     // drop, leave, desync, stop, violation, rejoin, ...
	Frame     int64  `json:"frame"`
	Member    int    `json:"member"`
	LastFrame int64  `json:"last_frame,omitempty"`
	Section   string `json:"section,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// Command is a command issued from the page: through which member, and on
// which members it has been executed so far.
type Command struct {
	ID       int    `json:"id"`
	Slot     int    `json:"slot"`     // the member that submitted it
	Seq      int64  `json:"seq"`      // its sequence number in that member's stream, -1 until submitted
	Text     string `json:"text"`     // what it orders
	Frame    int64  `json:"frame"`    // the frame it executed on, -1 until known
	Executed []int  `json:"executed"` // the members that executed it
	Error    string `json:"error,omitempty"`
}

// ms returns d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// MemberOf returns the figures of a member in slot from its session's
// stats; phase is how the caller names where it stands.
func MemberOf(slot int, phase string, st lockstep.SessionStats) Member {
	c := st.Core
	m := Member{
		Slot: slot, Phase: phase,
		Frame: int64(c.Frame), Executed: int64(c.Executed),
		Delay: c.Delay, LeadMS: ms(c.Lead), LagMS: ms(c.Lag), SendWaitMS: ms(c.SendWait),
		Stalls: c.Stalls, Commands: c.Commands,
		DatagramsSent: c.Datagrams, BytesSent: c.BytesSent,
		DatagramsReceived: c.DatagramsReceived, BytesReceived: c.BytesReceived,
		Peers: make([]Peer, 0, len(st.Peers)),
	}
	if st.Stepped >= 0 {
		m.Hash = fmt.Sprintf("%016x", st.Hash)
	}
	for _, p := range st.Peers {
		m.Peers = append(m.Peers, Peer{
			Slot: int(p.Slot), RTTMS: ms(p.RTT), LagMS: ms(p.Lag), Seal: int64(p.Seal),
			Late50: ms(p.Lateness50), Late99: ms(p.Lateness99),
		})
	}
	return m
}

// EventOf returns event e as member observer saw it.
func EventOf(observer int, e lockstep.Event) Event {
	ev := Event{
		Observer: observer, Type: e.Type.String(), Frame: int64(e.Frame), Member: int(e.Member),
		Section: e.Section, Reason: string(e.Reason), Detail: e.Detail,
	}
	if e.Type == lockstep.EventDrop || e.Type == lockstep.EventLeave {
		ev.LastFrame = int64(e.LastFrame)
	}
	return ev
}
