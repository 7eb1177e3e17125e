package lockstep_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
)

const (
	testSession = 0x5eed
	frameLen    = lockstep.DefaultFrame
)

func memberConfig(members int, self bucket.Slot) lockstep.Config {
	return lockstep.Config{Members: members, Self: self, Session: testSession}
}

func newCore(t testing.TB, cfg lockstep.Config, now time.Duration) *lockstep.Core {
	t.Helper()
	c, err := lockstep.NewCore(cfg, now)
	if err != nil {
		t.Fatalf("NewCore: %v", err)
	}
	return c
}

// ---------------------------------------------------------------------------
// 1. Configuration.

func TestNewCoreRejectsInvalidConfig(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*lockstep.Config)
	}{
		{"no members", func(c *lockstep.Config) { c.Members = 0 }},
		{"negative members", func(c *lockstep.Config) { c.Members = -1 }},
		{"65 members", func(c *lockstep.Config) { c.Members = bucket.MaxMembers + 1 }},
		{"self equal to members", func(c *lockstep.Config) { c.Self = 3 }},
		{"self far out of range", func(c *lockstep.Config) { c.Self = 255 }},
		{"frame just under 1ms", func(c *lockstep.Config) { c.Frame = time.Millisecond - 1 }},
		{"negative frame", func(c *lockstep.Config) { c.Frame = -time.Second }},
		{"negative min delay", func(c *lockstep.Config) { c.MinDelay = -1 }},
		{"max delay under min delay", func(c *lockstep.Config) { c.MinDelay, c.MaxDelay = 5, 4 }},
		{"negative max delay", func(c *lockstep.Config) { c.MaxDelay = -1 }},
		{"negative initial delay", func(c *lockstep.Config) { c.InitialDelay = -1 }},
		{"negative fixed delay", func(c *lockstep.Config) { c.Policy = lockstep.Fixed{Frames: -1} }},
		{"zero fixed delay", func(c *lockstep.Config) { c.Policy = lockstep.Fixed{} }},
		{"nil fixed pointer", func(c *lockstep.Config) { c.Policy = (*lockstep.Fixed)(nil) }},
		{"no turns ahead", func(c *lockstep.Config) { c.Policy = lockstep.Turns{Length: 4} }},
		{"turns past max delay", func(c *lockstep.Config) { c.Policy = lockstep.Turns{Length: 31, Ahead: 2} }},
		{"datagram size 199", func(c *lockstep.Config) { c.MaxDatagramSize = 199 }},
		{"datagram size above the wire maximum", func(c *lockstep.Config) { c.MaxDatagramSize = wire.MaxDatagramSize + 1 }},
		{"negative datagram size", func(c *lockstep.Config) { c.MaxDatagramSize = -1 }},
		{"negative command size", func(c *lockstep.Config) { c.MaxCommandSize = -1 }},
		{"command too large for the default datagram", func(c *lockstep.Config) { c.MaxCommandSize = wire.MaxDatagramSize - 99 }},
		{"command too large for a small datagram", func(c *lockstep.Config) { c.MaxDatagramSize, c.MaxCommandSize = 300, 201 }},
		{"command larger than any datagram", func(c *lockstep.Config) { c.MaxCommandSize = 4096 }},
		{"window under twice the default max delay", func(c *lockstep.Config) { c.Window = 2*lockstep.DefaultMaxDelay - 1 }},
		{"window under twice a set max delay", func(c *lockstep.Config) { c.MaxDelay, c.Window = 10, 19 }},
		{"negative window", func(c *lockstep.Config) { c.Window = -1 }},
		{"negative min interval", func(c *lockstep.Config) { c.MinInterval = -1 }},
		{"max interval under min interval", func(c *lockstep.Config) { c.MinInterval, c.MaxInterval = 100*time.Millisecond, 99*time.Millisecond }},
		{"negative budget", func(c *lockstep.Config) { c.Budget = -1 }},
		{"budget under two full datagrams a second", func(c *lockstep.Config) { c.Budget = 2*(wire.MaxDatagramSize+wire.Overhead) - 1 }},
		{"budget under two small datagrams a second", func(c *lockstep.Config) { c.MaxDatagramSize, c.Overhead, c.Budget = 300, 20, 639 }},
		{"negative overhead", func(c *lockstep.Config) { c.Overhead = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memberConfig(3, 1)
			tt.modify(&cfg)
			c, err := lockstep.NewCore(cfg, 0)
			if !errors.Is(err, lockstep.ErrInvalidConfig) {
				t.Fatalf("NewCore(%+v) = %v, want an error wrapping ErrInvalidConfig", cfg, err)
			}
			if c != nil {
				t.Errorf("NewCore returned a core with error %v", err)
			}
		})
	}
}

func TestNewCoreAcceptsBoundaries(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*lockstep.Config)
	}{
		{"one member", func(c *lockstep.Config) { c.Members, c.Self = 1, 0 }},
		{"64 members, last slot", func(c *lockstep.Config) { c.Members, c.Self = bucket.MaxMembers, bucket.MaxMembers-1 }},
		{"1ms frame", func(c *lockstep.Config) { c.Frame = time.Millisecond }},
		{"delay bounds equal", func(c *lockstep.Config) { c.MinDelay, c.MaxDelay = 3, 3 }},
		{"smallest datagram, largest command for it", func(c *lockstep.Config) { c.MaxDatagramSize, c.MaxCommandSize = 200, 100 }},
		{"largest command for the default datagram", func(c *lockstep.Config) { c.MaxCommandSize = wire.MaxDatagramSize - 100 }},
		{"window exactly twice the max delay", func(c *lockstep.Config) { c.Window = 2 * lockstep.DefaultMaxDelay; c.DropTimeout = time.Second }},
		{"window just past drop timeout and max delay", func(c *lockstep.Config) { c.Window = 100 + lockstep.DefaultMaxDelay + 1 }},
		{"budget exactly two full datagrams a second", func(c *lockstep.Config) { c.Budget = 2 * (wire.MaxDatagramSize + wire.Overhead) }},
		{"min interval equal to max interval", func(c *lockstep.Config) { c.MinInterval, c.MaxInterval = 40*time.Millisecond, 40*time.Millisecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memberConfig(3, 1)
			tt.modify(&cfg)
			if _, err := lockstep.NewCore(cfg, 0); err != nil {
				t.Fatalf("NewCore(%+v): %v", cfg, err)
			}
		})
	}
}

