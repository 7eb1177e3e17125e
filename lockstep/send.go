package lockstep

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// checkpointSends is how many datagrams to a member carry each checkpoint.
const checkpointSends = 3

// maxBurstDatagrams bounds the datagrams one flush sends to one member when
// its unacknowledged commands do not fit in one.
const maxBurstDatagrams = 8

// interval is the gap between repeats to r: about a third of the round trip
// (the adaptive send interval of docs/references.md), within the configured
// bounds.
func (c *Core) interval(r *remote) time.Duration {
	i := c.cfg.MinInterval
	if r.rttN > 0 {
		i = r.srtt / 3
	}
	return max(c.cfg.MinInterval, min(i, c.cfg.MaxInterval))
}

// needsRepeat reports whether r lacks something of ours: commands or our
// current seal.
func (c *Core) needsRepeat(r *remote) bool {
	own := c.table.Stream(c.self)
	return r.acked < own.Next() || r.ackedSeal < own.Seal()
}

// lossMemory is how long a member that lost a datagram gets the second
// copy of each datagram with news (Config.SealRepeat): a path on which a
// datagram was lost gets copies for this long, and, since losses on a
// home network are mostly its access link's and so every path's, so does
// every path of a member that saw a datagram to it lost on any path. A
// member that has seen no loss yet, or none for this long, sends each
// datagram once: a lossless network (lan, or a real one on a good day)
// never pays for copies, and a lossy one pays its first lost seal once
// per member, not once per path (with 64 members on broadband, a memory
// per path alone stalled 0.019 of the frames against 0.00017 with copies
// everywhere). The memory is long: at one loss in a thousand a path is now
// and then clean for a minute or two before it loses again, and a memory
// of one minute stalled broadband a third more than five minutes
// (docs/benchmarks.md).
const lossMemory = 5 * time.Minute

// lossy reports whether the path to r gets copies: a datagram was lost on
// it within lossMemory (as we saw it, or as r's copies tell: copySeen), or
// one to us was lost on any path within lossMemory. Only losses we saw
// count for every path; another member's copies do not, or copies would
// spread from member to member on a lossless network.
func (c *Core) lossy(now time.Duration, r *remote) bool {
	return r.lossSeen && now-r.lossAt < lossMemory || c.lossSeen && now-c.lossAt < lossMemory
}

// copySeen notes, for a datagram from r newer than any before (seal and
// Next as it carries them, sent at sent on our clock), before they replace
// the newest's, whether it is a second copy (Config.SealRepeat): the same
// seal and Next as the one before, which carried news (moved the seal or
// Next on), sent at most twice SealRepeat after it and sooner than a
// repeat (MinInterval). A datagram sent soon after another for other news
// (an admission, a leave) is told from a copy when the one before moved
// nothing on; within twice SealRepeat of a seal change it counts as one.
// r sends copies only on a path it saw lose a datagram, so the path is
// lossy for our copies too; a path that never lost one before starts its
// memory now (only then: two members' copies would otherwise keep each
// other's going for ever).
func (c *Core) copySeen(now time.Duration, r *remote, seal bucket.Frame, next uint32, sent time.Duration, first bool) {
	same := seal == r.newestSeal && next == r.newestNext
	if gap := sent - r.newestSent; !first && !r.lossSeen && same && r.newestNews && gap <= 2*c.cfg.SealRepeat && gap < c.cfg.MinInterval {
		r.lossSeen, r.lossAt = true, now
	}
	r.newestSent, r.newestNews = sent, !same
}

// due reports whether a datagram should go to r now, and if not, when.
func (c *Core) due(now time.Duration, r *remote) (bool, time.Duration) {
	if r.pending || !r.sent {
		return true, now
	}
	next := r.lastSend + c.cfg.MaxInterval
	if c.needsRepeat(r) {
		next = min(next, r.lastSend+c.interval(r))
		if r.copyAt > 0 {
			next = min(next, r.copyAt)
		}
	}
	return now >= next, next
}

// noSend is nextDue's answer when no member is live.
const noSend = time.Duration(1<<63 - 1)

