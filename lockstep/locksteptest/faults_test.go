package locksteptest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
	"github.com/phalanx-net/phalanx/rng"
)

// sectionSim hashes what it steps into four named sections; perturbing it
// changes one section, chosen when it is created.
type sectionSim struct {
	parts   [4]uint64
	perturb int
}

var sectionNames = [4]string{"map", "units", "rng", "players"}

func (s *sectionSim) Step(f bucket.Frame, cmds []bucket.Command) {
	h := lockstep.InputHash(f, cmds)
	for i := range s.parts {
		s.parts[i] = s.parts[i]*31 + h + uint64(i)
	}
}

func (s *sectionSim) Hash() uint64 {
	return s.parts[0] ^ s.parts[1]<<1 ^ s.parts[2]<<2 ^ s.parts[3]<<3
}

func (s *sectionSim) SectionHashes(dst []lockstep.Section) []lockstep.Section {
	for i, p := range s.parts {
		dst = append(dst, lockstep.Section{Name: sectionNames[i], Hash: p})
	}
	return dst
}

func runFaults(t *testing.T, profile string, members, frames int, seed uint64, faults []Fault, tamper func(time.Duration, bucket.Slot, bucket.Slot, []byte) []byte, opts ...func(*Config)) *Result {
	t.Helper()
	p, err := netsim.Named(profile)
	if err != nil {
		t.Fatal(err)
	}
	core := lockstep.Config{}
	if profile == "modem" {
		core.Budget = 3600
	}
	cfg := Config{
		Members: members, Frames: frames, Seed: seed, Profile: p, Core: core,
		NewSim:   func(bucket.Slot) lockstep.Simulation { return &sectionSim{} },
		Commands: commandsEvery(10),
		Faults:   faults,
		Perturb:  func(_ bucket.Slot, sim lockstep.Simulation) { s := sim.(*sectionSim); s.parts[s.perturb]++ },
		Tamper:   tamper,
	}
	for _, o := range opts {
		o(&cfg)
	}
	res, err := Run(cfg)
	if err != nil {
		t.Fatalf("%s seed %d: %v", profile, seed, err)
	}
	return res
}

// eventsOf returns, per surviving observer, its events of type typ about
// member m.
func eventsOf(res *Result, typ lockstep.EventType, m bucket.Slot) map[bucket.Slot][]lockstep.Event {
	out := map[bucket.Slot][]lockstep.Event{}
	for _, s := range res.Survivors {
		for _, e := range res.Members[s].Events {
			if e.Type == typ && e.Member == m {
				out[s] = append(out[s], e)
			}
		}
	}
	return out
}

// checkAgreedDrop checks that every survivor dropped member m exactly once,
// at the same frame with the same last frame, and that the survivors are
// identical.
func checkAgreedDrop(t *testing.T, res *Result, typ lockstep.EventType, m bucket.Slot) lockstep.Event {
	t.Helper()
	if !res.Identical {
		t.Fatalf("survivors not identical: groups %v, first divergent frame %d", res.Groups, res.Diverged)
	}
	evs := eventsOf(res, typ, m)
	var first lockstep.Event
	for i, s := range res.Survivors {
		if len(evs[s]) != 1 {
			t.Fatalf("survivor %d has %d %v events about member %d: %v", s, len(evs[s]), typ, m, res.Members[s].Events)
		}
		e := evs[s][0]
		if i == 0 {
			first = e
		} else if e.Frame != first.Frame || e.LastFrame != first.LastFrame {
			t.Fatalf("survivor %d: %v; survivor %d: %v", s, e, res.Survivors[0], first)
		}
	}
	if first.Frame != first.LastFrame+1 {
		t.Fatalf("drop takes effect at %d, last frame %d", first.Frame, first.LastFrame)
	}
	return first
}