func TestNewCoreAppliesDefaults(t *testing.T) {
	c := newCore(t, memberConfig(2, 1), 0)
	got := c.Config()
	if got.Logger == nil {
		t.Errorf("Config().Logger is nil, want a discarding logger")
	}
	got.Logger = nil
	want := lockstep.Config{
		Members:          2,
		Self:             1,
		Session:          testSession,
		Frame:            lockstep.DefaultFrame,
		InitialDelay:     lockstep.DefaultInitialDelay,
		MinDelay:         1,
		MaxDelay:         lockstep.DefaultMaxDelay,
		Policy:           lockstep.Adaptive{},
		MaxCommandSize:   lockstep.DefaultMaxCommandSize,
		MaxFrameCommands: lockstep.DefaultMaxFrameCommands,
		MaxFrameBytes:    lockstep.DefaultMaxFrameBytes,
		MaxDatagramSize:  wire.MaxDatagramSize,
		Window:           lockstep.DefaultWindow,
		MinInterval:      lockstep.DefaultFrame,
		SealRepeat:       lockstep.DefaultFrame / 10,
		MaxInterval:      lockstep.DefaultMaxInterval,
		Margin:           lockstep.DefaultMargin,
		StartLead:        lockstep.DefaultStartLead,
		Overhead:         wire.Overhead,
		DropTimeout:      lockstep.DefaultDropTimeout,
		HashInterval:     lockstep.DefaultHashInterval,
		HashHistory:      lockstep.DefaultHashHistory,
		SignInterval:     lockstep.DefaultSignInterval,
		AdmitMargin:      lockstep.DefaultAdmitMargin,
	}
	if got != want {
		t.Errorf("Config() = %+v\nwant       %+v", got, want)
	}
	if c.Self() != 1 || c.Executed() != -1 {
		t.Errorf("Self() = %d, Executed() = %d; want 1, -1", c.Self(), c.Executed())
	}
	// Before any measurement the lead is the start lead: 10 frames, a
	// delay of 11.
	if d, want := c.Stats().Delay, int(lockstep.DefaultStartLead/lockstep.DefaultFrame)+1; d != want {
		t.Errorf("Stats().Delay = %d before any measurement, want %d", d, want)
	}

	// Set fields are kept; the min interval and the seal repeat follow the
	// frame.
	c = newCore(t, lockstep.Config{Members: 2, Self: 0, Frame: 20 * time.Millisecond, Window: 500, Budget: 5000}, 0)
	got = c.Config()
	if got.Frame != 20*time.Millisecond || got.MinInterval != 20*time.Millisecond || got.SealRepeat != 2*time.Millisecond || got.Window != 500 || got.Budget != 5000 {
		t.Errorf("Config() = %+v, want frame 20ms, min interval 20ms, seal repeat 2ms, window 500, budget 5000", got)
	}
}

// An InitialDelay beyond the window makes every member's first seals (the
// shared initial seal, InitialDelay-1) fall outside every receiver's window,
// so honest members report each other as violating the protocol.
func TestNewCoreRejectsInitialDelayBeyondWindow(t *testing.T) {
	cfg := memberConfig(2, 0)
	cfg.InitialDelay = 2 * lockstep.DefaultWindow
	if _, err := lockstep.NewCore(cfg, 0); errors.Is(err, lockstep.ErrInvalidConfig) {
		return
	}
	// Accepted: then honest members must not report each other.
	n := newTestNet(t, 2, 1, func(c *lockstep.Config) { c.InitialDelay = 2 * lockstep.DefaultWindow })
	n.runUntil(time.Second)
	if len(n.events[0])+len(n.events[1]) > 0 {
		t.Fatalf("NewCore accepts InitialDelay %d > Window %d, then honest members report each other: %v",
			cfg.InitialDelay, lockstep.DefaultWindow, n.events[0][0])
	}
}

// Fixed promises to stamp every command exactly that many frames ahead;
// a value above MaxDelay must either be refused or honoured.
func TestSubmitFixedDelayAboveMaxDelay(t *testing.T) {
	cfg := memberConfig(2, 0)
	fixed := lockstep.DefaultMaxDelay + 40
	cfg.Policy = lockstep.Fixed{Frames: fixed}
	c, err := lockstep.NewCore(cfg, 0)
	if errors.Is(err, lockstep.ErrInvalidConfig) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	now := 10 * frameLen
	f, err := c.Submit(now, []byte{1})
	if err != nil {
		t.Fatal(err)
	}
	if want := bucket.Frame(10 + fixed); f != want {
		t.Fatalf("Fixed{%d} (> MaxDelay %d) accepted but Submit at frame 10 stamped frame %d, want %d: the delay is silently clamped to MaxDelay",
			fixed, lockstep.DefaultMaxDelay, f, want)
	}
}

// ---------------------------------------------------------------------------
// 2. Submit.

