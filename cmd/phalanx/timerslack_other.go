//go:build !linux

package main

import (
	"os/exec"
	"time"
)

// memberTimerSlack is the timer slack of the processes startProc starts
// on Linux; elsewhere there is none to set.
const memberTimerSlack = time.Millisecond

// startSlack starts cmd: only Linux has a timer slack to set.
func startSlack(cmd *exec.Cmd, _ time.Duration) error { return cmd.Start() }
