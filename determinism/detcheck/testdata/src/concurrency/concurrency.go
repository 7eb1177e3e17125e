// Package concurrency exercises the goroutine, select and chan rules:
// one finding per channel, and none for a channel filled by one goroutine
// and drained in order.
//
//phalanx:deterministic
package concurrency

import "sync"

type World struct{ Sum, Count int }

// Pipeline fills a buffered channel from one goroutine that touches
// nothing else, and drains it in order: deterministic.
func Pipeline(w *World, items []int) {
	ch := make(chan int, len(items))
	go func() {
		for _, it := range items {
			ch <- it * 2
		}
		close(ch)
	}()
	for v := range ch {
		w.Sum = w.Sum*31 + v
	}
}

// Racing has two producers: the order of the values depends on scheduling.
func Racing(w *World, a, b []int) {
	ch := make(chan int) // want `make\(chan\): channels synchronise goroutines.*\[chan\]`
	go func() {          // want `go statement: goroutine scheduling is not deterministic \[goroutine\]`
		for _, v := range a {
			ch <- v
		}
	}()
	go func() { // want `go statement`
		for _, v := range b {
			ch <- v
		}
	}()
	for range len(a) + len(b) {
		w.Sum = w.Sum*31 + <-ch
	}
}

// Shared writes a captured variable from its goroutine.
func Shared(w *World, items []int) {
	done := make(chan bool, 1) // want `make\(chan\).*\[chan\]`
	go func() {                // want `go statement`
		w.Count = len(items)
		done <- true
	}()
	<-done
}

// Either picks whichever channel is ready.
func Either(w *World, a, b chan int) {
	select { // want `select statement: the ready case is chosen at random \[select\]`
	case v := <-a: // want `channel receive \(a; its other operations are not reported again\): delivery order depends on goroutine scheduling \[chan\]`
		w.Sum += v
	case v := <-b: // want `channel receive \(b;`
		w.Sum -= v
	}
	a <- 1 // a is reported once, above
}

// Drain ranges over a channel it is given.
func Drain[C ~chan int](w *World, c C) {
	for v := range c { // want `range over channel \(c;`
		w.Sum += v
	}
}

// Loop holds two channels in fields: each is reported once, apart.
type Loop struct {
	in, quit chan int
}

func (l *Loop) Run(w *World) {
	for {
		v := <-l.in // want `channel receive \(in;`
		if v < 0 {
			l.quit <- v // want `channel send \(quit;`
			return
		}
		w.Sum += <-l.in
	}
}

// Workers each write their own element of the results and signal on an
// empty channel that is drained blind: deterministic.
func Workers(w *World, in []int) []int {
	out := make([]int, len(in))
	done := make(chan struct{}, len(in))
	for i, v := range in {
		go func() {
			out[i] = square(v)
			done <- struct{}{}
		}()
	}
	for range in {
		<-done
	}
	var wg sync.WaitGroup
	for i := 0; i < len(in); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] += 1
		}()
	}
	wg.Wait()
	return out
}

func square(v int) int { return v * v }

// SharedWorkers write one shared total: the order of the additions is
// harmless for integers but the data race is not, and a worker writing
// anything but its own element is not recognised.
func SharedWorkers(w *World, in []int) {
	var wg sync.WaitGroup
	for _, v := range in {
		wg.Add(1)
		go func() { // want `go statement`
			w.Sum += v
			wg.Done()
		}()
	}
	wg.Wait()
}

// Results read from the completion channel are order-dependent.
func Results(w *World, in []int) {
	res := make(chan int, len(in)) // want `make\(chan\)`
	for i := range in {
		go func() { // want `go statement`
			res <- in[i]
		}()
	}
	for range in {
		w.Sum = w.Sum*31 + <-res
	}
}
