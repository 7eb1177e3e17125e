package lockstep_test

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

// Admissions against a hostile member: an authenticated member that puts
// admissions entries of its own making in its datagrams can neither admit
// a joiner that never asked, nor hold an admission open for ever, nor
// decide alone where a joiner starts.

// admitRun is three members of a four-slot session whose slot 3 is open,
// stepped in virtual time over a lossless network with a 10 ms delay; a
// joiner for slot 3 starts at joinAt (if positive). rewrite, if set, may
// replace a datagram on its way.
type admitRun struct {
	t       *testing.T
	cores   [4]*lockstep.Core
	joinAt  time.Duration
	rewrite func(now time.Duration, from, to bucket.Slot, data []byte) []byte
	events  []lockstep.Event // of members 0 and 1
	stops   int              // members 0, 1 and 3 that stopped
}

const hostileSlot, openSlot = 2, 3

func newAdmitRun(t *testing.T) *admitRun {
	r := &admitRun{t: t}
	for i := range 3 {
		cfg := memberConfig(4, bucket.Slot(i))
		cfg.Open = 1 << openSlot
		r.cores[i] = newCore(t, cfg, 0)
	}
	return r
}

// rewriteAdmissions replaces the admissions block of the datagram data.
func rewriteAdmissions(t *testing.T, data []byte, as ...wire.Admission) []byte {
	var p wire.Packet
	if err := wire.Parse(data, &p); err != nil {
		t.Fatal(err)
	}
	p.Admissions = as
	b, err := p.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *admitRun) run(until time.Duration) {
	type dg struct {
		from, to bucket.Slot
		data     []byte
	}
	var inflight []dg
	for now := time.Duration(0); now < until; now += 10 * time.Millisecond {
		if r.joinAt > 0 && now == r.joinAt {
			cfg := memberConfig(4, openSlot)
			cfg.Open, cfg.Join = 1<<openSlot, true
			r.cores[openSlot] = newCore(r.t, cfg, now)
		}
		deliver := inflight
		inflight = nil
		for _, d := range deliver {
			if c := r.cores[d.to]; c != nil {
				c.Receive(now, d.from, d.data)
			}
		}
		for i, c := range r.cores {
			if c == nil {
				continue
			}
			wasStopped := c.Stopped()
			rd := c.Ready(now)
			for _, d := range rd.Datagrams {
				data := append([]byte(nil), d.Data...)
				if r.rewrite != nil {
					data = r.rewrite(now, bucket.Slot(i), d.To, data)
				}
				if data != nil {
					inflight = append(inflight, dg{bucket.Slot(i), d.To, data})
				}
			}
			for _, e := range rd.Events {
				if i < 2 {
					r.events = append(r.events, e)
				}
				r.t.Logf("%v member %d: %v", now, i, e)
			}
			if !wasStopped && c.Stopped() && i != hostileSlot {
				r.stops++
			}
		}
	}
}

// admissionsOf counts the joins and rejoins members 0 and 1 raised.
func (r *admitRun) admissionsOf() int {
	n := 0
	for _, e := range r.events {
		if e.Type == lockstep.EventJoin || e.Type == lockstep.EventRejoin {
			n++
		}
	}
	return n
}

// TestPhantomAdmissionIsRefused: member 2 tells member 0, from 3 s on, that
// the open slot 3 (whose joiner never asked) is admitted, or only names it.
// Before the fix member 0 admitted the phantom at once (a final entry) or
// started agreeing on it and held its execution (a mere mention), then
// waited for the phantom's silence drop, again and again: stalled 55.4 s
// and 32.1 s of 60. Now neither starts anything.
func TestPhantomAdmissionIsRefused(t *testing.T) {
	for _, final := range []bool{true, false} {
		name := "named"
		if final {
			name = "final"
		}
		t.Run(name, func(t *testing.T) {
			r := newAdmitRun(t)
			r.rewrite = func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
				if from != hostileSlot || to != 0 || now <= 3*time.Second {
					return data
				}
				a := wire.Admission{Slot: openSlot, Flags: wire.AdmitLate, Proposal: -1, Frame: wire.Unknown}
				if final {
					at := r.cores[0].Executed() + 2
					a = wire.Admission{Slot: openSlot, Flags: wire.AdmitFinal | wire.AdmitLate, Proposal: at, Frame: at}
				}
				return rewriteAdmissions(t, data, a)
			}
			r.run(30 * time.Second)
			c := r.cores[0]
			t.Logf("members 0 and 1 raised %d admissions; member 0 stalled %v of 30 s", r.admissionsOf(), c.Stats().Stalled)
			if n, st := r.admissionsOf(), c.Stats().Stalled; n != 0 || st > time.Second || r.stops != 0 {
				t.Errorf("members 0 and 1 raised %d admissions; member 0 stalled %v of 30 s; %d honest members stopped", n, st, r.stops)
			}
		})
	}
}

