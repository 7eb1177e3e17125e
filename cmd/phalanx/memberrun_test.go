package main

import (
	"testing"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/peer"
)

// TestMemberStepsWhileParentReadsNothing: a parent that reads nothing of
// a member process's standard output (a full pipe, the view lines of
// mesh --ui included) holds up the goroutine that prints, never the
// stepping one: the session goes on.
func TestMemberStepsWhileParentReadsNothing(t *testing.T) {
	w := &stuckWriter{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(w.release)
	r := &memberRun{mf: &memberFlags{runFlags: runFlags{frames: 100}, mesh: true, uiFeed: true, perturb: -1}, stdout: w, sess: &peer.Agreement{}}
	r.batch.Execs = append(r.batch.Execs, [3]int64{1, 0, 1})
	go r.flushCmds()
	<-w.entered // the print is stuck in its write
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for f := range bucket.Frame(10) {
			r.onStep(f, []bucket.Command{{Slot: 1, Seq: uint32(f), Frame: f}}, 0)
		}
	}()
	select {
	case <-stepped:
	case <-time.After(30 * time.Second): // a deadlock's timeout, not a goal
		t.Fatal("stepping waited for the parent to read the member's output")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.batch.Execs) != 10 {
		t.Errorf("%d executions batched while the print was stuck, want 10", len(r.batch.Execs))
	}
}

// stuckWriter is a pipe nobody reads: its first Write closes entered and
// waits until release is closed.
type stuckWriter struct{ entered, release chan struct{} }

func (w *stuckWriter) Write(p []byte) (int, error) {
	select {
	case <-w.entered:
	default:
		close(w.entered)
	}
	<-w.release
	return len(p), nil
}
