package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStartSlack: a process startSlack starts runs with the slack given,
// and the starting thread gets its own slack back.
func TestStartSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
	if errno != 0 {
		t.Skipf("prctl(PR_GET_TIMERSLACK): %v", errno)
	}
	if _, err := exec.LookPath("cat"); err != nil {
		t.Skipf("no cat to read the child's slack with: %v", err)
	}
	if _, err := os.Stat("/proc/self/timerslack_ns"); err != nil {
		t.Skipf("this kernel does not show a thread's timer slack: %v", err)
	}
	for _, slack := range []time.Duration{memberTimerSlack, 3 * time.Millisecond} {
		cmd := exec.Command("cat", "/proc/self/timerslack_ns")
		var out strings.Builder
		cmd.Stdout = &out
		if err := startSlack(cmd, slack); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		got, err := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
		if err != nil || time.Duration(got) != slack {
			t.Errorf("the child's timer slack: %q (%v), want %d", out.String(), err, slack.Nanoseconds())
		}
		after, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
		if after != before {
			t.Errorf("the starting thread's slack is %d after the start, %d before", after, before)
		}
	}
}

// TestWithSlackKeepsItsThread: f runs on one thread, with the slack, even
// where it waits (a goroutine not locked to its thread may resume on
// another: it would start its child with that thread's slack, and leave
// the first thread's changed).
func TestWithSlackKeepsItsThread(t *testing.T) {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0); errno != 0 {
		t.Skipf("prctl(PR_GET_TIMERSLACK): %v", errno)
	}
	for range 20 {
		err := withSlack(memberTimerSlack, func() error {
			tid := syscall.Gettid()
			for range 50 {
				// Park until a goroutine on a thread of its own (ended
				// with it) wakes this one: unlocked, it would resume on
				// another thread.
				ch := make(chan struct{})
				go func() {
					runtime.LockOSThread()
					ch <- struct{}{}
				}()
				<-ch
				if now := syscall.Gettid(); now != tid {
					return fmt.Errorf("f moved from thread %d to %d", tid, now)
				}
				if got, _, _ := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0); time.Duration(got) != memberTimerSlack {
					return fmt.Errorf("f's thread has slack %d ns, want %d", got, memberTimerSlack.Nanoseconds())
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
