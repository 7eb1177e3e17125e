package locksteptest

import (
	"errors"
	"math"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/internal/quantile"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/wire"
	"github.com/phalanx-net/phalanx/netsim"
)

// Config describes one virtual run.
type Config struct {
	Members int            // number of members
	Frames  int            // run until every surviving member has stepped frames 0..Frames-1
	Seed    uint64         // seeds the network and the submit times
	Profile netsim.Profile // network conditions on every path
	// Core is the template of every member's core configuration; Members,
	// Self, Session and Start are filled in by the harness. Unless the
	// template sets a Signer or Verifier, or Unsigned is set, every member
	// signs its stream with an Ed25519 key derived from Seed
	// (lockstep.Ed25519Keys) and checks the others'. Its Budget is not
	// taken from Profile: without one, members offer a slow uplink far
	// more than it carries (phalanx sim sets the profile's uplink cap).
	Core lockstep.Config
	// Unsigned turns the default signing off: members sign and check
	// nothing, as cores without a Signer and Verifier.
	Unsigned bool
	// Configure, when set, alters member slot's core configuration after
	// the harness filled it in: a test's hostile member may run with other
	// limits than the rest.
	Configure func(slot bucket.Slot, cfg *lockstep.Config)
	// NewSim returns member slot's simulation. Every member's must start in
	// the same state.
	NewSim func(slot bucket.Slot) lockstep.Simulation
	// Commands returns the commands member slot issues during frame (by the
	// wall clock, not its own frame clock); the harness submits each at a
	// seeded random moment within that frame. Nil: no commands.
	Commands func(slot bucket.Slot, frame bucket.Frame) [][]byte
	// Faults are injected at their frame (by the wall clock).
	Faults []Fault
	// Perturb alters member slot's simulation state, for FaultPerturb. Nil:
	// perturbing is not supported.
	Perturb func(slot bucket.Slot, sim lockstep.Simulation)
	// Tamper, when set, may rewrite (or drop, by returning nil) every
	// datagram as it is sent: tests use it to make a member lie. The
	// returned slice may alias data.
	Tamper func(now time.Duration, from, to bucket.Slot, data []byte) []byte
	// MaxTime bounds the virtual run; 0 means ten times the nominal length
	// plus a minute.
	MaxTime time.Duration
	// OnStep, when set, is called after member slot stepped a bucket, with
	// its simulation (for recording replays). The bucket is valid only
	// during the call.
	OnStep func(slot bucket.Slot, b lockstep.Bucket, sim lockstep.Simulation)
	// OnStatement, when set, is called with every statement a member's
	// core newly holds (lockstep.Ready.Statements: others' it verified,
	// its own it signed), after the buckets of the same Ready were
	// stepped: for recording replays.
	OnStatement func(slot, member bucket.Slot, st wire.Statement)
	// OnEvent, when set, is called with every event a member's core
	// reports, as it reports it.
	OnEvent func(slot bucket.Slot, e lockstep.Event)
	// OnSpectator, when set, is called once per spectator as it arrives
	// (Config.Spectators): its index, the member its tree of spectators
	// hangs from, and the first frame it steps itself (after its
	// catch-up): for recording its admission in replays.
	OnSpectator func(index int, root bucket.Slot, from bucket.Frame)
	// OnReceive, when set, is called with every datagram a member's core
	// receives, as it receives it: over the stream transport, as the stream
	// hands it on in order. data is valid only during the call.
	OnReceive func(now time.Duration, from, to bucket.Slot, data []byte)
	// KeepSamples, when set, keeps every command's latency and every
	// datagram's one-way delay in Result.Latencies and Result.OneWay, for
	// plots: memory that grows with the run. Unset, a run keeps only
	// their bounded sketches (Result.LatencyPercentile, OneWayPercentile).
	KeepSamples bool
	// Open is the set of slots (bit i: slot i) that are empty when the
	// run begins: a FaultJoin brings a member into one.
	Open uint64
	// CheckpointEvery is how often, in frames, every member saves its
	// simulation (lockstep.Snapshotter) for joiners to load; 0 or a
	// simulation without the interface: joiners step every bucket from
	// frame 0.
	CheckpointEvery int
	// CatchupRate is the bytes per second one member serves a joiner's
	// catch-up at (default 1 MiB/s), on a transfer of its own beside the
	// datagrams; at most CatchupServers members (default 3) serve one
	// joiner, each a share.
	CatchupRate    int
	CatchupServers int
	// Spectators watch the run (spectate.go): they receive the buckets the
	// members step and step them SpectatorDelay behind the live frame (by
	// the wall clock), from frame SpectatorsFrom on (0: the start; later,
	// they catch up first). A member or a spectator serves at most
	// SpectatorFanout of them (default 2).
	Spectators      int
	SpectatorDelay  time.Duration
	SpectatorFanout int
	SpectatorsFrom  bucket.Frame
	// StallFrom and StallTo, when StallTo is positive, set a window of
	// frames over which Result.WindowStalls counts the stalls of the
	// members that step both ends of it (a joiner's own catch-up aside).
	StallFrom, StallTo bucket.Frame
	// Transport carries the cores' datagrams: "" or TransportDatagram, one
	// unreliable datagram each; TransportStream, a reliable ordered stream
	// per ordered pair of members (see netsim.Reliable), whose retransmissions count
	// in the members' Stats.Datagrams and Stats.BytesSent.
	Transport string
	// Parallel steps every member's simulation on a goroutine of its own
	// (started by Run and ended before it returns), beside the rest of the
	// run: a run as deterministic as in turn and, but while a desync is
	// located or two members are nearly 4,096 frames apart (parallel.go),
	// the same event for event. It is ignored (members step in turn) with
	// OnStep, Tamper, perturb faults, joiners, rejoins or spectators.
	// Each simulation is then used on its goroutine, one at a time.
	Parallel bool
	// Windows runs the members' cores side by side, on up to GOMAXPROCS
	// goroutines started by Run and ended before it returns, within
	// windows of virtual time shorter than the profile's smallest one-way
	// delay (window.go): the same run, event for event, as in turn. It is
	// ignored (the run goes in turn) with Parallel stepping, callbacks,
	// Tamper, mute, storm, perturb, rejoin and join faults, spectators, the
	// stall window or the stream transport.
	Windows bool
}