func TestSubmitStampsFrame(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*lockstep.Config)
		create time.Duration // NewCore's now
		at     time.Duration // Submit's now
		want   bucket.Frame
	}{
		{"at creation", nil, 0, 0, 4},
		{"before start", func(c *lockstep.Config) { c.Start = time.Second }, 0, 0, 4},
		{"just before frame 2", nil, 0, 2*frameLen - 1, 5},
		{"at frame 2", nil, 0, 2 * frameLen, 5}, // exactly the lead (3 frames) ahead
		{"inside frame 3", nil, 0, 3*frameLen + time.Millisecond, 7},
		{"initial delay 8", func(c *lockstep.Config) { c.InitialDelay = 8 }, 0, 0, 8},
		{"initial delay 8 at frame 10", func(c *lockstep.Config) { c.InitialDelay = 8 }, 0, 10 * frameLen, 17},
		{"fixed delay 6", func(c *lockstep.Config) { c.Policy = lockstep.Fixed{Frames: 6} }, 0, 0, 6},
		{"fixed delay 6 at frame 10", func(c *lockstep.Config) { c.Policy = lockstep.Fixed{Frames: 6} }, 0, 10 * frameLen, 16},
		{"fixed delay 2 held by the initial seal", func(c *lockstep.Config) { c.Policy = lockstep.Fixed{Frames: 2} }, 0, 0, 4},
		{"fixed delay 2 at frame 10", func(c *lockstep.Config) { c.Policy = lockstep.Fixed{Frames: 2} }, 0, 10 * frameLen, 12},
		{"20ms frames", func(c *lockstep.Config) { c.Frame = 20 * time.Millisecond }, 0, 100 * time.Millisecond, 8},
		{"late epoch", func(c *lockstep.Config) { c.Start = 5 * time.Second }, 5 * time.Second, 5*time.Second + 60*time.Millisecond, 5},
		{"time going back is ignored", nil, 3 * frameLen, frameLen, 6},
		{"the default start lead", func(c *lockstep.Config) { c.StartLead = 0 }, 0, 0, 10},
		{"a start lead", func(c *lockstep.Config) { c.StartLead = 4 * frameLen }, 0, frameLen, 5},
		{"a start lead below the initial delay's", func(c *lockstep.Config) { c.StartLead = frameLen }, 0, 0, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memberConfig(2, 0)
			cfg.StartLead = -1 // the initial delay's lead, unless a case sets one
			if tt.modify != nil {
				tt.modify(&cfg)
			}
			c := newCore(t, cfg, tt.create)
			c.Ready(tt.create)
			f, err := c.Submit(tt.at, []byte("cmd"))
			if err != nil {
				t.Fatal(err)
			}
			if f != tt.want {
				t.Errorf("Submit stamped frame %d, want %d", f, tt.want)
			}
			// A second command at the same moment gets the same frame.
			if f2, err := c.Submit(tt.at, nil); err != nil || f2 != f {
				t.Errorf("second Submit = %d, %v; want %d", f2, err, f)
			}
			if s := c.Stats().Submitted; s != 2 {
				t.Errorf("Stats().Submitted = %d, want 2", s)
			}
		})
	}
}

// sentCommands returns the commands of every datagram in rd, decoded.
func sentCommands(t *testing.T, rd lockstep.Ready) []wire.Command {
	t.Helper()
	var cmds []wire.Command
	for _, d := range rd.Datagrams {
		var p wire.Packet
		if err := wire.Parse(d.Data, &p); err != nil {
			t.Fatalf("datagram does not parse: %v", err)
		}
		cmds = append(cmds, p.Commands...)
	}
	return cmds
}

func TestSubmitCopiesPayload(t *testing.T) {
	c := newCore(t, memberConfig(2, 0), 0)
	buf := []byte("attack")
	if _, err := c.Submit(0, buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "retrea")
	rd := c.Ready(0)
	cmds := sentCommands(t, rd)
	if len(cmds) != 1 || string(cmds[0].Payload) != "attack" {
		t.Fatalf("sent commands %v, want one \"attack\"", cmds)
	}
}

func TestSubmitRefusesLargeCommand(t *testing.T) {
	cfg := memberConfig(2, 0)
	cfg.MaxCommandSize = 100
	c := newCore(t, cfg, 0)
	if _, err := c.Submit(0, make([]byte, 101)); !errors.Is(err, lockstep.ErrCommandTooLarge) {
		t.Fatalf("Submit(101 bytes) = %v, want ErrCommandTooLarge", err)
	}
	if s := c.Stats().Submitted; s != 0 {
		t.Errorf("Stats().Submitted = %d after a refused command", s)
	}
	if cmds := sentCommands(t, c.Ready(0)); len(cmds) != 0 {
		t.Errorf("a refused command was sent: %v", cmds)
	}
	if _, err := c.Submit(0, make([]byte, 100)); err != nil {
		t.Errorf("Submit(100 bytes) = %v, want nil", err)
	}
	if cmds := sentCommands(t, c.Ready(time.Millisecond)); len(cmds) != 1 {
		t.Errorf("sent %d commands, want 1", len(cmds))
	}
}

func TestSubmitAfterClose(t *testing.T) {
	c := newCore(t, memberConfig(2, 0), 0)
	c.Close()
	if _, err := c.Submit(0, []byte{1}); !errors.Is(err, lockstep.ErrClosed) {
		t.Fatalf("Submit after Close = %v, want ErrClosed", err)
	}
	if s := c.Stats().Submitted; s != 0 {
		t.Errorf("Stats().Submitted = %d after Close", s)
	}
}

// Over a run long enough for the delay to shrink from its initial value,
// stamped frames never decrease and never fall under a seal already sent
// (both checked in testNet.submit), and each is max(clock + delay, seal + 1).
func TestSubmitFramesNeverDecrease(t *testing.T) {
	t.Parallel()
	n := newTestNet(t, 2, 7, nil)
	n.planRandom([]bucket.Slot{0, 1}, 0, 6*time.Second, 9*time.Millisecond)
	var delays []int
	n.afterReady = func(i int, rd lockstep.Ready) {
		if i == 0 {
			if d := n.cores[0].Stats().Delay; len(delays) == 0 || delays[len(delays)-1] != d {
				delays = append(delays, d)
			}
		}
	}
	n.runUntil(6 * time.Second)
	n.runUntilExecuted(slices.Max(n.lastStamp), 10*time.Second)
	n.checkAllExecuted()
	if len(delays) < 2 || delays[len(delays)-1] >= lockstep.DefaultInitialDelay {
		t.Errorf("delay went %v: the run never shrank it, so the seal bound was not exercised", delays)
	}
}

// ---------------------------------------------------------------------------
// 3. Receive on bad input.

// realDatagrams returns datagrams member 1 of two sent over a short run with
// commands, as received by member 0.
func realDatagrams(t *testing.T) [][]byte {
	n := newTestNet(t, 2, 3, nil)
	n.planRandom([]bucket.Slot{1}, 0, time.Second, 20*time.Millisecond)
	var out [][]byte
	n.afterReady = func(i int, rd lockstep.Ready) {
		for _, d := range rd.Datagrams {
			if i == 1 {
				out = append(out, bytes.Clone(d.Data))
			}
		}
	}
	n.runUntil(time.Second)
	if len(out) < 10 {
		t.Fatalf("only %d datagrams", len(out))
	}
	return out
}

