// Command phalanx runs Phalanx sessions, checks determinism and verifies replays.
//
// Usage:
//
//	phalanx <command> [flags]
//
// Commands:
//
//	bench    compare scheduling policies and transports on every network profile
//	mesh     run members as separate processes over real QUIC on loopback
//	peer     run one member over real QUIC, joining the others by multiaddr
//	relay    run a meeting point for members behind NATs: a circuit relay and a lobby directory
//	replay   verify and inspect replay files
//	sim      run members over the virtual network (virtual time, seeded, no sockets)
//	vet      report non-deterministic code in packages marked //phalanx:deterministic
//
// Run "phalanx <command> -h" for the flags of one command.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// command is one subcommand of the CLI. run returns the process exit code.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands maps each subcommand name to its implementation. Each file of this
// package that adds a subcommand registers it in this table.
var commands = map[string]command{
	"bench":  {"compare scheduling policies and transports on every network profile", runBench},
	"mesh":   {"run members as separate processes over real QUIC on loopback", runMesh},
	"member": {"(internal) one member process of phalanx mesh", runMemberChild},
	"peer":   {"run one member over real QUIC, joining the others by multiaddr", runPeer},
	"relay":  {"run a meeting point for members behind NATs: a circuit relay and a lobby directory", runRelay},
	"replay": {"verify and inspect replay files", runReplay},
	"sim":    {"run members over the virtual network (virtual time, seeded, no sockets)", runSim},
	"vet":    {"report non-deterministic code in packages marked //phalanx:deterministic", runVet},
	"watch":  {"watch a running session as a spectator over real QUIC", runWatch},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "phalanx: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: phalanx <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for name, c := range commands {
		if !strings.HasPrefix(c.summary, "(internal)") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `run "phalanx <command> -h" for the flags of one command`)
}

// newFlagSet returns the flag set of the command called name, writing to
// stderr. Its usage message is "usage: " and usage, a blank line, the
// lines of about, a blank line and the flags.
func newFlagSet(name, usage string, stderr io.Writer, about ...string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: %s\n\n", usage)
		for _, l := range about {
			fmt.Fprintln(stderr, l)
		}
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses a command's flags, refuses positional arguments and runs
// check. It returns -1 when the command should go on, or the exit code: 0
// after -h, 2 after a usage error (printed to the flag set's output).
func parseFlags(fs *flag.FlagSet, args []string, check func() error) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2
	}
	if err := check(); err != nil {
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		return 2
	}
	return -1
}

// atFlag defines the repeatable flag name of "N@FRAME" values and returns
// them by N (a later value for an N replaces the earlier); want names the
// form in the error an ill-formed value gets.
func atFlag(fs *flag.FlagSet, name, usage, want string) map[int]int64 {
	at := map[int]int64{}
	fs.Func(name, usage, func(v string) error {
		n, frame, ok := indexAt(v)
		if !ok {
			return fmt.Errorf("want %s", want)
		}
		at[n] = frame
		return nil
	})
	return at
}

// indexAt parses "N@FRAME", N and FRAME whole numbers not below zero.
func indexAt(v string) (n int, frame int64, ok bool) {
	i, fr, ok := strings.Cut(v, "@")
	n, err1 := strconv.Atoi(i)
	frame, err2 := strconv.ParseInt(fr, 10, 64)
	return n, frame, ok && err1 == nil && err2 == nil && n >= 0 && frame >= 0
}
