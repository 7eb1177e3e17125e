// Package cursor shares each member's cursor in examples/rts by dead
// reckoning: the cursor is not part of the deterministic game, so it does not
// go through lockstep; its owner sends its state as unreliable, sequenced
// entity updates (package reckon, datagram kind 0x02) and every other member
// displays a smoothed prediction of it.
//
// Each member's cursor follows a smooth, changing path drawn from the
// session seed and the member's slot (reckon.Path), so every member also
// knows where every cursor truly is and can measure how far the display is
// from the truth: the figures phalanx sim and phalanx mesh report as
// "reckon". A member displays every other cursor with each of the four
// convergence methods at once, only to compare them; a game would pick one.
package cursor

import (
	"cmp"
	"time"

	"github.com/phalanx-net/phalanx/reckon"
)

// Defaults of a Config's zero fields.
const (
	DefaultThreshold = 0.25                   // world units (tiles)
	DefaultConverge  = 200 * time.Millisecond // convergence time
)

// Config configures a Share.
type Config struct {
	Members   int
	Self      int
	Seed      uint64        // the session seed: every member uses the same
	Threshold float64       // prediction error that counts as a change; 0 means DefaultThreshold
	Converge  time.Duration // 0 means DefaultConverge
	Heartbeat time.Duration // longest silence of an owner; 0 means reckon.DefaultHeartbeat
	// ViewWidth and ViewHeight are every member's camera, in tiles,
	// centred on its cursor (camera.go); 0 means DefaultViewWidth and
	// DefaultViewHeight.
	ViewWidth, ViewHeight float64
	// Interest, when set, filters the updates TickTo sends each member by
	// its camera (reckon.Filter); nil sends every member every update.
	Interest *reckon.Interest
	// OnScreen measures the cursors on this member's screen apart
	// (VisibleMetrics, OnScreen): a second set of meters.
	OnScreen bool
	// OnScreenOnly, with OnScreen, keeps only the on-screen meters:
	// Metrics reports errors and jumps of zero, and measuring a frame
	// costs less (a run that needs only VisibleMetrics sets it).
	OnScreenOnly bool
	// Truths, when set, moves the true cursor paths for this share and
	// the others given it (made by NewTruths with the same Seed and
	// Members); nil: the share moves its own. The figures are the same.
	// The shares of one Truths tick the same times, one after another:
	// each reads the paths Truths.At returns for its tick only.
	Truths *Truths
}

// Share is one member's side of cursor sharing: its own cursor's owner and
// the displays of the others'. It is not safe for concurrent use.
type Share struct {
	cfg     Config
	paths   []*reckon.Path             // every member's true cursor path
	owner   *reckon.Owner[reckon.Vec2] // our own cursor
	display [][reckon.Cubic + 1]*reckon.Receiver[reckon.Vec2]
	// phases is, by member, what measure reads of each of its
	// receivers every frame, side by side (noted after each Receive,
	// the only time it changes) rather than in four receivers.
	phases  []phase
	meters  [][reckon.Cubic + 1]reckon.Meter[reckon.Vec2]
	visible []reckon.Meter[reckon.Vec2] // by method, with Config.OnScreen: every cursor's frames on screen, pooled
	filters []*reckon.Filter            // by member, with Config.Interest
	toLast  [][2]reckon.State2          // by member, with Config.Interest: the last two states sent to it
	toSent  []int                       // how many were
	// toLastID numbers the states of toLast (from 1, as they were
	// made), lastID the newest; predicted memoises sentWorld.
	toLastID  [][2]uint64
	lastID    uint64
	predicted [64]predictedSent
	// heard is the newest state received of each other cursor: where its
	// member's camera was then.
	heard    []reckon.State2
	heardAny []bool
	truths   []reckon.State2
	worlds   []reckon.Vec2 // where each of truths lies on the map (world)
	bases    []reckon.Vec2 // Base of every member, computed once
	sent     int
	// catchUps counts the updates sent outside the owner's schedule;
	// shown and onScreen the frames of other cursors displayed (cubic),
	// and of those on screen.
	catchUps, shown, onScreen int
	start                     time.Duration
	started                   bool
}