func TestReceiveGarbage(t *testing.T) {
	t.Parallel()
	real := realDatagrams(t)
	rng := rand.New(rand.NewPCG(11, 12))
	var garbage [][]byte
	for range 3000 {
		b := make([]byte, rng.IntN(1300))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if len(b) > 0 && rng.IntN(2) == 0 {
			b[0] = byte(wire.KindLockstep) // get past the first check more often
		}
		garbage = append(garbage, b)
	}
	for _, d := range real {
		for cut := range len(d) { // every strict prefix
			garbage = append(garbage, d[:cut])
		}
		garbage = append(garbage, append(bytes.Clone(d), 0)) // a trailing byte
	}
	garbage = append(garbage, make([]byte, wire.MaxDatagramSize+1))

	// The run lasts longer than the drop timeout; silence is not the point.
	cfg := memberConfig(2, 0)
	cfg.DropTimeout = time.Hour
	victim := newCore(t, cfg, 0)
	control := newCore(t, cfg, 0)
	for k, g := range garbage {
		now := time.Duration(k) * time.Millisecond
		victim.Receive(now, 1, g)
		if k%10 == 0 {
			a, b := victim.Ready(now), control.Ready(now)
			if len(a.Buckets) != len(b.Buckets) || len(a.Events) != 0 {
				t.Fatalf("after garbage %d: %d buckets and events %v, control stepped %d buckets", k, len(a.Buckets), a.Events, len(b.Buckets))
			}
			for i := range a.Buckets {
				if a.Buckets[i].Frame != b.Buckets[i].Frame || len(a.Buckets[i].Commands) != 0 {
					t.Fatalf("after garbage %d: bucket %d differs from the control's", k, a.Buckets[i].Frame)
				}
			}
		}
	}
	st := victim.Stats()
	if st.Malformed+st.Foreign != int64(len(garbage)) || st.Malformed < int64(len(garbage))*9/10 {
		t.Errorf("Stats: %d malformed, %d foreign of %d garbage datagrams", st.Malformed, st.Foreign, len(garbage))
	}
	if st.DatagramsReceived != int64(len(garbage)) || st.Violations != 0 {
		t.Errorf("Stats: %d received, %d violations; want %d, 0", st.DatagramsReceived, st.Violations, len(garbage))
	}
	if victim.Executed() != control.Executed() {
		t.Errorf("Executed() = %d, control %d", victim.Executed(), control.Executed())
	}
}

// TestReceiveMutatedDatagrams flips bytes of real datagrams: some still
// decode (and may be violations), none may panic.
func TestReceiveMutatedDatagrams(t *testing.T) {
	real := realDatagrams(t)
	rng := rand.New(rand.NewPCG(21, 22))
	c := newCore(t, memberConfig(2, 0), 0)
	for k := range 4000 {
		d := bytes.Clone(real[rng.IntN(len(real))])
		for range 1 + rng.IntN(3) {
			d[rng.IntN(len(d))] ^= byte(1 + rng.IntN(255))
		}
		now := time.Duration(k) * time.Millisecond
		c.Receive(now, 1, d)
		c.Ready(now)
	}
	if c.Stats().Malformed == 0 {
		t.Errorf("no mutated datagram counted as malformed")
	}
}

func TestReceiveForeign(t *testing.T) {
	good := func(session uint16, from bucket.Slot) []byte {
		p := wire.Packet{Session: session, From: from, Seal: 20, AckSeal: -1}
		b, err := p.Append(nil)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		from bucket.Slot // as the transport says
		data []byte
	}{
		{"other session", 1, good(testSession+1, 1)},
		{"claims another sender", 1, good(testSession, 2)},
		{"claims to be the receiver", 1, good(testSession, 0)},
		{"from self", 0, good(testSession, 0)},
		{"from out of range", 3, good(testSession, 3)},
		{"from far out of range", 200, good(testSession, 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCore(t, memberConfig(3, 0), 0)
			c.Receive(time.Millisecond, tt.from, tt.data)
			st := c.Stats()
			if st.Foreign != 1 || st.Malformed != 0 || st.DatagramsReceived != 1 {
				t.Errorf("Stats: foreign %d, malformed %d, received %d; want 1, 0, 1", st.Foreign, st.Malformed, st.DatagramsReceived)
			}
			for _, ps := range c.AppendPeerStats(nil) {
				if ps.Seal != lockstep.DefaultInitialDelay-1 || ps.LastHeard != 0 {
					t.Errorf("member %d: seal %d, last heard %v after a foreign datagram", ps.Slot, ps.Seal, ps.LastHeard)
				}
			}
		})
	}
	// The same datagram from the right sender is accepted.
	c := newCore(t, memberConfig(3, 0), 0)
	c.Receive(time.Millisecond, 1, good(testSession, 1))
	if st := c.Stats(); st.Foreign != 0 || st.Malformed != 0 {
		t.Errorf("good datagram counted: %+v", st)
	}
	if ps := c.AppendPeerStats(nil); ps[0].Seal != 20 {
		t.Errorf("member 1's seal %d after its datagram, want 20", ps[0].Seal)
	}
}

func TestReceiveAfterClose(t *testing.T) {
	c := newCore(t, memberConfig(2, 0), 0)
	c.Close()
	p := wire.Packet{Session: testSession, From: 1, Seal: 20, AckSeal: -1, Next: 1, Commands: []wire.Command{{Frame: 10}}}
	b, _ := p.Append(nil)
	c.Receive(time.Millisecond, 1, b)
	if ps := c.AppendPeerStats(nil); ps[0].Seal != lockstep.DefaultInitialDelay-1 {
		t.Errorf("closed core took seal %d", ps[0].Seal)
	}
}

// ---------------------------------------------------------------------------
// 4, 5. Identical buckets over the tiny network.