// TestUnsettledAdmissionHoldsNobodyForEver: member 2 names the open slot 3
// in every datagram from 3 s on, never settled. Before the fix every member
// started the admission and held its execution at its proposal; after a
// window (60 s) the honest members took each other's seals for window
// violations and stopped. Now nobody starts (the joiner never asked);
// and when the joiner does ask, the honest members stop listening to the
// member that keeps the admission from being agreed and admit the joiner.
func TestUnsettledAdmissionHoldsNobodyForEver(t *testing.T) {
	unsettled := func(r *admitRun) func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
		return func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
			if from != hostileSlot || to == openSlot || now <= 3*time.Second {
				return data
			}
			return rewriteAdmissions(r.t, data, wire.Admission{Slot: openSlot, Flags: wire.AdmitLate, Proposal: 100, Frame: wire.Unknown})
		}
	}
	t.Run("no joiner", func(t *testing.T) {
		r := newAdmitRun(t)
		r.rewrite = unsettled(r)
		r.run(80 * time.Second)
		for i := range 2 {
			if c := r.cores[i]; c.Stopped() || c.Stats().Stalled > time.Second || c.Executed() < 1500 {
				t.Errorf("member %d: stopped %v (%v), stalled %v, executed %d of 1600 frames", i, c.Stopped(), c.Err(), c.Stats().Stalled, c.Executed())
			}
		}
	})
	t.Run("joiner", func(t *testing.T) {
		r := newAdmitRun(t)
		r.rewrite = unsettled(r)
		r.joinAt = 5 * time.Second
		r.run(80 * time.Second)
		j := r.cores[openSlot]
		t.Logf("members 0 and 1 stalled %v and %v of 80 s; the joiner admitted at %d", r.cores[0].Stats().Stalled, r.cores[1].Stats().Stalled, j.AdmittedAt())
		for i := range 2 {
			c := r.cores[i]
			if c.Stopped() || c.Listening(hostileSlot) || !c.Listening(openSlot) || c.Executed() < 1500 {
				t.Errorf("member %d: stopped %v (%v), listening to member 2: %v, to the joiner: %v, executed %d of 1600 frames",
					i, c.Stopped(), c.Err(), c.Listening(hostileSlot), c.Listening(openSlot), c.Executed())
			}
			// Held at most from its proposal (2 s in) to the patience's end
			// (10 s in) and the drop agreement.
			if st := c.Stats().Stalled; st > 15*time.Second {
				t.Errorf("member %d stalled %v", i, st)
			}
		}
		if j.Joining() || j.Stopped() || j.Executed() < 1500 {
			t.Errorf("joiner: joining %v, stopped %v (%v), executed %d", j.Joining(), j.Stopped(), j.Err(), j.Executed())
		}
	})
}