// New returns the share of member cfg.Self.
func New(cfg Config) *Share {
	cfg.Threshold = cmp.Or(cfg.Threshold, DefaultThreshold)
	cfg.Converge = cmp.Or(cfg.Converge, DefaultConverge)
	cfg.ViewWidth = cmp.Or(cfg.ViewWidth, DefaultViewWidth)
	cfg.ViewHeight = cmp.Or(cfg.ViewHeight, DefaultViewHeight)

	s := &Share{
		cfg:     cfg,
		owner:   reckon.NewOwner[reckon.Vec2](reckon.OwnerConfig{Entity: uint64(cfg.Self), Predictor: reckon.ConstantAcceleration, Threshold: cfg.Threshold, Heartbeat: cfg.Heartbeat}),
		display: make([][reckon.Cubic + 1]*reckon.Receiver[reckon.Vec2], cfg.Members),
		phases:  make([]phase, cfg.Members),
		heard:   make([]reckon.State2, cfg.Members), heardAny: make([]bool, cfg.Members),
	}
	if cfg.Truths == nil {
		s.truths = make([]reckon.State2, cfg.Members) // its own paths move into it; with Truths, Truths.At's slice
		s.worlds = make([]reckon.Vec2, cfg.Members)
	}
	cfg.OnScreenOnly = cfg.OnScreenOnly && cfg.OnScreen
	s.cfg.OnScreenOnly = cfg.OnScreenOnly
	if !cfg.OnScreenOnly {
		s.meters = make([][reckon.Cubic + 1]reckon.Meter[reckon.Vec2], cfg.Members)
	}
	if cfg.OnScreen {
		s.visible = make([]reckon.Meter[reckon.Vec2], reckon.Cubic+1)
	}
	for m := range cfg.Members {
		s.bases = append(s.bases, Base(m, cfg.Members))
	}
	if cfg.Interest != nil {
		s.filters = make([]*reckon.Filter, cfg.Members)
		s.toLast, s.toSent = make([][2]reckon.State2, cfg.Members), make([]int, cfg.Members)
		s.toLastID = make([][2]uint64, cfg.Members)
		for m := range s.filters {
			s.filters[m] = reckon.NewFilter(*cfg.Interest)
		}
	}
	for m := range cfg.Members {
		if cfg.Truths == nil {
			s.paths = append(s.paths, reckon.NewPath(PathSeed(cfg.Seed, m)))
		}
		for k := range s.display[m] {
			s.display[m][k] = reckon.NewReceiver[reckon.Vec2](reckon.Smoothing{
				Predictor: displayPredictor, Method: reckon.Method(k), Converge: cfg.Converge,
			})
		}
	}
	return s
}

// PathSeed returns the seed of member's cursor path in a session of seed.
func PathSeed(seed uint64, member int) uint64 {
	return seed ^ (uint64(member)+1)*0x9e3779b97f4a7c15
}

// Tick moves the cursors to time now (the session's frame clock: time since
// frame 0, the same on every member), sends our cursor's update through send
// when the owner policy asks for one, and takes a frame of every display's
// measurements.
// Tick sends every update to every member at once, whatever
// Config.Interest says; TickTo filters.
func (s *Share) Tick(now time.Duration, send func(update []byte)) {
	if u, ok := s.observe(now); ok {
		send(reckon.AppendUpdate(nil, u))
	}
	s.measure(now)
}

// observe moves the cursors to now and returns our cursor's update, when
// the owner policy asks for one.
func (s *Share) observe(now time.Duration) (reckon.Update[reckon.Vec2], bool) {
	if !s.started {
		s.started, s.start = true, now
	}
	if s.cfg.Truths != nil {
		// Truths.At's slice, read only within this tick (the shares of
		// one Truths tick the same time, one after another).
		s.truths, s.worlds = s.cfg.Truths.atWorld(now)
	}
	for m, p := range s.paths {
		s.truths[m] = p.Advance(now)
		s.worlds[m] = s.world(m, s.truths[m].Pos)
	}
	u, ok := s.owner.Observe(s.truths[s.cfg.Self])
	if ok {
		s.sent++
	}
	return u, ok
}