func TestCoresStepIdenticalBuckets(t *testing.T) {
	tests := []struct {
		name    string
		members int
		loss    float64
		dup     bool
		reverse bool
	}{
		{"two perfect", 2, 0, false, false},
		{"three perfect", 3, 0, false, false},
		{"two duplicated", 2, 0, true, false},
		{"three duplicated", 3, 0, true, false},
		{"three reversed", 3, 0, false, true},
		{"three duplicated and reversed", 3, 0, true, true},
		{"two 30% loss", 2, 0.3, false, false},
		{"three 30% loss", 3, 0.3, false, false},
		{"three 30% loss duplicated and reversed", 3, 0.3, true, true},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := newTestNet(t, tt.members, uint64(100+k), nil)
			n.loss, n.dup, n.reverse = tt.loss, tt.dup, tt.reverse
			slots := make([]bucket.Slot, tt.members)
			for i := range slots {
				slots[i] = bucket.Slot(i)
			}
			const run = 300 * frameLen
			n.planRandom(slots, 0, run, 80*time.Millisecond)
			n.runUntil(run)
			n.runUntilExecuted(slices.Max(n.lastStamp)+5, run+20*time.Second)
			n.checkAllExecuted()
			if len(n.submitted) < 300 {
				t.Errorf("only %d commands submitted", len(n.submitted))
			}
			for i, c := range n.cores {
				st := c.Stats()
				if st.Submitted != int64(n.seqs[i]) || st.Commands != int64(len(n.executed[i])) {
					t.Errorf("member %d Stats: submitted %d, commands %d; want %d, %d", i, st.Submitted, st.Commands, n.seqs[i], len(n.executed[i]))
				}
				if st.Malformed+st.Foreign+st.Violations != 0 {
					t.Errorf("member %d Stats: %+v", i, st)
				}
				if tt.loss == 0 && st.Stalls > 5 {
					t.Errorf("member %d stalled %d frames on a lossless network", i, st.Stalls)
				}
			}
		})
	}
}

// On a lossless network with a one-way delay well under a frame, once the
// delay has settled every bucket comes out at the Ready of its own frame
// tick: within a frame (plus the clock's slowing) of its time, never early.
func TestBucketsFollowClock(t *testing.T) {
	t.Parallel()
	n := newTestNet(t, 3, 5, nil)
	n.planRandom([]bucket.Slot{0, 1, 2}, 0, 10*time.Second, 100*time.Millisecond)
	n.runUntil(10 * time.Second)
	for i, at := range n.emittedAt {
		if len(at) < 195 {
			t.Fatalf("member %d stepped %d frames in 10s", i, len(at))
		}
		slewed := n.cores[i].Stats().Slewed
		for f, when := range at {
			due := time.Duration(f) * frameLen
			if when < due || when >= due+frameLen+slewed {
				t.Errorf("member %d stepped frame %d at %v, its time is %v (slewed %v)", i, f, when, due, slewed)
			}
		}
	}
	n.checkAllExecutedSoFar()
}

// ---------------------------------------------------------------------------
// 6. Stall and recovery: testdata/stall.txt, loss.txt, drop.txt and leave.txt
// (TestScenarios).

// ---------------------------------------------------------------------------
// 7. Violations.

