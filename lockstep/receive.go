package lockstep

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// windowEnd is the last frame of the window (Config.Window past our
// executed frame): the furthest frame a member may stamp or seal.
func (c *Core) windowEnd() bucket.Frame { return c.executed + c.window.Ahead }

// ahead reports whether frame f is one we have not executed yet, within
// the window.
func (c *Core) ahead(f bucket.Frame) bool { return f > c.executed && f <= c.windowEnd() }

// Receive hands the core a datagram that arrived from member from, as
// authenticated by the transport. A datagram that does not decode, carries
// another session's tag or claims another sender is counted in Stats and
// ignored. Receive never panics on any input. data is not retained.
func (c *Core) Receive(now time.Duration, from bucket.Slot, data []byte) {
	c.stats.DatagramsReceived++
	c.stats.BytesReceived += int64(len(data) + c.cfg.Overhead)
	if c.closed || c.stopped {
		return
	}
	if int(from) >= len(c.peers) || from == c.self {
		c.stats.Foreign++
		return
	}
	p := &c.pkt
	if err := wire.Parse(data, p); err != nil {
		c.stats.Malformed++
		return
	}
	if p.Session != c.cfg.Session || p.From != from {
		c.stats.Foreign++
		return
	}
	if c.onJoinRequest(now, from, p) {
		return
	}
	r := c.peers[from]
	if c.joinerReceive(now, r, p) {
		return
	}
	c.advanceClock(now)
	if !c.live(from) {
		c.stats.Ignored++
		if c.suspected&(1<<from) != 0 {
			r.replyDue = true // it may not know: tell it (send.go)
		}
		return
	}
	if p.HasMembership && p.Membership.Suspected&(1<<c.self) != 0 {
		// It stopped listening to us: the session has split between us,
		// or it dropped us. Nothing else it says counts for us.
		if bits.OnesCount64(p.Membership.Suspected) == len(p.Membership.Views) {
			c.namesUs(now, r, &p.Membership)
		}
		return
	}
	first := !r.heard
	gap := now - r.lastRecv
	r.heard = true
	r.lastRecv = now
	if first {
		r.heardPos = c.position(now)
		// Its silence now counts from here, not from the origin
		// (checkTimeouts): before it, if we hear it before frame 0.
		c.timeoutsFrom = min(c.timeoutsFrom, now+c.cfg.DropTimeout)
	}

	// Timing: echo of our datagram, one-way delay variation, clock.
	if p.HasEcho {
		r.echo(now, p.Echo)
		c.notePolicyLag(r)
		c.touched(now, r)
		if c.resumed && int16(p.Echo.Number-r.resumeNum) >= 0 {
			r.confirmed = true
		}
		if r.leaveSent && int16(p.Echo.Number-r.leaveNum) >= 0 {
			r.leaveHeard = true
		}
	}
	newer := first || int16(p.Number-r.newest) > 0
	var skipped int // datagrams numbered between the newest before this one and this one
	if newer {
		if !first && r.numbered {
			skipped = int(p.Number-r.newest) - 1
			if skipped > 0 {
				// A datagram lost on its path to us: the path is
				// lossy, for our copies too, and so, for a while, is
				// every path of ours (send.go, lossy).
				r.lossSeen, r.lossAt = true, now
				c.lossSeen, c.lossAt = true, now
			}
		}
		r.newest, r.newestAt, r.numbered = p.Number, now, true
		// What waits for our echo of it goes in the next datagram to it
		// even when echoes are sparse (tight.go, echoDue): its leave, its
		// announcement of our admission, its first datagrams after a
		// freeze (a long silence, or ours). Without a tight budget every
		// datagram echoes (echoDue), so none waits.
		if c.tight() && (p.HasLeave || c.resumed || !first && gap > c.cfg.DropTimeout/2 || announcesUs(p, c.self)) {
			r.echoWanted = true
		}
	}
	// A datagram sent before the path first carried anything waited for
	// the connection to be set up (handshakes lost and repeated): its delay
	// says nothing of the path, so it is not a sample.
	sent := r.unwrapSent(now-c.epoch, p.Sent)
	clock := ticksDuration(p.Clock)
	settled := clock >= r.heardPos
	r.lastOffset = now - c.epoch - sent
	if settled {
		r.offsets.Add(r.lastOffset)
	}
	r.addClock(clock - now)
	c.clockMoved(r)
	if newer {
		c.sampleLateness(now, r, skipped, clock, settled)
	}
	r.reportedLag = ticksDuration(p.Lag)
	c.notePolicyLag(r)

	// What it holds of ours. It cannot hold what we never sent.
	own := c.table.Stream(c.self)
	ack := wire.Unwrap16(own.Next(), p.Ack)
	if ack > own.Next() {
		c.violation(now, from, "ack", fmt.Sprintf("acknowledges %d of our commands, we sent %d", ack, own.Next()))
		return
	}
	if p.AckSeal > own.Seal() {
		c.violation(now, from, "ack", fmt.Sprintf("acknowledges our seal %d, we sealed %d", p.AckSeal, own.Seal()))
		return
	}
	if ack > r.acked {
		r.acked, c.acksGrew = ack, true
		c.ackedBy[from] = ack
		if ack >= r.owedSeq {
			r.owedSince = 0 // the next datagram with commands owes anew
		}
	}
	r.ackedSeal = max(r.ackedSeal, p.AckSeal)

	// Its commands and seal.
	s := c.table.Stream(from)
	next := wire.Unwrap16(s.Next(), p.Next)
	if uint32(len(p.Commands)) > next {
		c.violation(now, from, "sequence", "more commands than sequence numbers")
		return
	}
	if newer && next >= r.newestNext && p.Seal < r.newestSeal {
		c.violation(now, from, "seal", fmt.Sprintf("seal moved backwards from %d to %d", r.newestSeal, p.Seal))
		return
	}
	if newer {
		c.copySeen(now, r, p.Seal, next, sent, first)
		r.newestSeal, r.newestNext = p.Seal, next
	}
	if p.Seal > r.topSeal {
		r.topSeal, r.sealMovedAt = p.Seal, now
	}
	if next > r.topNext {
		r.topNext, r.nextMovedAt = next, now
	}
	limit := c.windowEnd()
	firstSeq := next - uint32(len(p.Commands))
	before := s.Next()
	for i, wc := range p.Commands {
		seq := firstSeq + uint32(i)
		if wc.Frame > limit {
			c.violation(now, from, "window", fmt.Sprintf("command %d at frame %d outside the window (executed %d)", seq, wc.Frame, c.executed))
			return
		}
		if len(wc.Payload) > c.cfg.MaxCommandSize {
			c.violation(now, from, "limit", fmt.Sprintf("command %d has %d bytes, limit %d", seq, len(wc.Payload), c.cfg.MaxCommandSize))
			return
		}
		cmd := bucket.Command{Slot: from, Seq: seq, Frame: wc.Frame, Payload: wc.Payload}
		cmd.Payload = c.heldPayload(seq, s.Next(), wc.Payload)
		if _, err := s.Insert(cmd); err != nil {
			c.violation(now, from, "commands", err.Error())
			return
		}
	}
	if detail := c.countFrames(from, before); detail != "" {
		c.violation(now, from, "limit", detail)
		return
	}
	if p.Seal > limit {
		c.violation(now, from, "window", fmt.Sprintf("seal %d outside the window (executed %d)", p.Seal, c.executed))
		return
	}
	oldSeal := s.Seal()
	s.Promise(p.Seal, next)
	c.sealReached(now, from, oldSeal)
	c.extendChain(now, from)
	if p.HasStatement {
		c.onStatement(now, from, from, p.Statement, false)
		if !c.live(from) {
			return
		}
	}

	if p.HasLeave {
		c.onLeave(now, r, p.LeaveFrame)
	}
	if p.HasMembership && newer {
		c.onMembership(now, r, &p.Membership)
	}
	if newer && c.live(from) {
		c.onAdmissions(now, r, p)
	}
	if len(p.Seals) > 0 && c.live(from) {
		c.onHeldSeals(now, from, p.Seals)
	}
	if p.HasRelay && c.live(from) {
		c.onRelay(now, r, &p.Relay)
	}
	if p.HasHash {
		c.onHash(r, p.Hash)
	}
	if p.HasDetail {
		c.onDetail(now, r, &p.Detail)
	}
}