// nextDue returns when the earliest live member is due a datagram (now if
// one is already), or noSend.
func (c *Core) nextDue(now time.Duration) time.Duration {
	next := noSend
	for _, r := range c.peers {
		if r == nil || !c.live(r.slot) {
			continue
		}
		_, at := c.due(now, r)
		next = min(next, at)
	}
	return next
}

// markUrgent has news (a command, a seal change, a leave) go out to every
// member at the next send.
func (c *Core) markUrgent(now time.Duration) {
	for _, r := range c.peers {
		if r != nil && !r.pending {
			r.pending, r.pendingAt = true, now
		}
	}
	c.sendAt = now
}

// markPending has news go out to r at the next send.
func (c *Core) markPending(now time.Duration, r *remote) {
	r.pending, r.pendingAt = true, now
	c.sendAt = now
}

// touched notes that r may be due a datagram sooner than send last
// computed (its round trip, and so its repeat interval, changed).
func (c *Core) touched(now time.Duration, r *remote) {
	if _, at := c.due(now, r); at < c.sendAt {
		c.sendAt = at
	}
}

// burst returns the most budget tokens the bucket holds: a quarter second
// of the budget, at least a full datagram; under a tight budget just what a
// send needs in hand (minSendCost), so that datagrams leave one at a time
// at the budget's rate even after a quiet spell (tight.go).
func (c *Core) burst() int64 {
	if c.tight() {
		return int64(minSendCost+c.cfg.Overhead) * int64(time.Second)
	}
	b := int64(c.cfg.Budget) / 4
	b = max(b, int64(c.cfg.MaxDatagramSize+c.cfg.Overhead))
	return b * int64(time.Second)
}

// minSendCost is the budget a send needs in hand: a typical small datagram.
const minSendCost = 200

// affordable reports whether the budget allows another datagram now.
func (c *Core) affordable() bool {
	return c.cfg.Budget <= 0 || c.tokens >= int64(minSendCost+c.cfg.Overhead)*int64(time.Second)
}

// refill adds budget tokens for the time since the last refill.
func (c *Core) refill(dt time.Duration) {
	if c.cfg.Budget <= 0 || dt <= 0 {
		return
	}
	c.tokens = min(c.tokens+int64(dt)*int64(c.cfg.Budget), c.burst())
}

// send builds the datagrams due now, oldest-waiting member first, within the
// budget.
func (c *Core) send(now time.Duration) {
	defer c.fixDatagrams()
	c.refill(now - c.refilled)
	c.refilled = now
	if live := c.liveMask(); !c.sendKnown || c.sendMask != live || now >= c.sendAt {
		// Some member may be due: visit them all, then note when the
		// next is. Until then a Ready (one per datagram received, say)
		// skips the visit.
		n := len(c.peers)
		start := int(c.stats.Datagrams) % n
		if c.tight() {
			start = c.sendNext % n // one round after another (tight.go)
		}
		for k := range n {
			r := c.peers[(start+k)%n]
			if r == nil || !c.live(r.slot) {
				continue
			}
			if ok, _ := c.due(now, r); !ok {
				continue
			}
			if !c.affordable() {
				break // out of budget; the deadline wakes us when it refills
			}
			c.sendTo(now, r)
			c.sendNext = int(r.slot) + 1
		}
		c.sendKnown, c.sendMask, c.sendAt = true, live, c.nextDue(now)
	}
	// A member we stopped listening to may still be listening to us: tell it,
	// every MaxInterval for a drop timeout, so that it stops listening to us
	// too rather than waiting for our seals (the membership view in these
	// datagrams names it).
	// The same goes for a member we dropped that still sends to us (it
	// was frozen, say): the view tells it it was dropped, and it stops.
	for _, r := range c.peers {
		if c.suspected == 0 {
			break
		}
		if r == nil || c.suspected&(1<<r.slot) == 0 || (now-r.suspectedAt > c.cfg.DropTimeout && !r.replyDue) {
			continue
		}
		if now-r.lastSend >= c.cfg.MaxInterval && c.affordable() {
			c.sendTo(now, r)
			r.replyDue = false
		}
	}
}

