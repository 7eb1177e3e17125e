package peer

import (
	"context"
	"time"

	"github.com/phalanx-net/phalanx/bucket"
)

// drive feeds the Input hook at the frame clock's pace until the last frame
// is stepped (nil), Close is called (nil), the session's Run returns
// (errRunEnded) or ctx ends. It sleeps until the next frame begins, not on
// a ticker of its own: the session wakes at the frame's start as well, so
// the process wakes once for both.
func (m *Member) drive(ctx context.Context, sess *Agreement, runDone <-chan struct{}) error {
	var tick <-chan time.Time
	var timer *time.Timer
	if m.cfg.Input != nil {
		timer = time.NewTimer(0)
		defer timer.Stop()
		tick = timer.C
	}
	next := bucket.Frame(0)
	end := m.end()
	for {
		select {
		case <-m.ended:
			return nil
		case <-m.stop:
			return nil
		case <-runDone:
			return errRunEnded
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
		}
		now := time.Since(sess.Start)
		from := bucket.Frame(m.inputFrom.Load())
		if from >= end {
			timer.Reset(sess.Frame()) // a member coming back, not admitted yet: no input
			continue
		}
		next = max(next, from)
		for ; now >= 0 && next <= bucket.Frame(now/sess.Frame()) && next < end; next++ {
			for _, p := range m.cfg.Input(next) {
				if err := m.Submit(p); err != nil {
					m.log.Warn("peer: input refused", "frame", next, "err", err)
				}
			}
		}
		if next < end {
			timer.Reset(frameStart(sess, next))
		}
	}
}

// frameStart returns how long until frame f of sess begins (0 if it has).
func frameStart(sess *Agreement, f bucket.Frame) time.Duration {
	return max(time.Until(sess.Start.Add(time.Duration(f)*sess.Frame())), 0)
}
