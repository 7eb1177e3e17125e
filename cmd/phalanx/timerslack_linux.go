package main

import (
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// memberTimerSlack is the timer slack (prctl PR_SET_TIMERSLACK) of the
// processes startProc starts: how much later than asked the kernel may
// end a thread's timed sleep, so that it can end several at once. The Go
// runtime sleeps for its next timer in epoll_pwait, whose timeout is in
// whole milliseconds, rounded down: with the kernel's default slack of
// 50 µs, a member woken by a timer 24.6 ms away wakes at 24 ms, finds
// nothing due and sleeps 1 ms more, waking twice per timer. With a slack
// of a millisecond the first sleep may end up to 25 ms, at or after the
// timer is due, so it usually wakes once; the cost is that any timer may
// fire up to about 2 ms late instead of 1. That cuts a lan member's
// context switches by about a fifth and its CPU by up to a tenth
// (docs/benchmarks.md, "Timer slack").
const memberTimerSlack = time.Millisecond

// Operations of prctl(2) (linux/prctl.h).
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// startSlack starts cmd with the timer slack slack: a process inherits the
// slack of the thread that starts it, and each thread the slack of the
// thread that creates it, so cmd's threads all run with it. Where the
// slack cannot be set, cmd starts with the calling thread's.
func startSlack(cmd *exec.Cmd, slack time.Duration) error {
	return withSlack(slack, cmd.Start)
}

// withSlack calls f on one thread, the calling goroutine locked to it,
// with that thread's timer slack set to slack for the call and set back
// after (best effort: prctl does not fail to set a slack it has read).
// Where the slack cannot be set, f runs with the thread's own. While a
// goroutine is locked to its thread, the Go runtime starts any new thread
// from a template thread of its own, so none inherits the slack.
func withSlack(slack time.Duration, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 {
		return f()
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(slack.Nanoseconds()), 0); errno != 0 {
		return f()
	}
	defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, old, 0)
	return f()
}
