package cursor

import (
	"time"

	"github.com/phalanx-net/phalanx/reckon"
)

// Truths moves every member's true cursor path of a session once per time
// for all the shares of one process given it (Config.Truths), instead of
// each share moving every path itself: a run that simulates every member's
// share in one process (phalanx sim) moves members² paths a frame without
// it. The states it returns are those each share would compute alone. It
// is not safe for concurrent use: the shares given one Truths run on one
// goroutine.
type Truths struct {
	paths  []*reckon.Path
	states []reckon.State2
	worlds []reckon.Vec2 // each state's position on the map (Share.world)
	bases  []reckon.Vec2
	at     time.Duration
	moved  bool
}

// NewTruths returns the truths of a session of seed with members members.
func NewTruths(seed uint64, members int) *Truths {
	t := &Truths{states: make([]reckon.State2, members), worlds: make([]reckon.Vec2, members)}
	for m := range members {
		t.paths = append(t.paths, reckon.NewPath(PathSeed(seed, m)))
		t.bases = append(t.bases, Base(m, members))
	}
	return t
}

// At returns every member's true cursor state at now, by slot. The slice
// is reused: it is valid until the next call with another time. Times
// never go back.
func (t *Truths) At(now time.Duration) []reckon.State2 {
	states, _ := t.atWorld(now)
	return states
}

// atWorld is At that also returns where each state's position lies on the
// map (world), valid as long as the states.
func (t *Truths) atWorld(now time.Duration) ([]reckon.State2, []reckon.Vec2) {
	if !t.moved || now != t.at {
		for m, p := range t.paths {
			t.states[m] = p.Advance(now)
			t.worlds[m] = onMap(t.states[m].Pos, t.bases[m])
		}
		t.at, t.moved = now, true
	}
	return t.states, t.worlds
}