func craft(t *testing.T, number uint16, seal bucket.Frame, next uint16, cmds ...wire.Command) []byte {
	t.Helper()
	p := wire.Packet{Session: testSession, From: 1, Number: number, Seal: seal, Next: next, AckSeal: -1, Commands: cmds}
	b, err := p.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReceiveViolations(t *testing.T) {
	window := bucket.Frame(lockstep.DefaultWindow)
	cmd := func(f bucket.Frame, payload string) wire.Command {
		return wire.Command{Frame: f, Payload: []byte(payload)}
	}
	tests := []struct {
		name      string
		datagrams func(t *testing.T) [][]byte
		violation bool
	}{
		{"command at the window's edge", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 3, 1, cmd(window-1, "x"))}
		}, false},
		{"command beyond the window", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 3, 1, cmd(window, "x"))}
		}, true},
		{"seal beyond the window", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, window, 0)}
		}, true},
		{"command under the initial seal", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 2, 1, cmd(2, "x"))}
		}, true},
		{"command just over a promised seal", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 10, 0), craft(t, 1, 10, 1, cmd(11, "x"))}
		}, false},
		{"command at a promised seal", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 10, 0), craft(t, 1, 10, 1, cmd(10, "x"))}
		}, true},
		{"command under a promised seal", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 10, 0), craft(t, 1, 10, 1, cmd(8, "x"))}
		}, true},
		{"command under a seal promised with it", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 12, 1, cmd(11, "a")), craft(t, 1, 12, 2, cmd(12, "b"))}
		}, true},
		{"identical resend", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 10, 1, cmd(10, "a")), craft(t, 1, 10, 1, cmd(10, "a"))}
		}, false},
		{"conflicting payload under one sequence number", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 10, 1, cmd(10, "a")), craft(t, 1, 10, 1, cmd(10, "b"))}
		}, true},
		{"conflicting frame under one sequence number", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 9, 1, cmd(10, "a")), craft(t, 1, 9, 1, cmd(11, "a"))}
		}, true},
		{"frame lower than an earlier command's", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 5, 1, cmd(20, "a")), craft(t, 1, 5, 2, cmd(15, "b"))}
		}, true},
		{"more commands than sequence numbers", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 5, 1, cmd(10, "a"), cmd(10, "b"))}
		}, true},
		{"sequence number too far ahead", func(t *testing.T) [][]byte {
			return [][]byte{craft(t, 0, 5, 5000, cmd(10, "a"))}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Nothing executed yet: the window ends at frame -1 + Window.
			c := newCore(t, memberConfig(2, 0), 0)
			now := 5 * time.Millisecond
			for _, d := range tt.datagrams(t) {
				c.Receive(now, 1, d)
			}
			rd := c.Ready(now)
			st := c.Stats()
			if !tt.violation {
				if len(rd.Events) != 0 || st.Violations != 0 {
					t.Fatalf("events %v, %d violations; want none", rd.Events, st.Violations)
				}
				return
			}
			// A violation is reported, then the violator is dropped by
			// agreement (alone with it, this member agrees at once).
			if len(rd.Events) != 2 || st.Violations != 1 || rd.Events[1].Type != lockstep.EventDrop || rd.Events[1].Member != 1 {
				t.Fatalf("events %v, %d violations; want one violation, then a drop of member 1", rd.Events, st.Violations)
			}
			e := rd.Events[0]
			if e.Type != lockstep.EventViolation || e.Member != 1 || e.Frame != 0 || e.Detail == "" {
				t.Errorf("event %+v, want a violation of member 1 at frame 0 with a detail", e)
			}
			if !strings.HasPrefix(e.String(), "violation of member 1") {
				t.Errorf("event reads %q", e)
			}
			if rd := c.Ready(now + time.Millisecond); len(rd.Events) != 0 {
				t.Errorf("events repeated in the next Ready: %v", rd.Events)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 8. Sequence numbers wrapping past 2^16.

func TestSequenceNumbersWrap(t *testing.T) {
	t.Parallel()
	const (
		perFrame = 120
		frames   = 600
	)
	n := newTestNet(t, 2, 13, func(c *lockstep.Config) { c.MaxFrameCommands, c.MaxFrameBytes = 100*perFrame, 1<<20 })
	n.syncSubmit = false // 72,000 extra Ready calls would dominate the run
	for f := range frames {
		at := time.Duration(f)*frameLen + 7*time.Millisecond
		for k := range perFrame {
			p := binary.LittleEndian.AppendUint32(nil, uint32(f*perFrame+k))
			n.plan = append(n.plan, plannedSubmit{at: at, slot: 0, payload: p})
		}
	}
	n.runUntil(frames * frameLen)
	n.runUntilExecuted(slices.Max(n.lastStamp), frames*frameLen+10*time.Second)
	if total := perFrame * frames; len(n.executed[1]) != total || n.executed[1][total-1].seq != uint32(total-1) {
		t.Fatalf("member 1 stepped %d commands, want %d ending at sequence %d", len(n.executed[1]), total, total-1)
	}
	for k, c := range n.executed[1] {
		if c.seq != uint32(k) || binary.LittleEndian.Uint32([]byte(c.payload)) != uint32(k) {
			t.Fatalf("member 1's command %d is %v", k, c)
		}
	}
	n.checkAllExecuted()
}

// ---------------------------------------------------------------------------
// 9. Splitting.

func TestSplitDatagrams(t *testing.T) {
	tests := []struct {
		name     string
		commands int
		size     int
		oneFlush bool // one flush carries them all
	}{
		{"40 x 200 bytes", 40, 200, true},
		{"300 x 20 bytes", 300, 20, true},
		{"7 x 1000 bytes", 7, 1000, true},
		{"12 x 1000 bytes, more than one flush", 12, 1000, false},
	}
	for k, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const quietFrom = 200 * time.Millisecond
			n := newTestNet(t, 2, uint64(200+k), func(c *lockstep.Config) { c.MaxFrameCommands, c.MaxFrameBytes = 1000, 1<<20 })
			quiet := true
			n.block = func(now time.Duration, from, to bucket.Slot) bool {
				return from == 0 && now >= quietFrom && quiet
			}
			n.runUntil(quietFrom)
			for c := range tt.commands {
				p := bytes.Repeat([]byte{byte(c)}, tt.size)
				p[0] = byte(c >> 8)
				n.submit(0, p)
			}
			// Member 1 hears nothing while member 0's clock passes the
			// commands' frames, so its seal covers them.
			n.runUntil(quietFrom + 10*frameLen)

			// Member 0's next flush to member 1.
			var burst [][]byte
			n.afterReady = func(i int, rd lockstep.Ready) {
				for _, d := range rd.Datagrams {
					if i == 0 && d.To == 1 && n.now > quietFrom+10*frameLen {
						burst = append(burst, bytes.Clone(d.Data))
					}
				}
			}
			for len(burst) == 0 {
				if !n.step(n.now + time.Second) {
					t.Fatal("member 0 sent nothing")
				}
			}
			n.afterReady = nil
			if len(burst) < 2 {
				t.Fatalf("%d commands of %d bytes went in %d datagram", tt.commands, tt.size, len(burst))
			}
			var p wire.Packet
			var seqs []int
			var seal bucket.Frame = -1
			for _, d := range burst {
				if len(d) > wire.MaxDatagramSize {
					t.Errorf("%d-byte datagram", len(d))
				}
				if err := wire.Parse(d, &p); err != nil {
					t.Fatalf("split datagram does not parse: %v", err)
				}
				for i := range p.Commands {
					seqs = append(seqs, int(p.Next)-len(p.Commands)+i)
				}
				seal = max(seal, p.Seal)
			}
			slices.Sort(seqs)
			for i, s := range seqs {
				if s != i {
					t.Fatalf("the %d datagrams carry sequence numbers %v, want 0, 1, 2, ...", len(burst), seqs)
				}
			}
			if tt.oneFlush && (len(seqs) != tt.commands || seal < n.lastStamp[0]) {
				t.Fatalf("one flush carries %d of %d commands and seal %d (commands up to frame %d)", len(seqs), tt.commands, seal, n.lastStamp[0])
			}
			if !tt.oneFlush && len(seqs) >= tt.commands {
				t.Fatalf("one flush carries all %d commands in %d datagrams", tt.commands, len(burst))
			}

			// Deliver the flush to member 1 in a shuffled order, then nothing
			// more from member 0 for a while: member 1 must step every
			// command the flush carried.
			rng := rand.New(rand.NewPCG(uint64(k), 1))
			rng.Shuffle(len(burst), func(i, j int) { burst[i], burst[j] = burst[j], burst[i] })
			for _, d := range burst {
				n.cores[1].Receive(n.now, 0, d)
			}
			n.kick[1] = true
			n.runUntil(n.now + 3*frameLen)
			if tt.oneFlush {
				n.runUntilExecuted(n.lastStamp[0], n.now+time.Second)
				if got := len(n.executed[1]); got != tt.commands {
					t.Errorf("member 1 stepped %d commands from the split datagrams alone, want %d", got, tt.commands)
				}
			}
			quiet = false
			n.runUntilExecuted(n.lastStamp[0]+3, n.now+5*time.Second)
			n.checkAllExecuted()
		})
	}
}

// ---------------------------------------------------------------------------
// 10. Budget.

// budgetMeter checks, at every Ready of every member, that bytes sent since
// the start stay within budget x elapsed + one datagram, and that bytes sent
// over any interval stay within budget x interval + the token bucket's burst
// + one datagram. It records the first excess of each kind.
type budgetMeter struct {
	budget int64
	floor  []int64 // per member: min over earlier Readys of sent - budget x time
	total  string  // the first excess since the start
	excess string  // the first excess over an interval
}

func (m *budgetMeter) failures() string {
	return strings.TrimPrefix(m.total+"; "+m.excess, "; ")
}