// measure takes a frame of every display's measurements, and of those on
// screen.
func (s *Share) measure(now time.Duration) {
	view := s.camera()
	for m := range s.display {
		if m == s.cfg.Self {
			continue
		}
		truthSeen := view.Contains(s.worlds[m])
		// Every method's receiver of m takes the same updates (Receive),
		// so where its correction is over, each shows the same
		// prediction of the newest: Snap's, computed once.
		truth := s.truths[m].Pos
		var settled reckon.Vec2
		var settledErr float64
		var settledSeen, haveSettled bool
		ph := &s.phases[m]
		for k := range s.display[m] {
			if ph.started[k] {
				var shown reckon.Vec2
				var seen bool
				var err float64 // the error as Meter.Frame measures it
				switch {
				case k == int(reckon.Snap) || now < ph.until[k]: // r.Converging(now)
					if k == int(reckon.Snap) && now >= ph.until[k] {
						// r.Pos(now): Snap's correction is over as soon as it begins
						shown = ph.snapNewest.PredictPos(displayPredictor, now)
					} else {
						shown = s.display[m][k].Pos(now)
					}
					seen = truthSeen || view.Contains(s.world(m, shown))
					if seen || !s.cfg.OnScreenOnly {
						err = shown.Sub(truth).Len() // else no meter takes it
					}
					if k == int(reckon.Snap) {
						settled, settledErr, settledSeen, haveSettled = shown, err, seen, true
					}
				case !haveSettled:
					panic("cursor: a method's receiver started before snap's")
				default:
					shown, err, seen = settled, settledErr, settledSeen
				}
				if !s.cfg.OnScreenOnly {
					s.meters[m][k].FrameError(now, shown, err)
				}
				if seen && s.visible != nil {
					s.visible[k].FrameError(now, shown, err)
				}
				if reckon.Method(k) == reckon.Cubic {
					s.shown++
					if seen {
						s.onScreen++
					}
				}
			}
		}
	}
}

// Receive takes an entity update datagram from member from, received at
// now. It returns the decoding error of a malformed update.
func (s *Share) Receive(now time.Duration, from int, data []byte) error {
	u, err := reckon.ParseUpdate[reckon.Vec2](data)
	if err != nil {
		return err
	}
	if from < 0 || from >= s.cfg.Members || from == s.cfg.Self || u.Entity != uint64(from) {
		return nil // not a cursor we display
	}
	used := false
	ph := &s.phases[from]
	for k, r := range s.display[from] {
		if r.Receive(now, u) {
			used = true
			if k == int(reckon.Snap) {
				ph.snapNewest = u.State // what Correct took
			}
		}
	}
	if used {
		s.heard[from], s.heardAny[from] = u.State, true
	}
	for k, r := range s.display[from] {
		ph.started[k], ph.until[k] = r.Started(), r.Until()
	}
	return nil
}

// phase is what measure reads of one member's receivers, by method:
// whether each started and when its correction ends; and the newest
// state Snap's took, whose prediction it shows.
type phase struct {
	started    [reckon.Cubic + 1]bool
	until      [reckon.Cubic + 1]time.Duration
	snapNewest reckon.State2
}

// displayPredictor is the predictor of every display's receivers.
const displayPredictor = reckon.ConstantAcceleration

// Metrics returns, per convergence method, this member's measurements over
// the other members' cursors at time now: the updates per second of one
// entity (our own cursor's; every cursor follows the same policy), the mean
// and 99th percentile error averaged over the cursors, and the largest jump.
func (s *Share) Metrics(now time.Duration) map[reckon.Method]reckon.Metrics {
	return s.metricsOf(s.meters, now)
}

// metricsOf aggregates meters as Metrics says.
func (s *Share) metricsOf(meters [][reckon.Cubic + 1]reckon.Meter[reckon.Vec2], now time.Duration) map[reckon.Method]reckon.Metrics {
	out := make(map[reckon.Method]reckon.Metrics)
	for k := range reckon.Cubic + 1 {
		var agg reckon.Metrics
		n := 0
		for m := range meters {
			if m == s.cfg.Self {
				continue
			}
			mt := meters[m][k].Metrics()
			if mt == (reckon.Metrics{}) {
				continue // never shown (on screen)
			}
			agg.ErrorMean += mt.ErrorMean
			agg.ErrorP99 += mt.ErrorP99
			agg.MaxJump = max(agg.MaxJump, mt.MaxJump)
			agg.MaxKink = max(agg.MaxKink, mt.MaxKink)
			n++
		}
		if n > 0 {
			agg.ErrorMean /= float64(n)
			agg.ErrorP99 /= float64(n)
		}
		agg.UpdatesPerS = s.UpdatesPerSecond(now)
		out[reckon.Method(k)] = agg
	}
	return out
}

// UpdatesPerSecond returns how many updates per second our own cursor sent
// over the time ticked.
func (s *Share) UpdatesPerSecond(now time.Duration) float64 {
	if d := (now - s.start).Seconds(); d > 0 {
		return float64(s.sent) / d
	}
	return 0
}