// sendTo builds one datagram for r, or several when its unacknowledged
// commands do not fit in one.
func (c *Core) sendTo(now time.Duration, r *remote) {
	own := c.table.Stream(c.self)
	theirs := c.table.Stream(r.slot)
	seal := own.Seal()
	// A wait that began before our own pause ended (advanceClock) waited
	// for us, not for the send queue: it would size the lead to the pause.
	if seal > r.sealSent && r.sent && c.sealAt >= c.pausedTo {
		c.waits.Add(now - c.sealAt)
	}
	if r.pending && r.pendingAt >= c.pausedTo {
		c.waits.Add(now - r.pendingAt)
	}
	cmds := own.Since(r.acked)
	stmt, signed := c.ownStatement()
	var covered uint32 // our commands the datagrams built so far carry, up to
	for range maxBurstDatagrams {
		p := &c.pkt
		*p = wire.Packet{
			Session:  c.cfg.Session,
			From:     c.self,
			Sent:     sentTicks(now - c.epoch),
			Clock:    durationTicks(c.position(now)),
			Seal:     seal,
			Next:     uint16(own.Next()),
			Ack:      uint16(theirs.Next()),
			AckSeal:  theirs.Seal(),
			Lag:      lagReport(c.lateReport),
			HasEcho:  r.heard && (r.echoWanted || c.echoDue(r.number)),
			Echo:     wire.Echo{Number: r.newest, Hold: durationTicks(now - r.newestAt)},
			Commands: c.wireCmds[:0],
		}
		r.echoWanted = r.echoWanted && !p.HasEcho
		p.Membership.Views, p.Relay.Commands = c.views[:0], c.relayCmds[:0]
		p.Detail.Frames, p.Detail.Sections = c.detailFrames[:0], c.detailSections[:0]
		if c.hasCheckpoint && (r.cpFrame != c.checkpoint.Frame || r.cpSends < c.checkpointSends()) && c.checkpointDue() {
			// Each checkpoint goes out a few times, not in every datagram.
			if r.cpFrame != c.checkpoint.Frame {
				r.cpFrame, r.cpSends = c.checkpoint.Frame, 0
			}
			r.cpSends++
			p.HasHash, p.Hash = true, c.checkpoint
		}
		if c.leaving {
			p.HasLeave, p.LeaveFrame = true, c.leaveFrame
		}
		c.membershipView(p)
		c.admissionsView(now, p, r)
		c.detailFor(now, p, r)
		// No datagram holds more commands than half its bytes: a long
		// backlog is not copied whole for every datagram.
		take := min(len(cmds), c.cfg.MaxDatagramSize/2)
		for _, bc := range cmds[:take] {
			p.Commands = append(p.Commands, wire.Command{Frame: bc.Frame, Payload: bc.Payload})
		}
		// A new statement goes once to each member, with the next datagram;
		// datagrams that repeat our commands carry it again once a repeat
		// interval passed unacknowledged (not in the quick copy): its
		// first datagram may have been lost (sign.go).
		if signed && (!r.stmtSent || r.stmtCount != stmt.Count || r.stmtSeal != stmt.Seal ||
			len(p.Commands) > 0 && now-r.stmtAt >= c.interval(r)) && c.statementRoom(now) {
			p.HasStatement, p.Statement = true, stmt
		}
		c.heldSeals(p, r)
		c.wireCmds = p.Commands[:0]
		c.views = p.Membership.Views[:0]
		c.detailFrames, c.detailSections = p.Detail.Frames[:0], p.Detail.Sections[:0]
		rest := cmds[:0]
		if p.HasDetail && p.Length() > c.cfg.MaxDatagramSize {
			p.HasDetail = false // the desync search waits for a roomier datagram
		}
		if take < len(cmds) || p.Length() > c.cfg.MaxDatagramSize && len(p.Commands) > 1 {
			// Split: the longest prefix that fits, with a seal and Next that
			// hold for that prefix alone.
			lo, hi := 1, len(p.Commands)-1
			if take < len(cmds) {
				hi = take
			}
			all := p.Commands
			for lo < hi {
				m := (lo + hi + 1) / 2
				p.Commands = all[:m]
				p.Seal = min(seal, cmds[m].Frame-1)
				if p.Length() <= c.cfg.MaxDatagramSize {
					lo = m
				} else {
					hi = m - 1
				}
			}
			p.Commands = all[:lo]
			p.Seal = min(seal, cmds[lo].Frame-1)
			p.Next = uint16(cmds[lo].Seq)
			rest = cmds[lo:]
		}
		if len(rest) == 0 {
			c.relayTo(p, r)
			c.relayCmds = p.Relay.Commands[:0]
		}
		if left := c.leaveAt[r.slot]; left != bucket.NoFrame && p.AckSeal >= left {
			r.leaveAcks++
		}
		if p.HasStatement {
			r.stmtSent, r.stmtCount, r.stmtSeal, r.stmtAt = true, stmt.Count, stmt.Seal, now
			c.stmtOutAt = now
		}
		p.Number = r.recordSend(now)
		if p.HasLeave && !r.leaveSent {
			r.leaveSent, r.leaveNum = true, p.Number
		}
		start := len(c.arena)
		var err error
		c.arena, err = p.Append(c.arena)
		if err != nil {
			panic("lockstep: encoding our own datagram: " + err.Error())
		}
		size := len(c.arena) - start
		c.out.Datagrams = append(c.out.Datagrams, Datagram{To: r.slot, Data: c.arena[start:len(c.arena):len(c.arena)]})
		c.stats.Datagrams++
		c.stats.BytesSent += int64(size + c.cfg.Overhead)
		if c.cfg.Budget > 0 {
			c.tokens -= int64(size+c.cfg.Overhead) * int64(time.Second)
		}
		if len(rest) > 0 {
			covered = rest[0].Seq
		} else {
			covered = own.Next()
		}
		if len(rest) == 0 || !c.affordable() {
			break
		}
		cmds = rest
	}
	if covered > r.acked && r.owedSince == 0 {
		// It owes us an acknowledgement of these (checkTimeouts).
		r.owedSince, r.owedSeq = now, covered
	}
	r.pending = false
	// On a path that lost datagrams lately, a new seal or new commands go
	// out again soon, unless acknowledged first (due checks); any later
	// datagram is that second copy.
	r.copyAt = 0
	if (seal > r.sealSent || own.Next() > r.nextSent) && c.cfg.SealRepeat > 0 && c.lossy(now, r) && !c.tight() {
		r.copyAt = now + c.cfg.SealRepeat
	}
	r.sealSent, r.nextSent = seal, own.Next()
}