// FaultKind says what a Fault does.
type FaultKind uint8

// Fault kinds.
const (
	FaultKill      FaultKind = iota + 1 // the member falls silent forever
	FaultLeave                          // the member leaves the session
	FaultPartition                      // the members split into two halves for Duration
	FaultPerturb                        // the member's simulation state is altered after it steps Frame
	FaultFreeze                         // the member does nothing for Duration (what it is sent meanwhile is lost), then resumes
	FaultMute                           // the member keeps talking but its seal stops: its datagrams carry the seal it had then, and none of its later commands
	FaultStorm                          // every datagram is lost with probability Loss for Duration
	FaultRejoin                         // the member, killed or stopped before, comes back with the same slot and key and a new core (catchup.go)
	FaultJoin                           // a new member takes slot Slot, open since the start (Config.Open)
)

// Fault is one fault injected into a run.
type Fault struct {
	Kind     FaultKind
	Slot     bucket.Slot   // the member (kill, leave, perturb)
	Frame    bucket.Frame  // when: the wall-clock time of this frame, or (perturb) after this frame is stepped
	Duration time.Duration // partitions, freezes, storms: how long
	Loss     float64       // storms: the probability of losing each datagram
	// Group, for a partition, is the set of members (bit i: slot i) cut
	// off from the rest; 0 splits the members into halves.
	Group uint64
}

// Result is what a run measured.
type Result struct {
	Frames    int
	Members   []Member
	Survivors []bucket.Slot   // members neither killed, gone nor stopped
	Groups    [][]bucket.Slot // survivors grouped by identical histories, largest first
	Identical bool            // every survivor stepped the same buckets and reached the same state hash on every frame
	Diverged  bucket.Frame    // first frame whose buckets or hashes differ between survivors, or -1
	Desynced  int             // survivors whose history differs from the first survivor's
	Duration  time.Duration

	// Latencies (per command: submit to execution on the last survivor)
	// and OneWay (per delivered datagram: send to arrival, queueing
	// included) are every sample, kept only with Config.KeepSamples;
	// LatencyPercentile and OneWayPercentile answer from bounded sketches
	// of the same samples either way.
	Latencies []time.Duration
	OneWay    []time.Duration
	Lost      int64                  // datagrams the network lost or dropped
	Reliable  []netsim.ReliableStats // over the stream transport: per member, its outgoing streams' counters summed
	// Admissions are the rejoins and late joins, in the order they were
	// requested.
	Admissions []Admission
	// WindowStalls are the stalls (lockstep.Stats.Stalls) of the members
	// that stepped frames Config.StallFrom to StallTo while they did, and
	// WindowFrames those frames summed over the same members.
	WindowStalls, WindowFrames int64
	// Spectators are the run's spectators; Identical covers those that
	// stepped the last frame. SpectatorBytes is, per member slot, the bytes
	// of buckets it sent the spectators it serves.
	Spectators     []Spectator
	SpectatorBytes []int64

	latency, oneWay quantile.Sketch // nanoseconds
	windows         int             // windows run side by side (Config.Windows), for the tests
	endedInWindow   bool            // the run ended within a window (every member stopped), for the tests
}

