// Package unmarked is not marked: nothing in it is reported (its
// functions get facts), and no
// directive in it is wrong. It mentions phalanx: allows games to play.
package unmarked

// Phalanx: deterministic lockstep, in prose, is no directive.
// phalanx runs games; neither is this.

import (
	"math/rand"
	"time"
)

func Step(m map[string]float64) float64 { // want Step:`maprange: via unmarked.Step: range over map.*clock: via unmarked.Step: time.Now.*rand: via unmarked.Step: rand.Float64`
	s := 0.0
	for _, v := range m {
		s += v * rand.Float64()
	}
	go func() {}()
	_ = time.Now()
	return s
}
