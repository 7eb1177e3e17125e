//go:build windows

package main

import (
	"os"
	"syscall"
	"time"
)

// canFreeze says whether --freeze can stop a process here: Windows has no
// SIGSTOP.
const canFreeze = false

// cpuSeconds returns the CPU time this process has used, user and kernel.
func cpuSeconds() float64 {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var created, exited, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0
	}
	// A Filetime counts 100-nanosecond intervals (Filetime.Nanoseconds
	// would take the 1601 epoch off: right for a date, not a duration).
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100).Seconds()
}

// freeze is never called on Windows: --freeze is refused (canFreeze).
func freeze(*os.Process, time.Duration) {}