// fixDatagrams re-slices every pending datagram from the current arena, which
// append may have reallocated: once, after the last datagram of a Ready is
// built.
func (c *Core) fixDatagrams() {
	off := 0
	for i := range c.out.Datagrams {
		n := len(c.out.Datagrams[i].Data)
		c.out.Datagrams[i].Data = c.arena[off : off+n : off+n]
		off += n
	}
}

// deadline returns when Ready must next be called: the next frame tick, the
// next advance of our seal, the next copy, repeat or keep-alive, or when the
// budget allows the next send.
func (c *Core) deadline(now time.Duration) time.Duration {
	pos := c.position(now)
	var next time.Duration
	if pos < 0 {
		next = now - pos
	} else {
		next = now + c.cfg.Frame - pos%c.cfg.Frame
	}
	// The next send: the earliest member due (send noted it), but not
	// before the budget allows it. Only sends wait for the budget, never
	// the frame tick.
	send := c.sendAt
	if !c.sendKnown || c.sendMask != c.liveMask() {
		send = c.nextDue(now)
	}
	if send == noSend {
		send = -1
	}
	// Under the adaptive policy our seal passes the next frame between
	// frame ticks.
	if due, ok := c.sealDue(c.table.Stream(c.self).Seal() + 1); ok && pos >= 0 && due >= pos {
		next = min(next, now+due-pos+1)
	}
	if send >= 0 {
		if c.cfg.Budget > 0 {
			if need := int64(minSendCost+c.cfg.Overhead)*int64(time.Second) - c.tokens; need > 0 {
				send = max(send, now+time.Duration(need/int64(c.cfg.Budget))+1)
			}
		}
		next = min(next, max(send, now))
	}
	if next <= now {
		next = now + time.Millisecond
	}
	return next
}
