package locksteptest

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// inject carries out a fault whose time has come.
func (h *harness) inject(f Fault) {
	h.lastFault = h.now
	h.doneScan = 0 // a member may be active again
	switch f.Kind {
	case FaultKill:
		h.members[f.Slot].killed = true
	case FaultLeave:
		m := h.members[f.Slot]
		if m.active() {
			if _, err := m.core.Leave(h.now); err != nil {
				m.fail(err)
			}
			h.ready(m)
		}
	case FaultPartition:
		h.splitFrom, h.splitTo, h.splitGroup = h.now, h.now+f.Duration, f.Group
	case FaultFreeze:
		m := h.members[f.Slot]
		if m.active() {
			m.frozen, m.wasFrozen, m.queued = h.now+f.Duration, true, 0
			// The wakes set before are stale now; it wakes after the
			// datagrams its socket held are read.
			h.wake(m, m.frozen+time.Microsecond)
		}
	case FaultMute:
		m := h.members[f.Slot]
		m.muted, m.muteSeal = true, m.core.Stats().Seal
	case FaultStorm:
		h.stormTo, h.stormLoss = h.now+f.Duration, f.Loss
	case FaultRejoin, FaultJoin:
		h.join(f)
	}
}

// apart reports whether a partition separates members a and b now: the
// members of its Group from the rest or, without a group, a lower half
// (slots below Members/2) from an upper half.
func (h *harness) apart(a, b bucket.Slot) bool {
	if h.now < h.splitFrom || h.now >= h.splitTo {
		return false
	}
	if g := h.splitGroup; g != 0 {
		return (g>>a)&1 != (g>>b)&1
	}
	half := bucket.Slot(h.cfg.Members / 2)
	return (a < half) != (b < half)
}

func (h *harness) transmit(m *member, d lockstep.Datagram) {
	if m.muted {
		d.Data = h.mute(m, d.Data)
	}
	if h.now < h.stormTo && float64(h.storms.Uint32())/(1<<32) < h.stormLoss {
		h.res.Lost++
		return
	}
	if h.cfg.Tamper != nil {
		if d.Data = h.cfg.Tamper(h.now, m.slot, d.To, d.Data); d.Data == nil {
			return
		}
	}
	if h.streams != nil {
		h.streamSend(m, d.To, d.Data)
		return
	}
	h.carry(m, d.To, h.now, len(d.Data)+m.overhead, d.Data, evDeliver, 0)
}

// mute rewrites a muted member's datagram: its seal stays where it was when
// it was muted, and its commands past that seal are left out.
func (h *harness) mute(m *member, data []byte) []byte {
	p := &h.pkt
	if err := wire.Parse(data, p); err != nil {
		return data
	}
	p.Seal = min(p.Seal, m.muteSeal)
	n := len(p.Commands)
	for n > 0 && p.Commands[n-1].Frame > m.muteSeal {
		n--
	}
	p.Next -= uint16(len(p.Commands) - n)
	p.Commands = p.Commands[:n]
	out, err := p.Append(nil)
	if err != nil {
		panic("locksteptest: muting a datagram: " + err.Error())
	}
	return out
}

// carry puts size bytes from m on the wire towards member to at time at,
// through the network (m's uplink, a partition, the link's impairments),
// which queues an event of kind (carrying data and gen) for every copy
// that arrives; a packet the uplink refuses, a partition cuts or the link
// loses is counted as lost.
func (h *harness) carry(m *member, to bucket.Slot, at time.Duration, size int, data []byte, kind eventKind, gen uint64) {
	e := h.newEvent()
	e.kind, e.to, e.from, e.gen, e.sent = kind, to, m.slot, gen, at
	e.data = append(h.buf(), data...)
	if h.net.Send(at, int(m.slot), int(to), size, queued{e: e, to: to}).Lost() {
		h.res.Lost++
		h.recycle(e)
	}
}

// copyEvent is the event of a duplicated datagram's second copy.
func (h *harness) copyEvent(e *event) *event {
	c := h.newEvent()
	*c = *e
	c.data = append(h.buf(), e.data...)
	return c
}
