package main

import (
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
