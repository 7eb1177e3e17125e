//phalanx:deterministic

// Package goroutine exercises the goroutine rule.
package goroutine

func Spawn(f func()) {
	go f()      // want `go statement: goroutine scheduling is not deterministic \[goroutine\]`
	go func() { // want `go statement`
		f()
	}()
}
