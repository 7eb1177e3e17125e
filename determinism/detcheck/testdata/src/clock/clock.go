/*
Package clock exercises the clock rule.
*/
//phalanx:deterministic
package clock

import "time"

const Step = 50 * time.Millisecond

func Tick(d time.Duration) time.Duration {
	start := time.Now()              // want `time.Now reads the real clock`
	_ = time.Since(start)            // want `time.Since reads the real clock`
	_ = time.Until(start)            // want `time.Until reads the real clock`
	time.Sleep(d)                    // want `time.Sleep reads the real clock`
	_ = time.After(d)                // want `time.After reads the real clock`
	_ = time.Tick(d)                 // want `time.Tick reads the real clock`
	_ = time.NewTimer(d)             // want `time.NewTimer reads the real clock`
	_ = time.NewTicker(d)            // want `time.NewTicker reads the real clock`
	_ = time.AfterFunc(d, func() {}) // want `time.AfterFunc reads the real clock`
	now := time.Now                  // want `time.Now reads the real clock`
	_ = now
	return d + Step*2
}
