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
// nothing due and sleeps 1 ms more, waking twice per timer, and a timer
// fires up to a millisecond late anyway. With a slack of a millisecond
// the first sleep ends at 25 ms at the latest, when the timer is due: one
// wake-up instead of two, at the same moment the second one came before
// (a timer less than a millisecond away, which the runtime already waits
// a whole millisecond for, can now be up to 2 ms late). That cuts a lan
// member's context switches by about a fifth (docs/benchmarks.md, "Timer
// slack").
const memberTimerSlack = time.Millisecond

// Operations of prctl(2) (linux/prctl.h).
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// startSlack starts cmd with the timer slack slack: a process inherits the
// slack of the thread that starts it, and each thread the slack of the
// thread that creates it, so cmd's threads all run with it. It starts cmd
// from a thread of its own whose slack it sets for the start and restores
// after; where the slack cannot be set, cmd starts with the default.
func startSlack(cmd *exec.Cmd, slack time.Duration) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 {
		return cmd.Start()
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, uintptr(slack.Nanoseconds()), 0); errno != 0 {
		return cmd.Start()
	}
	defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, old, 0)
	return cmd.Start()
}