// Commands returns how many commands have a latency: those executed on
// every survivor.
func (r *Result) Commands() int { return int(r.latency.Count()) }

// LatencyPercentile returns the nearest-rank p-th percentile (p in
// [0, 100]) of the commands' latencies, within 1 % of the exact one (the
// 0th and 100th exactly), or 0 for none.
func (r *Result) LatencyPercentile(p float64) time.Duration {
	return time.Duration(math.Round(r.latency.Quantile(p)))
}

// OneWayPercentile returns the nearest-rank p-th percentile of the
// delivered datagrams' one-way delays, within 1 % of the exact one, or 0
// for none.
func (r *Result) OneWayPercentile(p float64) time.Duration {
	return time.Duration(math.Round(r.oneWay.Quantile(p)))
}

// addLatency and addOneWay count one sample.
func (r *Result) addLatency(d time.Duration, keep bool) {
	r.latency.Add(float64(d))
	if keep {
		r.Latencies = append(r.Latencies, d)
	}
}

func (r *Result) addOneWay(d time.Duration, keep bool) {
	r.oneWay.Add(float64(d))
	if keep {
		r.OneWay = append(r.OneWay, d)
	}
}

// Member is one member's view of a run.
type Member struct {
	Slot     bucket.Slot
	Killed   bool
	Left     bool
	Frozen   bool // it was frozen at some point (FaultFreeze)
	Open     bool // its slot stayed open: nobody joined it (Config.Open)
	PeakHeld int  // the most payload bytes of the others' commands it held (Core.Held, sampled every ten frames, buffered ones counted at Config.MaxCommandSize)
	// MaxWait is the longest it went without stepping a frame after frame
	// 0, until it finished or stopped, counting each wait from the later of
	// its start, the end of the member's own freeze and the newest fault
	// injected: a fault that strikes while the members wait on another
	// starts a wait of its own.
	MaxWait   time.Duration
	Stopped   error        // non-nil when its core stopped (dropped, or in a minority): Core.Err
	Stepped   bucket.Frame // newest frame stepped
	FinalHash uint64       // state hash after frame Frames-1 (or the newest stepped)
	Stats     lockstep.Stats
	Events    []lockstep.Event // everything its core reported: a few per membership change or desync
	Errors    []error          // Submit and Leave errors: the first maxErrors
}

// ErrTimeout is returned when the run does not finish within MaxTime.
var ErrTimeout = errors.New("locksteptest: run did not finish in time")

// Admission is one member's rejoin or late join in a run.
type Admission struct {
	Slot           bucket.Slot
	Kind           string        // "rejoin" or "late"
	RequestedFrame bucket.Frame  // the frame (by the wall clock) at which it asked
	AdmittedFrame  bucket.Frame  // the frame it counts from, or -1 if never admitted
	Snapshot       bucket.Frame  // the checkpoint it loaded, or -1 (it stepped every bucket from frame 0)
	CatchupFrames  int           // frames it stepped to catch up: from the checkpoint (or frame 0) to the admission frame and those that went live meanwhile
	Transfer       time.Duration // virtual time from its admission until the checkpoint and buckets were in (the transfer model)
	Resimulate     time.Duration // wall-clock time this machine took to restore the checkpoint and step the catch-up frames
	Bytes          int64         // bytes of checkpoint and buckets transferred
	Servers        int           // members that served the transfer
	Verified       bool          // the loaded checkpoint's state hash matched the one the members vouched for
}

// Spectator is one spectator of a run.
type Spectator struct {
	Index       int
	ServedBy    string       // "member N" or "spectator N"
	Depth       int          // spectators between it and the member that serves the tree it is in
	From        bucket.Frame // the first frame it received live (before it: its catch-up)
	Snapshot    bucket.Frame // the checkpoint it loaded, or -1
	Stepped     bucket.Frame // the newest frame it stepped
	FinalHash   uint64       // its state hash after the run's last frame (or the newest it stepped)
	DelayFrames int          // Config.SpectatorDelay in frames
	Bytes       int64        // bytes it received: catch-up and buckets
	Diverged    bool         // its state differed from the members' at some frame, or it could not catch up
}
