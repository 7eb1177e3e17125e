//phalanx:deterministic

// Package env exercises the env rule.
package env

import (
	"io/ioutil"
	"os"
	"syscall" // want `import of syscall`
)

func Read() int {
	n := len(os.Getenv("HOME"))   // want `os.Getenv reads the environment or file system, which differs between peers \[env\]`
	_, _ = os.LookupEnv("X")      // want `os.LookupEnv`
	n += len(os.Environ())        // want `os.Environ`
	_, _ = os.ReadFile("f")       // want `os.ReadFile`
	_, _ = os.Open("f")           // want `os.Open`
	_, _ = os.OpenFile("f", 0, 0) // want `os.OpenFile`
	_, _ = os.ReadDir(".")        // want `os.ReadDir`
	_, _ = os.Stat("f")           // want `os.Stat`
	n += len(os.Args)             // want `os.Args`
	_, _ = ioutil.ReadFile("f")   // want `ioutil.ReadFile reads outside the simulation`
	_, _ = os.Hostname()          // want `os.Hostname`
	n += os.Getpid()              // want `os.Getpid`
	n += syscall.Getpid()         // want `syscall.Getpid: system calls read state`
	os.Stdout.WriteString("ok")   // writing is not reading
	return n
}
