//phalanx:deterministic

// Package chanops exercises the chan rule.
package chanops

type Queue chan int

func Ops(q Queue) int {
	ch := make(chan int, 1) // want `make\(chan\): channels synchronise goroutines`
	ch <- 1                 // want `channel send: delivery depends on goroutine scheduling \[chan\]`
	v := <-ch               // want `channel receive`
	for w := range q {      // want `range over channel`
		v += w
	}
	close(ch) // want `close of channel`
	s := make([]int, 3)
	return v + len(s)
}

func Drain[C ~chan int](c C) int {
	n := 0
	for v := range c { // want `range over channel`
		n += v
	}
	return n
}
