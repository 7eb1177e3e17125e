package reckon

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// ScenarioConfig describes a run of [RunScenario].
type ScenarioConfig struct {
	// Duration is the simulated time; 0 means 60 s.
	Duration time.Duration
	// FrameRate is the frames per second at which the owner observes its
	// entity and the receivers display it; 0 means 60.
	FrameRate int
	// Seed chooses the path.
	Seed uint64
	// Network decides the fate of the n-th update sent (n counts from 0) at
	// time at: its one-way delay, or that it is lost. Calls come in order of
	// n. A negative delay counts as 0. Nil delivers every update at once.
	Network func(n int, at time.Duration) (delay time.Duration, lost bool)
	// Owner sets when the owner sends; its Predictor is also the
	// receivers'.
	Owner OwnerConfig
	// Converge is every method's convergence time.
	Converge time.Duration
}

// The scenario's paths, in units (say metres) and seconds.
const (
	pathMinSpeed   = 1.0 // units/s
	pathMaxSpeed   = 6.0 // units/s
	pathMaxTurn    = 2.0 // rad/s
	pathMaxAccel   = 3.0 // units/s², along the path
	pathMinSegment = 400 * time.Millisecond
	pathMaxSegment = 2 * time.Second
	pathStep       = time.Millisecond
)

// RunScenario simulates one owner entity in the plane and one receiver per
// convergence method, and returns each receiver's Metrics. Equal configs
// give equal results.
//
// The entity runs a smooth path that keeps changing: segments of 0.4 to 2 s,
// each with a turn rate (none a third of the time, else uniform in ±2
// rad/s) and an acceleration along the path (uniform in ±3 units/s², the
// speed held within 1 to 6 units/s), so its velocity is continuous and its
// acceleration at most 12.4 units/s². Every frame the owner observes the
// true state; each update it sends is encoded with AppendUpdate, put
// through Network, and at the first frame at or after its arrival decoded
// with ParseUpdate and handed to every receiver. Each receiver's displayed
// position is then compared with the true position. Metrics count frames
// from the first one a receiver displays.
func RunScenario(cfg ScenarioConfig) map[Method]Metrics {
	if cfg.Duration == 0 {
		cfg.Duration = 60 * time.Second
	}
	if cfg.FrameRate == 0 {
		cfg.FrameRate = 60
	}
	type datagram struct {
		arrive time.Duration
		n      int
		bytes  []byte
	}
	var (
		path      = NewPath(cfg.Seed)
		owner     = NewOwner[Vec2](cfg.Owner)
		receivers [Cubic + 1]*Receiver[Vec2]
		meters    [Cubic + 1]Meter[Vec2]
		inflight  []datagram
		arrived   []datagram
		sent      int
	)
	for m := range receivers {
		receivers[m] = NewReceiver[Vec2](Smoothing{Predictor: cfg.Owner.Predictor, Method: Method(m), Converge: cfg.Converge})
	}
	frames := int(cfg.Duration * time.Duration(cfg.FrameRate) / time.Second)
	for i := 0; i <= frames; i++ {
		now := time.Duration(i) * time.Second / time.Duration(cfg.FrameRate)
		truth := path.Advance(now)
		if u, ok := owner.Observe(truth); ok {
			delay, lost := time.Duration(0), false
			if cfg.Network != nil {
				delay, lost = cfg.Network(sent, now)
			}
			if !lost {
				inflight = append(inflight, datagram{now + max(delay, 0), sent, AppendUpdate(nil, u)})
			}
			sent++
			for m := range meters {
				meters[m].Update()
			}
		}
		arrived = arrived[:0]
		inflight = slices.DeleteFunc(inflight, func(d datagram) bool {
			if d.arrive <= now {
				arrived = append(arrived, d)
				return true
			}
			return false
		})
		slices.SortFunc(arrived, func(a, b datagram) int {
			return cmp.Or(cmp.Compare(a.arrive, b.arrive), cmp.Compare(a.n, b.n))
		})
		for _, d := range arrived {
			u, err := ParseUpdate[Vec2](d.bytes)
			if err != nil {
				panic("reckon: scenario update does not decode: " + err.Error())
			}
			for _, r := range receivers {
				r.Receive(now, u)
			}
		}
		for m, r := range receivers {
			if r.Started() {
				meters[m].Frame(now, r.At(now).Pos, truth.Pos)
			}
		}
	}
	out := make(map[Method]Metrics, len(meters))
	for m := range meters {
		out[Method(m)] = meters[m].Metrics()
	}
	return out
}

// Path is a smooth, changing 2D motion from a seed: segments of random
// length, each with its own turn rate and acceleration, integrated with the
// midpoint rule in steps of at most pathStep. The scenario's owner follows
// one, and games use it to move a cursor or a camera in demos. Two Paths
// with the same seed move the same way. A Path is not safe for concurrent
// use.
type Path struct {
	rng            splitmix
	at             time.Duration
	pos            Vec2
	heading, speed float64
	turn, accel    float64       // of the current segment
	segmentEnd     time.Duration // when it ends
}

// NewPath returns the path of seed, starting at the origin at time 0.
func NewPath(seed uint64) *Path {
	p := &Path{rng: splitmix{seed}}
	p.heading = 2 * math.Pi * p.rng.float()
	p.speed = pathMinSpeed + (pathMaxSpeed-pathMinSpeed)*p.rng.float()
	p.segment()
	return p
}

// segment draws the next segment's turn rate, acceleration and length.
func (p *Path) segment() {
	p.turn = 0
	if p.rng.float() >= 1.0/3 {
		p.turn = pathMaxTurn * (2*p.rng.float() - 1)
	}
	p.accel = pathMaxAccel * (2*p.rng.float() - 1)
	length := pathMinSegment + time.Duration(p.rng.float()*float64(pathMaxSegment-pathMinSegment))
	p.segmentEnd = p.at + length
}

// Advance moves the path on to time to and returns its state there. Time
// never goes back: an earlier to returns the current state.
func (p *Path) Advance(to time.Duration) State2 {
	for p.at < to {
		step := min(to-p.at, p.segmentEnd-p.at, pathStep)
		dt := step.Seconds()
		accel := p.accel
		if next := p.speed + accel*dt; next > pathMaxSpeed || next < pathMinSpeed {
			accel = 0
		}
		h := p.heading + p.turn*dt/2
		s := p.speed + accel*dt/2
		p.pos = p.pos.Add(Vec2{math.Cos(h), math.Sin(h)}.Scale(s * dt))
		p.heading += p.turn * dt
		p.speed += accel * dt
		p.at += step
		if p.at == p.segmentEnd {
			p.segment()
		}
	}
	dir := Vec2{math.Cos(p.heading), math.Sin(p.heading)}
	normal := Vec2{-dir.Y, dir.X}
	accel := p.accel
	if next := p.speed + accel*pathStep.Seconds(); next > pathMaxSpeed || next < pathMinSpeed {
		accel = 0
	}
	return State2{
		Pos: p.pos,
		Vel: dir.Scale(p.speed),
		Acc: dir.Scale(accel).Add(normal.Scale(p.speed * p.turn)),
		At:  p.at,
	}
}

// splitmix is SplitMix64 (Steele, Lea and Flood), enough for drawing paths.
type splitmix struct{ state uint64 }

func (r *splitmix) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// float returns a number uniform in [0, 1).
func (r *splitmix) float() float64 { return float64(r.next()>>11) / (1 << 53) }
