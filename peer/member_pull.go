package peer

import (
	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Pull mode (MemberConfig.NewSim nil): the game steps its own simulation on
// its own goroutine, typically once per Update of its loop:
//
//	for _, b := range m.Ready() {
//		world.Step(b.Frame, b.Commands)
//		m.Stepped(b.Frame, world.Hash(), nil)
//	}
//
// The member's goroutines keep the network and the seal timing going
// meanwhile; the game's state needs no lock.

// Ready returns the buckets ready to step, in frame order, and never
// blocks: none outside the session or in push mode, none past the last
// frame. Step each and report it with Stepped, in order, before the next
// call; the buckets are the caller's to keep.
func (m *Member) Ready() []lockstep.Bucket {
	ls := m.playing()
	if ls == nil || m.cfg.NewSim != nil {
		return nil
	}
	bs := ls.Ready()
	end := m.end()
	for i, b := range bs {
		if b.Frame >= end {
			bs = bs[:i]
			break
		}
	}
	m.mu.Lock()
	m.handed = append(m.handed, bs...)
	m.mu.Unlock()
	return bs
}

// Stepped reports the state hash after the game stepped frame in pull mode,
// with its section hashes (nil when it has none; see
// lockstep.SectionHasher), for desync detection, the replay and the status.
// It never blocks. After the last frame the member ends the session.
func (m *Member) Stepped(frame bucket.Frame, hash uint64, sections []lockstep.Section) {
	m.mu.Lock()
	ls := m.ls
	var cmds []bucket.Command
	for len(m.handed) > 0 && m.handed[0].Frame <= frame {
		if m.handed[0].Frame == frame {
			cmds = m.handed[0].Commands
		}
		m.handed = m.handed[1:]
	}
	m.mu.Unlock()
	if ls == nil || m.cfg.NewSim != nil {
		return
	}
	ls.Stepped(frame, hash, sections)
	m.onStep(frame, cmds, nil, hash)
}