// TestJoinerWaitsForAgreeingMembers: member 2 answers the joiner's first
// request at once with a final entry of its own making, 100 frames past its
// executed frame; the honest members agree on another frame. Before the fix
// the joiner took the first final entry, ignored members 0 and 1 for ever
// and stopped as a minority, while they dropped it as silent. Now it waits
// for a majority of the members to announce one frame.
func TestJoinerWaitsForAgreeingMembers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		always  bool   // member 2 lies in every datagram to the joiner
		dropped uint64 // the Dropped of its lie
	}{{"once", false, 0}, {"always", true, 0}, {"always, the others dropped", true, 1<<0 | 1<<1}} {
		always := tc.always
		t.Run(tc.name, func(t *testing.T) {
			r := newAdmitRun(t)
			r.joinAt = 3 * time.Second
			injected := false
			lie := func(now time.Duration) wire.Admission {
				at := r.cores[hostileSlot].Executed() + 100
				return wire.Admission{Slot: openSlot, Flags: wire.AdmitFinal | wire.AdmitLate, Proposal: at, Frame: at, Dropped: tc.dropped}
			}
			r.rewrite = func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
				switch {
				case from == openSlot && to == hostileSlot && !injected:
					// Member 2 answers the first request before anyone.
					injected = true
					p := wire.Packet{Session: testSession, From: hostileSlot, Number: 1, Seal: -1, AckSeal: -1,
						Clock: wire.Ticks(now / (100 * time.Microsecond)), Admissions: []wire.Admission{lie(now)}}
					b, err := p.Append(nil)
					if err != nil {
						t.Fatal(err)
					}
					r.cores[openSlot].Receive(now, hostileSlot, b)
				case always && from == hostileSlot && to == openSlot:
					return rewriteAdmissions(t, data, lie(now))
				}
				return data
			}
			r.run(30 * time.Second)
			j, c := r.cores[openSlot], r.cores[0]
			var agreed bucket.Frame = -1
			for _, e := range r.events {
				if e.Type == lockstep.EventJoin {
					agreed = e.Frame
				}
			}
			if agreed < 0 || j.AdmittedAt() != agreed || j.Stopped() || !c.Listening(openSlot) || j.Executed() < c.Executed()-40 {
				t.Fatalf("joiner admitted at %d (members agreed on %d), stopped %v (%v), executed %d; member 0 executed %d, listens to it: %v",
					j.AdmittedAt(), agreed, j.Stopped(), j.Err(), j.Executed(), c.Executed(), c.Listening(openSlot))
			}
			if always && (j.Listening(hostileSlot) || c.Listening(hostileSlot)) {
				t.Errorf("member 2 kept announcing another frame, yet the joiner listens to it: %v, member 0: %v", j.Listening(hostileSlot), c.Listening(hostileSlot))
			}
		})
	}
}

// TestEarlyFinalEntryIsNoAgreement: while a real joiner's admission is
// being agreed, member 2 tells member 0 it is final two frames past member
// 0's executed frame, below any agreement over member 0's own proposal.
// Before the fix member 0 admitted the joiner there at once, frame 62, and
// its final entry made the others follow it, 38 frames short of every
// proposal: one member decided the admission frame. Now member 0 takes the
// frame the others agree on, the largest proposal (99).
func TestEarlyFinalEntryIsNoAgreement(t *testing.T) {
	r := newAdmitRun(t)
	r.joinAt = 3 * time.Second
	r.rewrite = func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
		if from != hostileSlot || to != 0 || now <= r.joinAt {
			return data
		}
		at := r.cores[0].Executed() + 2
		return rewriteAdmissions(t, data, wire.Admission{Slot: openSlot, Flags: wire.AdmitFinal | wire.AdmitLate, Proposal: at, Frame: at})
	}
	r.run(20 * time.Second)
	var frames []bucket.Frame
	for _, e := range r.events {
		if e.Type == lockstep.EventJoin {
			frames = append(frames, e.Frame)
		}
	}
	j := r.cores[openSlot]
	// The request came at frame 60: every proposal is 40 frames past the
	// frame it came at.
	least := bucket.Frame(r.joinAt/frameLen) + lockstep.DefaultAdmitMargin - 1
	if len(frames) != 2 || frames[0] != frames[1] || frames[0] < least || j.AdmittedAt() != frames[0] || j.Stopped() || r.stops != 0 {
		t.Fatalf("members 0 and 1 admitted the joiner at %v (proposals from %d), the joiner took %d (stopped %v: %v); %d honest members stopped", frames, least, j.AdmittedAt(), j.Stopped(), j.Err(), r.stops)
	}
}