func TestDropAgreement(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	for _, profile := range []string{"lan", "broadband", "bad"} {
		for seed := range uint64(seeds) {
			r := rng.New(seed, 77)
			members := 3 + r.IntN(4)
			victim := bucket.Slot(r.IntN(members))
			at := bucket.Frame(100 + r.IntN(300))
			t.Run(fmt.Sprintf("%s/seed=%d/kill %d@%d of %d", profile, seed, victim, at, members), func(t *testing.T) {
				res := runFaults(t, profile, members, int(at)+250, seed, []Fault{{Kind: FaultKill, Slot: victim, Frame: at}}, nil)
				e := checkAgreedDrop(t, res, lockstep.EventDrop, victim)
				// The member was killed at frame `at` by the wall clock; its
				// last counted frame cannot be far from it.
				if e.LastFrame < at-30 || e.LastFrame > at+30 {
					t.Errorf("last frame %d for a member killed at frame %d", e.LastFrame, at)
				}
			})
		}
	}
}

func TestTwoKillsWithinASecond(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			faults := []Fault{{Kind: FaultKill, Slot: 1, Frame: 200}, {Kind: FaultKill, Slot: 4, Frame: 200 + bucket.Frame(seed*9)}}
			res := runFaults(t, "bad", 6, 500, seed, faults, nil)
			checkAgreedDrop(t, res, lockstep.EventDrop, 1)
			checkAgreedDrop(t, res, lockstep.EventDrop, 4)
		})
	}
}

// TestSecondFailureDuringAgreement kills a member after the survivors have
// started agreeing on the first drop (the timeout has passed) but before
// they could finish.
func TestSecondFailureDuringAgreement(t *testing.T) {
	// The first drop is suspected 5 s (100 frames) after the kill; the second
	// member dies a few frames after that.
	faults := []Fault{{Kind: FaultKill, Slot: 0, Frame: 200}, {Kind: FaultKill, Slot: 2, Frame: 301}}
	res := runFaults(t, "broadband", 5, 600, 3, faults, nil)
	checkAgreedDrop(t, res, lockstep.EventDrop, 0)
	checkAgreedDrop(t, res, lockstep.EventDrop, 2)
}

func TestLeave(t *testing.T) {
	for _, profile := range []string{"lan", "bad"} {
		t.Run(profile, func(t *testing.T) {
			res := runFaults(t, profile, 4, 400, 1, []Fault{{Kind: FaultLeave, Slot: 2, Frame: 150}}, nil)
			e := checkAgreedDrop(t, res, lockstep.EventLeave, 2)
			if !res.Members[2].Left {
				t.Fatal("the leaver did not finish leaving")
			}
			// It left without waiting for a timeout.
			if d := eventsOf(res, lockstep.EventDrop, 2); len(d) > 0 {
				t.Fatalf("the leaver was dropped: %v", d)
			}
			if e.LastFrame < 150 || e.LastFrame > 150+lockstep.DefaultMaxDelay {
				t.Errorf("leave at frame %d announced at frame 150", e.LastFrame)
			}
		})
	}
}

func TestPartitionShorterThanTimeoutHeals(t *testing.T) {
	res := runFaults(t, "bad", 6, 400, 2, []Fault{{Kind: FaultPartition, Frame: 150, Duration: 2 * time.Second}}, nil)
	if !res.Identical || len(res.Survivors) != 6 {
		t.Fatalf("identical=%v survivors=%v", res.Identical, res.Survivors)
	}
	for _, m := range res.Members {
		if len(m.Events) > 0 {
			t.Fatalf("member %d: events %v", m.Slot, m.Events)
		}
		if m.Stats.Stalls == 0 {
			t.Errorf("member %d never stalled during a 2 s partition", m.Slot)
		}
	}
}

