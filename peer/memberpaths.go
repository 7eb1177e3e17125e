package peer

import (
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/phalanx-net/phalanx/bucket"
)

// PairPath is how this member reaches one other member.
type PairPath struct {
	Slot bucket.Slot
	ID   peer.ID
	Path Path
	RTT  time.Duration // the session's smoothed round-trip time to it; 0 before it has one
}

// Paths returns, once the session has started, how this member reaches
// each other member: the path Meet found (direct without Meet), corrected
// by the transport's link (a pair whose packets go through the relay is
// relayed; one Meet found relayed whose packets now go directly was
// punched), with the round-trip time the session measured. Nil before the
// session starts.
func (m *Member) Paths() []PairPath {
	m.mu.Lock()
	sess, tr, paths := m.sess, m.tr, m.paths
	var st Status
	if m.ls != nil {
		st.Stats = m.ls.Stats()
	} else {
		st = m.status
	}
	m.mu.Unlock()
	if sess == nil || tr == nil {
		return nil
	}
	ts := tr.Stats()
	var out []PairPath
	for slot := range sess.Members {
		id := sess.Member(bucket.Slot(slot))
		if bucket.Slot(slot) == sess.Self || id == "" {
			continue
		}
		p := PairPath{Slot: bucket.Slot(slot), ID: id, Path: PathDirect}
		if found, ok := paths[id]; ok {
			p.Path = found
		}
		switch relayed := ts.Members[slot].Relayed; {
		case relayed:
			p.Path = PathRelayed
		case p.Path == PathRelayed:
			p.Path = PathPunched
		}
		for _, ps := range st.Stats.Peers {
			if ps.Slot == p.Slot {
				p.RTT = ps.RTT
			}
		}
		out = append(out, p)
	}
	return out
}