func (m *budgetMeter) watch(n *testNet) {
	m.floor = make([]int64, len(n.cores))
	oneDatagram := int64(wire.MaxDatagramSize + wire.Overhead)
	burst := max(m.budget/4, oneDatagram)
	n.afterReady = func(i int, rd lockstep.Ready) {
		sent := n.cores[i].Stats().BytesSent
		allowed := m.budget * int64(n.now) / int64(time.Second)
		if sent > allowed+oneDatagram && m.total == "" {
			m.total = fmt.Sprintf("member %d at %v: sent %d bytes since the start, Budget %d B/s allows %d + one datagram",
				i, n.now, sent, m.budget, allowed)
		}
		if excess := sent - allowed - m.floor[i]; excess > burst+oneDatagram && m.excess == "" {
			var now int64
			for _, d := range rd.Datagrams {
				now += int64(len(d.Data)) + oneDatagram - wire.MaxDatagramSize
			}
			m.excess = fmt.Sprintf("member %d at %v sent %d datagrams (%d bytes with overhead) in one Ready, %d bytes over Budget %d B/s x interval since an earlier Ready, more than the token bucket's burst %d + one datagram %d",
				i, n.now, len(rd.Datagrams), now, excess, m.budget, burst, oneDatagram)
		}
		m.floor[i] = min(m.floor[i], sent-allowed)
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	const run = 20 * time.Second // 7 peers: 20 s keeps the package fast under -race
	n := newTestNet(t, 8, 17, func(c *lockstep.Config) { c.Budget = 3600 })
	n.checkDeadline = false // see TestDeadlineOutOfBudget
	m := &budgetMeter{budget: 3600}
	m.watch(n)
	n.planRandom([]bucket.Slot{0, 3, 7}, 0, run-5*time.Second, 700*time.Millisecond)
	n.runUntil(run)
	if f := m.failures(); f != "" {
		t.Error(f)
	}
	for i, c := range n.cores {
		if st := c.Stats(); st.Executed < 300 || st.BytesSent < 3000*int64(run/time.Second) {
			t.Errorf("member %d stepped %d frames and sent %d bytes in %v: the budget is not used", i, st.Executed+1, st.BytesSent, run)
		}
	}
	n.checkAllExecutedSoFar()
}

// With little budget left, a flush that must be split must not send more
// than the budget allows.
func TestBudgetSplitBurst(t *testing.T) {
	t.Parallel()
	n := newTestNet(t, 3, 19, func(c *lockstep.Config) { c.Budget = 2 * (wire.MaxDatagramSize + wire.Overhead) })
	n.checkDeadline = false // see TestDeadlineOutOfBudget
	m := &budgetMeter{budget: int64(n.cfgs[0].Budget)}
	m.watch(n)
	n.runUntil(5 * time.Second)
	for c := range 40 {
		n.submit(0, bytes.Repeat([]byte{byte(c)}, 200))
	}
	n.runUntil(30 * time.Second)
	n.checkAllExecutedSoFar()
	if f := m.failures(); f != "" {
		t.Fatal("a split flush ignores the budget: " + f)
	}
}

// ---------------------------------------------------------------------------
// 11. Deadline.

func TestDeadline(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*lockstep.Config)
		create time.Duration
		steps  []time.Duration // gaps between Ready calls
	}{
		{"frame ticks", nil, 0, []time.Duration{0, 1, time.Millisecond, 48 * time.Millisecond, frameLen, frameLen - 1, 1, time.Second}},
		{"same moment twice", nil, 0, []time.Duration{0, 0, 0, 30 * time.Millisecond, 0}},
		{"one member", func(c *lockstep.Config) { c.Members, c.Self = 1, 0 }, 0, []time.Duration{0, 10 * time.Millisecond, frameLen, 3 * frameLen}},
		{"20ms frames offset start", func(c *lockstep.Config) { c.Frame, c.Start = 20*time.Millisecond, 7*time.Millisecond }, 0, []time.Duration{0, 7 * time.Millisecond, 19 * time.Millisecond, time.Millisecond, 40 * time.Millisecond}},
		{"1ms frames", func(c *lockstep.Config) { c.Frame = time.Millisecond }, 0, []time.Duration{0, 1, time.Millisecond, 2500 * time.Microsecond}},
		{"start in the future", func(c *lockstep.Config) { c.Start = 10 * time.Second }, 0, []time.Duration{0, time.Second, 9 * time.Second, time.Second}},
		{"late epoch", nil, time.Hour, []time.Duration{0, 10 * time.Millisecond, frameLen}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := memberConfig(2, 0)
			if tt.modify != nil {
				tt.modify(&cfg)
			}
			c := newCore(t, cfg, tt.create)
			cfg = c.Config()
			now := tt.create
			for _, gap := range tt.steps {
				now += gap
				checkDeadline(t, cfg, now, c.Ready(now).Deadline)
			}
		})
	}
	// Ready at seeded random moments, and at its deadlines, with a peer.
	n := newTestNet(t, 2, 23, nil)
	n.planRandom([]bucket.Slot{0, 1}, 0, 5*time.Second, 50*time.Millisecond)
	rng := rand.New(rand.NewPCG(23, 24))
	for n.now < 5*time.Second {
		n.runUntil(n.now + time.Duration(rng.Int64N(int64(2*frameLen))))
		n.ready(rng.IntN(2)) // checks the deadline
	}
}

func checkDeadline(t *testing.T, cfg lockstep.Config, now, deadline time.Duration) {
	t.Helper()
	// The next frame tick: the frame clock runs at real speed while no
	// member is heard.
	tick := cfg.Start
	if now >= cfg.Start {
		tick = cfg.Start + ((now-cfg.Start)/cfg.Frame+1)*cfg.Frame
	}
	if deadline <= now || deadline > tick {
		t.Errorf("Ready(%v) deadline %v, want in (%v, %v]", now, deadline, now, tick)
	}
}

