package lockstep

import (
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/delay"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// sentRing remembers when recent datagrams to one member were sent, by
// datagram number, to turn echoes into round-trip times.
const sentRing = 128

// clockSamples is how many recent datagrams the clock estimate looks at.
const clockSamples = 16

// remote is what a Core knows about one other member and its path.
type remote struct {
	slot bucket.Slot

	// Sending to it.
	number   uint16 // next datagram number
	lastSend time.Duration
	sent     bool   // anything sent yet
	acked    uint32 // how many of our commands it holds
	// owedSince: since when it owes an acknowledgement of the first
	// owedSeq of our commands, which we had sent it then (0: it owes
	// none); checkTimeouts.
	owedSince time.Duration
	owedSeq   uint32
	ackedSeal bucket.Frame  // our seal as it holds it
	sealSent  bucket.Frame  // our seal in the last datagram to it
	nextSent  uint32        // our next sequence number in the last datagram to it
	copyAt    time.Duration // when our newest seal and commands go out to it again (Config.SealRepeat), or 0
	stmtSent  bool          // our statement of stmtCount commands and seal stmtSeal went out to it (sign.go)
	stmtCount uint32
	stmtSeal  bucket.Frame
	stmtAt    time.Duration // when it last went out to it
	pending   bool          // news (a command, a seal change, a leave) waits to go out (Core.markUrgent)
	pendingAt time.Duration
	lossSeen  bool // a datagram on the path between us was lost, lossAt when we saw it (send.go, lossy)
	lossAt    time.Duration

	// Receiving from it.
	heard       bool
	heardPos    time.Duration // our frame-clock position when we first heard from it
	newest      uint16        // newest datagram number received, for echoes
	numbered    bool          // newest is a number it sent us: a later one skipping numbers is a loss (Receive)
	echoWanted  bool          // the newest asks for an echo in our next datagram (Receive)
	newestAt    time.Duration
	lastRecv    time.Duration
	clockN      int
	bestOff     time.Duration // the largest of clockOff (addClock)
	newestClock time.Duration // the frame clock in its newest datagram
	newestSent  time.Duration // the send time of its newest datagram, on our clock (copySeen)
	newestNews  bool          // whether its newest datagram moved the seal or Next on from the one before (copySeen)
	reportedLag time.Duration // its report of how late the members' datagrams' news reaches it (see sampleLateness): what our lead must cover

	// When we stopped listening to it, and whether it sent us something
	// since that our membership view should answer (send.go).
	suspectedAt time.Duration
	replyDue    bool

	// After a freeze (faults.go, resume): the number of our first datagram
	// to it since, and whether it has echoed that one or a later one.
	resumeNum uint16
	confirmed bool

	// Its seal as advertised: the highest, and when it last rose; when its
	// advertised Next last rose.
	topSeal     bucket.Frame
	sealMovedAt time.Duration
	// lagFrom: the frame from which its seal's lag behind our frame clock
	// counts, if later than its seal (checkTimeouts): our clock's frame
	// when we joined or resumed after a freeze, before its seals reached
	// us again.
	lagFrom     bucket.Frame
	topNext     uint32
	nextMovedAt time.Duration

	// Its commands on its newest frame so far, against the limits per
	// frame (faults.go, countFrames).
	countFrame bucket.Frame
	countN     int
	countBytes int

	// Datagrams we sent it acknowledging its whole stream up to its leave.
	leaveAcks int
	// Our own leave: the number of the first datagram to it that announced
	// it, and whether it has echoed that one or a later one, which proves
	// it heard the announcement.
	leaveSent  bool
	leaveNum   uint16
	leaveHeard bool

	// On a member that admitted it: the number of our first datagram to
	// it that told it so, and whether it echoed that one or a later one
	// (until then every datagram to it tells it).
	admitSent  bool
	admitNum   uint16
	admitHeard bool

	// Its admissions entries (admit.go), and on a joiner, the number of
	// the datagram that told us where its commands for us start; the
	// entries themselves are in the cold part below.
	admMask  uint64
	started  bool
	startNum uint16

	// Its membership view (faults.go); the views are below.
	hasView bool
	mask    uint64

	// Seal monotonicity: the seal and Next of its newest datagram.
	newestSeal bucket.Frame
	newestNext uint32

	// Our checkpoint as last sent to it, and how many times.
	cpFrame bucket.Frame
	cpSends int

	// The first checkpoint known to differ from it, or -1: every datagram
	// to it reads it (desync.go, detailFor); the rest of the search is in
	// the cold part below.
	mismatch bucket.Frame

	// Measurements.
	srtt, rttvar time.Duration
	rttN         int
	rtts         delay.Samples // recent RTTs, for the minimum (the windows are held by value, with the fields every datagram reads)
	rttAdds      int           // samples added to rtts
	minRTTNow    time.Duration // the smallest of rtts, or of rtts and the last 15 samples that left it (echo)
	offsets      delay.Samples // receive time minus its send time: one-way delay plus clock offset
	lastOffset   time.Duration // the newest of them, settled or not: what unwraps the next Sent (unwrapSent)
	lags         delay.Samples // how late its datagrams' news reached us, by our frame clock (sampleLateness), for PeerStats
	// Its frame clock minus our receive time, for the last clockSamples
	// datagrams (addClock).
	clockOff [clockSamples]time.Duration

	// The large and rarely read part, kept after the fields every
	// datagram reads so that those share a few cache lines (a core of 64
	// members keeps 63 remotes, and a run in virtual time 64 cores).

	// When recent datagrams to it were sent (recordSend, echo): a
	// datagram's number beside its time, which an echo reads together.
	sends [sentRing]sentRecord
	// Its admissions entries (admit.go) and membership views (faults.go).
	adm   [bucket.MaxMembers]wire.Admission
	views [bucket.MaxMembers]wire.MemberView

	// Desync search (desync.go).
	checkpoints      [8]wire.HashReport
	agreed           bucket.Frame // newest frame known to agree with it
	found            bucket.Frame // first divergent frame, or -1
	foundAt          time.Duration
	inputsDiffer     bool
	section          string
	sectionsCompared bool
	theirSections    []uint64 // its section hashes of the found frame (at most wire.MaxSections)
}

// sentRecord is when the datagram numbered num went out to a member.
type sentRecord struct {
	at  time.Duration
	num uint16
}

func newRemote(slot bucket.Slot, seal bucket.Frame) *remote {
	r := &remote{
		slot:       slot,
		ackedSeal:  seal,
		sealSent:   seal,
		rtts:       *delay.NewSamples(64),
		agreed:     -1,
		mismatch:   -1,
		found:      -1,
		newestSeal: seal,
		topSeal:    seal,
		countFrame: -1,
		offsets:    *delay.NewSamples(256),
		lags:       *delay.NewSamples(256),
	}
	for i := range r.checkpoints {
		r.checkpoints[i].Frame = -1
	}
	return r
}

func (r *remote) recordSend(now time.Duration) uint16 {
	n := r.number
	r.number++
	r.sends[n%sentRing] = sentRecord{at: now, num: n}
	r.lastSend = now
	r.sent = true
	return n
}

// echo turns an echo of one of our datagrams into an RTT sample.
func (r *remote) echo(now time.Duration, e wire.Echo) {
	sr := &r.sends[e.Number%sentRing]
	if sr.num != e.Number || !r.sent {
		return
	}
	rtt := now - sr.at - ticksDuration(e.Hold)
	if rtt < 0 || rtt > 60*time.Second {
		return
	}
	r.rtts.Add(rtt)
	// The smallest of the window: at once when a sample is smaller, and
	// recomputed every sixteenth sample, when the smallest may have left
	// it: scanning the window on every echo costs a member's time per
	// datagram in proportion to the window.
	r.rttAdds++
	if rtt < r.minRTTNow || r.rttN == 0 {
		r.minRTTNow = rtt
	} else if r.rttAdds%16 == 0 {
		r.minRTTNow = r.rtts.Min()
	}
	if r.rttN == 0 {
		r.srtt, r.rttvar = rtt, rtt/2
	} else {
		d := r.srtt - rtt
		if d < 0 {
			d = -d
		}
		r.rttvar = (3*r.rttvar + d) / 4
		r.srtt = (7*r.srtt + rtt) / 8
	}
	r.rttN++
}

// minRTT returns the smallest recent RTT, or 0 before any.
func (r *remote) minRTT() time.Duration { return r.minRTTNow }

// delayVariation returns the high percentile of the one-way delay variation
// on its path to us, by the minimum-offset method: each datagram's receive
// time minus its send time is the one-way delay plus the (unknown, constant)
// clock offset; the smallest such offset in the window stands for the
// fastest delivery, and every other one exceeds it by that datagram's extra
// delay.
func (r *remote) delayVariation() time.Duration {
	if r.offsets.Len() == 0 {
		return 0
	}
	return r.offsets.Percentile(99) - r.offsets.Min()
}

// oneWay estimates a high percentile of the one-way delay from it to us:
// half the minimum RTT (the path's fixed delay, assuming symmetric minimum
// delays) plus the variation measured by the minimum-offset method.
func (r *remote) oneWay() time.Duration {
	return r.minRTT()/2 + r.delayVariation()
}

// clockAt estimates the member's frame-clock position at our time now from
// the least delayed recent datagram.
func (r *remote) clockAt(now time.Duration) (time.Duration, bool) {
	if r.clockN == 0 {
		return 0, false
	}
	return now + r.bestOff + r.minRTT()/2, true
}

// addClock records its frame clock minus our receive time for one datagram
// and keeps the largest of the last clockSamples, rescanning them only when
// the largest leaves.
func (r *remote) addClock(off time.Duration) {
	i := r.clockN % clockSamples
	evicted := r.clockN >= clockSamples && r.clockOff[i] == r.bestOff
	r.clockOff[i] = off
	r.clockN++
	switch {
	case r.clockN == 1 || off >= r.bestOff:
		r.bestOff = off
	case evicted:
		n := min(r.clockN, clockSamples)
		r.bestOff = r.clockOff[0]
		for _, o := range r.clockOff[1:n] {
			r.bestOff = max(r.bestOff, o)
		}
	}
}

// clockKey is what clockAt adds to our time now: the member with the
// smallest key has the slowest frame clock.
func (r *remote) clockKey() time.Duration { return r.bestOff + r.minRTT()/2 }

// minLateSamples is how many samples of lateness it takes before we report
// any: the first full set of reports replaces the starting lead at once, so
// it should see more than the few datagrams of the first second. (It was
// 200 while every datagram with news went out twice, its copy 5 ms later;
// copies go only on paths that lost, so 100 are about as many seals.)
const minLateSamples = 100

// The tail of lateness our reports come from (Core.late): lateBlocks blocks
// of lateBlock each (40 s in all), keeping the lateKeep worst samples of
// each. The report is the lateness all but a share lateShare/(members−1)
// of the window's samples stayed within: a member waits for every other
// member's seals, so its frames stall about as often as the others'
// datagrams are late, summed. lateFastSamples is how many of the newest
// samples the moving average that sees the lateness shift (addLateness)
// follows, and lateShift how far it must exceed twice the window's mean.
const (
	lateBlock       = 5 * time.Second
	lateBlocks      = 8
	lateKeep        = 64
	lateShare       = 0.015
	lateFastSamples = 32
	lateShift       = 10 * time.Millisecond
	lateRiseLead    = time.Second
)

// waitMemory is how slowly a lower wait of seal changes for their send
// lowers the lead: the excess of the wait the lead covers over the measured
// one shrinks by a factor e over it.
const waitMemory = 40 * time.Second

// lagReport is the Lag field of our datagrams: lag rounded up to a whole
// tick so that a lead of that size covers it; at least one tick once
// reported, since 0 says nothing is measured yet.
func lagReport(lag time.Duration) wire.Ticks {
	if lag <= 0 {
		return 0
	}
	return max(durationTicks(lag+100*time.Microsecond-1), 1)
}

// sentTicks is a datagram's Sent field for our clock reading d: its low 16
// bits in ticks (wire.UnwrapTicks16 restores it).
func sentTicks(d time.Duration) wire.Ticks { return durationTicks(d) & 0xFFFF }

// unwrapSent restores the sender's clock reading of a datagram whose Sent is v,
// received at our clock reading now: the reading nearest to what its last
// datagram implies (the same offset between its clock and ours), which is
// within 3.3 s of the truth while the delay varies by less than that. Only
// differences between offsets count (delayVariation), so the first
// datagram may unwrap anywhere.
func (r *remote) unwrapSent(now time.Duration, v wire.Ticks) time.Duration {
	ref := durationTicks(now - r.lastOffset)
	return ticksDuration(wire.UnwrapTicks16(ref, v))
}

func durationTicks(d time.Duration) wire.Ticks {
	if d <= 0 {
		return 0
	}
	return wire.Ticks(d / (100 * time.Microsecond))
}

func ticksDuration(t wire.Ticks) time.Duration {
	if t > wire.Ticks(1<<40) {
		return time.Duration(1<<40) * 100 * time.Microsecond
	}
	return time.Duration(t) * 100 * time.Microsecond
}