// After a partition longer than the drop timeout only one side plays on:
// with six members split three and three, the side with slot 0 (a tie goes
// to the side with the lowest slot); the other side stops as a minority.
func TestPartitionLongerThanTimeoutSplits(t *testing.T) {
	res := runFaults(t, "broadband", 6, 500, 2, []Fault{{Kind: FaultPartition, Frame: 150, Duration: 8 * time.Second}}, nil)
	if len(res.Groups) != 1 || !slices.Equal(res.Survivors, []bucket.Slot{0, 1, 2}) || !res.Identical {
		t.Fatalf("survivors %v in groups %v, want 0, 1 and 2 identical", res.Survivors, res.Groups)
	}
	for _, m := range []bucket.Slot{3, 4, 5} {
		checkAgreedDrop(t, res, lockstep.EventDrop, m)
		if !errors.Is(res.Members[m].Stopped, lockstep.ErrStopped) {
			t.Fatalf("member %d: stopped %v, want ErrStopped", m, res.Members[m].Stopped)
		}
		evs := res.Members[m].Events
		if len(evs) == 0 || evs[len(evs)-1].Type != lockstep.EventStop || evs[len(evs)-1].Reason != lockstep.ReasonMinority {
			t.Fatalf("member %d: events %v, want a stop for minority last", m, evs)
		}
	}
}

func TestDesyncFoundByEveryMember(t *testing.T) {
	for seed := range uint64(4) {
		r := rng.New(seed, 99)
		members := 3 + r.IntN(4)
		odd := bucket.Slot(r.IntN(members))
		at := bucket.Frame(50 + r.IntN(250))
		section := r.IntN(4)
		t.Run(fmt.Sprintf("seed=%d/perturb %d@%d section %s", seed, odd, at, sectionNames[section]), func(t *testing.T) {
			p, _ := netsim.Named("broadband")
			res, err := Run(Config{
				Members: members, Frames: int(at) + 150, Seed: seed, Profile: p,
				NewSim: func(s bucket.Slot) lockstep.Simulation {
					return &sectionSim{perturb: section}
				},
				Commands: commandsEvery(10),
				Faults:   []Fault{{Kind: FaultPerturb, Slot: odd, Frame: at}},
				Perturb:  func(_ bucket.Slot, sim lockstep.Simulation) { s := sim.(*sectionSim); s.parts[s.perturb]++ },
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Identical || res.Diverged != at {
				t.Fatalf("ground truth: identical=%v diverged=%d, want false, %d", res.Identical, res.Diverged, at)
			}
			for _, m := range res.Members {
				var got []lockstep.Event
				for _, e := range m.Events {
					if e.Type == lockstep.EventDesync {
						got = append(got, e)
					}
				}
				if len(got) != 1 {
					t.Fatalf("member %d: %d desync events: %v", m.Slot, len(got), m.Events)
				}
				e := got[0]
				if e.Frame != at || e.Member != odd || e.Section != sectionNames[section] {
					t.Fatalf("member %d reports %v; want frame %d, member %d, section %q", m.Slot, e, at, odd, sectionNames[section])
				}
				// Both sides' section hashes, exchanged: they differ first
				// in the section named.
				if len(e.Ours) != len(sectionNames) || len(e.Theirs) != len(e.Ours) || e.With == m.Slot {
					t.Fatalf("member %d: sections ours %v theirs %v, compared with %d", m.Slot, e.Ours, e.Theirs, e.With)
				}
				for k := range e.Ours {
					if e.Ours[k].Name != e.Theirs[k].Name || (e.Ours[k].Hash != e.Theirs[k].Hash) != (k == section) {
						t.Fatalf("member %d: section %d: ours %v, theirs %v; want only %q to differ", m.Slot, k, e.Ours[k], e.Theirs[k], sectionNames[section])
					}
				}
			}
		})
	}
}

// lie returns a Tamper function that rewrites every datagram from liar to
// victim after frame `from` (by the wall clock) with rewrite.
func lie(liar, victim bucket.Slot, after time.Duration, rewrite func(p *wire.Packet)) func(time.Duration, bucket.Slot, bucket.Slot, []byte) []byte {
	return func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
		if from != liar || to != victim || now < after {
			return data
		}
		var p wire.Packet
		if err := wire.Parse(data, &p); err != nil {
			panic(err)
		}
		rewrite(&p)
		out, err := p.Append(nil)
		if err != nil {
			panic(err)
		}
		return out
	}
}

func TestProtocolViolationsDropTheLiar(t *testing.T) {
	const liar, victim = 2, 0
	after := 6 * time.Second
	tests := []struct {
		rule    string
		rewrite func(p *wire.Packet)
	}{
		{"window", func(p *wire.Packet) { p.Seal += 5000 }},
		{"commands", func(p *wire.Packet) {
			// One more command, under the seal it already promised.
			p.Commands = append(p.Commands, wire.Command{Frame: max(p.Seal-5, 0), Payload: []byte("late")})
			for i := range p.Commands {
				p.Commands[i].Frame = min(p.Commands[i].Frame, max(p.Seal-5, 0))
			}
			p.Next++
		}},
		{"seal", func(p *wire.Packet) {
			// Seals that go backwards in newer datagrams.
			if p.Seal > 40 {
				p.Seal -= 40
				for i := range p.Commands {
					p.Commands[i].Frame = min(p.Commands[i].Frame, p.Seal+1)
				}
			}
		}},
		{"ack", func(p *wire.Packet) { p.Ack += 1000 }},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			res := runFaults(t, "broadband", 4, 300, 5, nil, lie(liar, victim, after, tt.rewrite))
			// The victim reports the liar and the rule.
			var reported bool
			for _, e := range res.Members[victim].Events {
				if e.Type == lockstep.EventViolation && e.Member == liar {
					reported = true
					if e.Detail == "" {
						t.Errorf("violation without detail: %v", e)
					}
					t.Logf("victim reports: %v", e)
				}
			}
			if !reported {
				t.Fatalf("victim events %v: no violation of member %d", res.Members[victim].Events, liar)
			}
			// Everyone but the liar drops it by agreement.
			survivors := &Result{Identical: true, Survivors: []bucket.Slot{0, 1, 3}, Members: res.Members, Groups: res.Groups}
			checkAgreedDrop(t, survivors, lockstep.EventDrop, liar)
			for _, g := range res.Groups {
				if len(g) == 3 && g[0] == 0 && g[1] == 1 && g[2] == 3 {
					return
				}
			}
			t.Fatalf("groups %v: the honest members are not identical", res.Groups)
		})
	}
}