// While the budget is spent, Ready must still be called at the next frame
// tick: buckets are due whether or not anything can be sent.
func TestDeadlineOutOfBudget(t *testing.T) {
	t.Parallel()
	var bugs []string

	// A fresh core has no tokens: its first datagram waits 71ms for them,
	// but frame 1 (under the initial seals) is due at 50ms.
	cfg := memberConfig(2, 0)
	cfg.Budget = 3600
	c := newCore(t, cfg, 0)
	if rd := c.Ready(0); rd.Deadline > frameLen {
		bugs = append(bugs, fmt.Sprintf("fresh core with Budget 3600: Ready(0) deadline %v, frame 1 is due at %v", rd.Deadline, frameLen))
	}

	// After a split flush has overdrawn the budget.
	n := newTestNet(t, 3, 29, func(c *lockstep.Config) { c.Budget = 3600 })
	n.checkDeadline = false
	var worst, at time.Duration
	n.afterReady = func(i int, rd lockstep.Ready) {
		if d := rd.Deadline - n.now; d > worst {
			worst, at = d, n.now
		}
	}
	n.runUntil(5 * time.Second)
	for c := range 40 {
		n.submit(0, bytes.Repeat([]byte{byte(c)}, 200))
	}
	n.runUntil(10 * time.Second)
	if worst > frameLen {
		bugs = append(bugs, fmt.Sprintf("after member 0 sent a split flush, Ready(%v) returned a deadline %v ahead", at, worst))
	}
	if len(bugs) > 0 {
		t.Fatalf("with Budget set, Deadline can lie past the next frame tick: %s", strings.Join(bugs, "; "))
	}
}

// A relay must stay within what its sender's own membership view says it
// holds of the suspect: a forged seal is a violation, not a promise.
func TestRelayBeyondTheRelayersViewIsAViolation(t *testing.T) {
	for _, tt := range []struct {
		name  string
		relay wire.Relay
		view  wire.MemberView
	}{
		{"seal beyond its view", wire.Relay{Member: 2, First: 0, Seal: 1<<40 - 1}, wire.MemberView{Held: -1, Seal: -1, Next: 0, Last: 100}},
		{"seal beyond the window", wire.Relay{Member: 2, First: 0, Seal: 5000}, wire.MemberView{Held: 5000, Seal: 5000, Next: 0, Last: 5000}},
		{"commands beyond its view", wire.Relay{Member: 2, First: 0, Seal: 3, Commands: []wire.Command{{Frame: 5}}}, wire.MemberView{Held: 3, Seal: 3, Next: 0, Last: 3}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCore(t, memberConfig(3, 0), 0)
			p := wire.Packet{Session: testSession, From: 1, Seal: 3, AckSeal: -1, HasMembership: true,
				Membership: wire.Membership{Suspected: 1 << 2, Views: []wire.MemberView{tt.view}},
				HasRelay:   true, Relay: tt.relay}
			b, err := p.Append(nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Receive(time.Millisecond, 1, b)
			rd := c.Ready(time.Second)
			var violation bool
			for _, e := range rd.Events {
				if e.Type == lockstep.EventViolation && e.Member == 1 && strings.HasPrefix(e.Detail, "relay") {
					violation = true
				}
			}
			if !violation || c.Executed() > 20 {
				t.Fatalf("events %v, executed %d: want a relay violation of member 1 and no frames past its seal", rd.Events, c.Executed())
			}
		})
	}
}

// ---------------------------------------------------------------------------
// The adaptive lead.

// TestLeadFollowsTheNetwork checks the adaptive policy on a 10 ms network:
// the lead settles at the lateness (10 ms) plus the seal's second copy and
// the margin, and a command runs on the next frame when submitted early
// enough in this one, on the one after when not: the lead is not rounded to
// whole frames.
func TestLeadFollowsTheNetwork(t *testing.T) {
	n := newTestNet(t, 3, 77, nil)
	settle := 100 * frameLen
	n.runUntil(settle)
	cfg := n.cfgs[0]
	for i, c := range n.cores {
		st := c.Stats()
		lo := n.latency + cfg.SealRepeat + cfg.Margin
		if st.Lead < lo || st.Lead > lo+cfg.Frame/8 {
			t.Errorf("member %d: lead %v, want %v plus at most the clock misalignment members tolerate (%v)", i, st.Lead, lo, cfg.Frame/8)
		}
		if st.Delay != 1 {
			t.Errorf("member %d: Stats().Delay %d, want 1 (a lead under a frame)", i, st.Delay)
		}
	}
	// Member 0's frame clock runs behind real time by its slewing, settled
	// by now: submit 2 ms and 45 ms into its frame 101.
	slewed := n.cores[0].Stats().Slewed
	frameStart := 101*frameLen + slewed
	early, late := frameStart+2*time.Millisecond, frameStart+45*time.Millisecond
	n.plan = append(n.plan, plannedSubmit{at: early, slot: 0, payload: []byte("early")}, plannedSubmit{at: late, slot: 0, payload: []byte("late")})
	n.runUntil(settle + 20*frameLen)
	n.checkAllExecuted()
	var fEarly, fLate bucket.Frame = -1, -1
	for _, s := range n.submitted {
		switch s.payload {
		case "early":
			fEarly = s.frame
		case "late":
			fLate = s.frame
		}
	}
	if got := n.cores[0].Stats().Slewed; got != slewed {
		t.Fatalf("member 0 slewed its clock by %v more after settling", got-slewed)
	}
	if fEarly != 102 || fLate != 103 {
		t.Errorf("submitted 2 ms into frame 101: frame %d, want 102; 45 ms in: frame %d, want 103", fEarly, fLate)
	}
	for i, c := range n.cores {
		if s := c.Stats().Stalls; s > 0 {
			t.Errorf("member %d stalled %d frames on a lossless network", i, s)
		}
	}
}

// TestConnectionSetupIsNotLateness holds every datagram of the first two
// seconds of play until the third (connections slow to set up): those
// arrive seconds late, but they measure the setup, not the path, so the lead
// settles as on any 10 ms network instead of remembering two seconds.
func TestConnectionSetupIsNotLateness(t *testing.T) {
	n := newTestNet(t, 3, 5, nil)
	n.heldUntil = 40 * frameLen
	n.planRandom([]bucket.Slot{0, 1, 2}, 0, 200*frameLen, 80*time.Millisecond)
	n.runUntil(200 * frameLen)
	n.runUntilExecuted(slices.Max(n.lastStamp)+5, 300*frameLen)
	n.checkAllExecuted()
	for i, c := range n.cores {
		if l := c.Stats().Lead; l > 100*time.Millisecond {
			t.Errorf("member %d: lead %v after the connections were set up, want the 10 ms network's (under 100 ms)", i, l)
		}
	}
}
