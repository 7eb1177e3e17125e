package main

import (
	"github.com/phalanx-net/phalanx/reckon"
	"github.com/phalanx-net/phalanx/view"
)

// memberMsg is one line a member prints.
type memberMsg struct {
	Type  string   `json:"type"`
	Slot  int      `json:"slot"`
	Addrs []string `json:"addrs,omitempty"`
	// progress
	Frame   int64   `json:"frame,omitempty"`
	RTTms   float64 `json:"rtt_ms,omitempty"`
	Delay   int     `json:"delay,omitempty"`
	Stalls  int64   `json:"stalls,omitempty"`
	UpBps   float64 `json:"up_bps,omitempty"`
	DownBps float64 `json:"down_bps,omitempty"`
	// cmds: the commands this member submitted (seq, unix ns) and
	// executed (slot, seq, unix ns) since its previous cmds line
	Submits [][2]int64 `json:"submits,omitempty"`
	Execs   [][3]int64 `json:"execs,omitempty"`
	// result
	Result *memberResult `json:"result,omitempty"`
	// watch: a spectator's result (phalanx watch --mesh)
	Watch *watchResult `json:"watch,omitempty"`
	// view (phalanx mesh --ui): the member's figures, its events since
	// its previous view line, the world when it is the member the page
	// draws, and the page's orders it submitted (id, sequence number,
	// frame executed here or -1)
	View       *view.Member `json:"view,omitempty"`
	ViewEvents []view.Event `json:"view_events,omitempty"`
	Scene      *view.Scene  `json:"scene,omitempty"`
	Orders     [][3]int64   `json:"orders,omitempty"`
}

// memberResult is what one member measured.
type memberResult struct {
	Slot       int                              `json:"slot"`
	Index      int                              `json:"index"` // the parent's number for the process
	Completed  bool                             `json:"completed"`
	FinalHash  string                           `json:"final_hash"`
	Stepped    int64                            `json:"stepped"`
	Stalls     int64                            `json:"stalls"`
	StalledMS  float64                          `json:"stalled_ms"` // how long its frame clock waited (lockstep.Stats.Stalled)
	Delay      int                              `json:"delay"`
	BytesUp    int64                            `json:"bytes_up"`   // UDP payload plus 28 bytes per packet
	BytesDown  int64                            `json:"bytes_down"` // likewise
	Packets    int64                            `json:"packets_up"`
	Signed     int64                            `json:"statements_signed"`   // statements of its stream it signed
	Verified   int64                            `json:"statements_verified"` // signatures of the others' statements it checked
	Seconds    float64                          `json:"seconds"`             // how long it measured
	CPUSeconds float64                          `json:"cpu_seconds"`         // CPU time the process used meanwhile
	OneWay     []float64                        `json:"oneway_ms"`           // delays the network applied to its packets (a sample)
	Events     []event                          `json:"events"`
	Reckon     map[reckon.Method]reckon.Metrics `json:"reckon"`
	Error      string                           `json:"error,omitempty"`
	// Stopped is the reason this member stopped by the rules (dropped,
	// minority), with the error saying so in Error; "" otherwise.
	Stopped string `json:"stopped,omitempty"`
	// EndRSSMB and EndCPUS are the member's own reading when it finished
	// its frames: its resident set size and the CPU time it used in all
	// (phalanx mesh --json), the last sample of its series.
	EndRSSMB float64 `json:"end_rss_mb,omitempty"`
	EndCPUS  float64 `json:"end_cpu_s,omitempty"`
	// EndHeapKB is its live heap after a garbage collection at the same
	// moment, the session still open.
	EndHeapKB float64 `json:"end_heap_kb,omitempty"`
	// Paths says how the member reached the others (phalanx peer --json).
	Paths *pathsReport `json:"paths,omitempty"`
	// Admission is how a member that came back (--rejoin) was admitted
	// and caught up; Admitted lists the admissions its engine reported
	// (slot, frame).
	Admission *memberAdmission `json:"admission,omitempty"`
	Admitted  [][2]int64       `json:"admitted,omitempty"`
}

// memberAdmission is peer.Admission in a member's result.
type memberAdmission struct {
	Frame           int64   `json:"frame"`
	CheckpointFrame int64   `json:"checkpoint_frame"`
	Verified        bool    `json:"verified"`
	CatchupFrames   int     `json:"catchup_frames"`
	Bytes           int64   `json:"bytes"`
	Servers         int     `json:"servers"`
	TransferMS      float64 `json:"transfer_ms"`
	FetchMS         float64 `json:"fetch_ms"` // of the transfer, once the members had stepped the frame before the admission
	ResimulateMS    float64 `json:"resimulate_ms"`
	CatchupMS       float64 `json:"catchup_ms"`
}