// A member that tells one member a different command than it tells the
// others is found by the input hashes: the member it lied to reports that
// its own inputs diverged from everyone else's. The run is unsigned: a liar
// holds its own key and signs what it tells each member, so its statements
// verify and only the input hashes can tell (TestUnsignedLieIsASignatureViolation
// shows a lie its signature does not cover).
func TestEquivocationIsAnInputDesync(t *testing.T) {
	const liar, victim = 2, 0
	res := runFaults(t, "broadband", 4, 300, 5, nil, lie(liar, victim, 6*time.Second, func(p *wire.Packet) {
		for i := range p.Commands {
			p.Commands[i].Payload = []byte("what only member 0 hears")
		}
	}), func(c *Config) { c.Unsigned = true })
	for _, m := range res.Members {
		var got []lockstep.Event
		for _, e := range m.Events {
			if e.Type == lockstep.EventDesync {
				got = append(got, e)
			}
		}
		if len(got) != 1 || got[0].Member != victim {
			t.Fatalf("member %d: desync events %v, want one naming member %d", m.Slot, got, victim)
		}
		if want := "inputs diverged"; len(got[0].Detail) < len(want) || got[0].Detail[:len(want)] != want {
			t.Errorf("member %d: %q, want inputs diverged", m.Slot, got[0].Detail)
		}
	}
}

