// Package gameclock is a helper package, not marked, that reads the clock
// and the machine.
package gameclock

import (
	"runtime"
	"time"
)

// Elapsed returns the seconds since start.
func Elapsed(start time.Time) int64 { // want Elapsed:`clock: via gameclock.Elapsed: time.Since`
	return int64(time.Since(start) / time.Second)
}

// Workers returns how many workers to start.
func Workers() int { // want Workers:`env: via gameclock.Workers: runtime.NumCPU`
	return runtime.NumCPU()
}

// Frames converts a frame count to a duration: no fact.
func Frames(n int) time.Duration { return time.Duration(n) * 50 * time.Millisecond }
