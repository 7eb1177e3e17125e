package web

import (
	"io/fs"

	"github.com/phalanx-net/phalanx/view"
)

// maxHistory bounds the samples a Server keeps for the charts: when full,
// every other sample is dropped and samples are kept half as often, so a
// session of any length keeps at most this many, spread over all of it.
const maxHistory = 2048

// Sample is one point of the charts: each member's counters at a moment.
type Sample struct {
	Seconds float64        `json:"t"`
	Members []MemberSample `json:"m"`
}

// MemberSample are the counters of one member in a Sample.
type MemberSample struct {
	Slot     int   `json:"s"`
	Frame    int64 `json:"f"`
	Executed int64 `json:"e"`
	Stalls   int64 `json:"st"`
	Bytes    int64 `json:"b"`  // sent
	Dgrams   int64 `json:"d"`  // sent
	BytesIn  int64 `json:"bi"` // received
	DgramsIn int64 `json:"di"` // received
}

// history keeps samples of the snapshots published, bounded by maxHistory.
type history struct {
	list   []Sample
	stride int // keep one snapshot in stride
	skip   int
}

func (h *history) add(s *view.Snapshot) {
	if h.stride == 0 {
		h.stride = 1
	}
	if h.skip++; h.skip < h.stride {
		return
	}
	h.skip = 0
	if len(h.list) == maxHistory {
		n := 0
		for i := 0; i < len(h.list); i += 2 {
			h.list[n] = h.list[i]
			n++
		}
		h.list = h.list[:n]
		h.stride *= 2
	}
	sm := Sample{Seconds: s.Seconds, Members: make([]MemberSample, len(s.Members))}
	for i, m := range s.Members {
		sm.Members[i] = MemberSample{Slot: m.Slot, Frame: m.Frame, Executed: m.Executed, Stalls: m.Stalls,
			Bytes: m.BytesSent, Dgrams: m.DatagramsSent, BytesIn: m.BytesReceived, DgramsIn: m.DatagramsReceived}
	}
	h.list = append(h.list, sm)
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the embedded directory is part of the build
	}
	return sub
}