// A liar that alters what it tells one member without signing the
// altered stream fails its own statement there: that member names it in a
// signature violation and every survivor drops it for a violation. The
// member told still holds the altered command (it came before the
// statement that exposed it), so its inputs diverge from the others' and
// the desync detection names it: the lie is caught, not undone.
func TestUnsignedLieIsASignatureViolation(t *testing.T) {
	const liar, victim = 2, 0
	res := runFaults(t, "broadband", 4, 300, 5, nil, lie(liar, victim, 5*time.Second, func(p *wire.Packet) {
		for i := range p.Commands {
			p.Commands[i].Payload = []byte("what only member 0 hears")
		}
	}))
	if fmt.Sprint(res.Survivors) != "[0 1 3]" {
		t.Fatalf("survivors %v", res.Survivors)
	}
	var named bool
	for _, e := range res.Members[victim].Events {
		if e.Type == lockstep.EventViolation && e.Member == liar && strings.HasPrefix(e.Detail, "signature") {
			named = true
		}
	}
	if !named {
		t.Fatalf("member %d: events %v, want a signature violation of member %d", victim, res.Members[victim].Events, liar)
	}
	for _, s := range res.Survivors {
		drops := eventsOf(res, lockstep.EventDrop, liar)[s]
		desyncs := eventsOf(res, lockstep.EventDesync, victim)[s]
		if len(drops) != 1 || drops[0].Reason != lockstep.ReasonViolation || len(desyncs) != 1 {
			t.Errorf("member %d: events %v, want a drop of member %d for a violation and a desync of member %d", s, res.Members[s].Events, liar, victim)
		}
	}
	if res.Members[1].FinalHash != res.Members[3].FinalHash {
		t.Errorf("members 1 and 3 differ")
	}
}

// TestForgedForwardIsNamed runs the harness's signing members over the
// bad profile: member 4's datagrams reach only member 0 for its last
// second, then it dies; member 0 forwards its last commands with one byte
// of each altered. Members 1 to 3 name member 0 a forger of member 4, drop
// it for a violation, and finish identical.
func TestForgedForwardIsNamed(t *testing.T) {
	const dead, forger = 4, 0
	cut := 150 * 50 * time.Millisecond
	forged := false
	tamper := func(now time.Duration, from, to bucket.Slot, data []byte) []byte {
		if from == dead && to != forger && now >= cut-time.Second {
			return nil
		}
		if from != forger {
			return data
		}
		var p wire.Packet
		if wire.Parse(data, &p) != nil || !p.HasRelay || p.Relay.Member != dead || len(p.Relay.Commands) == 0 {
			return data
		}
		for i, c := range p.Relay.Commands {
			if len(c.Payload) > 0 {
				b := slices.Clone(c.Payload)
				b[0] ^= 0x80
				p.Relay.Commands[i].Payload = b
			}
		}
		forged = true
		out, err := p.Append(nil)
		if err != nil {
			panic(err)
		}
		return out
	}
	res := runFaults(t, "bad", 5, 400, 11, []Fault{{Kind: FaultKill, Slot: dead, Frame: 150}}, tamper)
	if !forged {
		t.Fatal("member 0 forwarded no command of member 4")
	}
	if fmt.Sprint(res.Survivors) != "[1 2 3]" || !res.Identical {
		t.Fatalf("survivors %v identical %v", res.Survivors, res.Identical)
	}
	for _, s := range res.Survivors {
		var named bool
		for _, e := range res.Members[s].Events {
			if e.Type == lockstep.EventViolation && e.Member == forger && strings.HasPrefix(e.Detail, "forgery") && strings.Contains(e.Detail, "member 4") {
				named = true
			}
		}
		if !named {
			t.Errorf("member %d did not name member %d a forger of member %d: %v", s, forger, dead, res.Members[s].Events)
		}
	}
	e := checkAgreedDrop(t, res, lockstep.EventDrop, forger)
	if e.Reason != lockstep.ReasonViolation {
		t.Errorf("%v, want a drop for violation", e)
	}
	checkAgreedDrop(t, res, lockstep.EventDrop, dead)
}
