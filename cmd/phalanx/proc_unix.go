//go:build unix

package main

import (
	"os"
	"syscall"
	"time"
)

// canFreeze says whether --freeze can stop a process here: with SIGSTOP.
const canFreeze = true

// cpuSeconds returns the CPU time this process has used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// freeze stops p at once (SIGSTOP) and continues it (SIGCONT) after d.
func freeze(p *os.Process, d time.Duration) {
	_ = p.Signal(syscall.SIGSTOP)
	time.AfterFunc(d, func() { _ = p.Signal(syscall.SIGCONT) })
}
