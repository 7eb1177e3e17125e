package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
	"github.com/phalanx-net/phalanx/netsim"
)

// runFlags are the flags phalanx sim and phalanx mesh share: the command
// line's contract (README.md, docs/architecture.md).
type runFlags struct {
	peers   int
	frames  int
	seed    uint64
	profile string
	json    bool
	sim     string
	frameMS int
	delay   int
	budget  int
	policy  string
	record  string // directory of the replays to write, or ""
	// transport is "datagram" or "stream" (locksteptest.Transport*): in
	// virtual time the harness's stream model, over real sockets
	// peer.ModeStream.
	transport string
	unsigned  bool // members sign and check no statements
}

func (f *runFlags) register(fs *flag.FlagSet, peers, frames int) {
	fs.IntVar(&f.peers, "peers", peers, "number of members: 1 to 64 (--sim rts: 1 to 16)")
	fs.IntVar(&f.frames, "frames", frames, "frames to play")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the game, the generators and the network")
	fs.StringVar(&f.profile, "profile", "broadband", "network profile: lan, broadband, intercontinental, bad, modem, phased (broadband, bad, broadband, two minutes each), or a profile file")
	fs.BoolVar(&f.json, "json", false, "print one JSON object as the last line")
	fs.StringVar(&f.sim, "sim", "rts", "simulation: rts (examples/rts) or null (hashes what it steps)")
	fs.IntVar(&f.frameMS, "frame-ms", 50, "frame length in milliseconds")
	fs.IntVar(&f.delay, "delay", 0, "stamp commands this many frames ahead instead of adapting (0: adaptive; the same as --policy fixed:N)")
	fs.StringVar(&f.policy, "policy", "adaptive", "scheduling policy: adaptive, aoe (200 ms turns, two ahead), bucket-rtt (turns of one RTT, one ahead) or fixed:N (N frames ahead)")
	fs.IntVar(&f.budget, "budget", -1, "upload budget per member in bytes/s (-1: the profile's uplink cap, 0: none)")
	fs.StringVar(&f.record, "record", "", "write each member's replay to `DIR`/member-N.phx (creating DIR)")
	fs.BoolVar(&f.unsigned, "unsigned", false, "members sign nothing and check no signatures (by default each signs its command stream; the difference is the cost)")
	fs.StringVar(&f.transport, "transport", locksteptest.TransportDatagram, "how lockstep packets travel: datagram (Phalanx: unreliable datagrams) or stream (the baseline: a reliable ordered stream per pair of members; a TCP-like model in virtual time, a QUIC stream over real sockets)")
}

func (f *runFlags) check() error {
	switch {
	case f.peers < 1 || f.peers > 64:
		return fmt.Errorf("--peers %d: want 1..64", f.peers)
	case f.sim == "rts" && f.peers > rts.MaxPlayers:
		return fmt.Errorf("--peers %d: the rts simulation takes 1..%d players (--sim null takes up to 64)", f.peers, rts.MaxPlayers)
	case f.frames < 1:
		return fmt.Errorf("--frames %d: want at least 1", f.frames)
	case f.frameMS < 1 || f.frameMS > 1000:
		return fmt.Errorf("--frame-ms %d: want 1..1000", f.frameMS)
	case f.delay < 0:
		return fmt.Errorf("--delay %d: want 0 (adaptive) or more", f.delay)
	}
	if _, err := parsePolicy(f.policy, time.Duration(f.frameMS)*time.Millisecond); err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	switch f.transport {
	case locksteptest.TransportDatagram, locksteptest.TransportStream:
	default:
		return fmt.Errorf("--transport %q: want datagram or stream", f.transport)
	}
	return nil
}

// loadProfile resolves a profile name or a profile file.
func loadProfile(name string) (netsim.Profile, error) {
	p, err := netsim.Named(name)
	if errors.Is(err, netsim.ErrUnknownProfile) {
		p, ferr := netsim.LoadProfile(name)
		if ferr == nil {
			return p, nil
		}
		return p, fmt.Errorf("%w; as a file: %w", err, ferr)
	}
	return p, err
}

// uplinkCap returns the smallest uplink cap of the profile's phases, or 0.
func uplinkCap(p netsim.Profile) int {
	capacity := 0
	for _, ph := range p.Phases {
		if bw := int(ph.Bandwidth); bw > 0 && (capacity == 0 || bw < capacity) {
			capacity = bw
		}
	}
	return capacity
}

// harnessConfig returns the virtual run the flags ask for, of game g.
func (f *runFlags) harnessConfig(profile netsim.Profile, g *game) locksteptest.Config {
	return locksteptest.Config{
		Members:   f.peers,
		Frames:    f.frames,
		Seed:      f.seed,
		Profile:   profile,
		Core:      f.coreConfig(profile),
		NewSim:    g.newSim,
		Commands:  g.commands,
		Transport: f.transport,
		Unsigned:  f.unsigned,
		// The same run with the simulations stepping beside the rest; a
		// null simulation's step costs less than handing it over.
		Parallel: f.sim != "null",
		// The members' cores side by side within windows shorter than
		// a one-way delay (the same run); off with Parallel stepping.
		Windows: true,
	}
}

// coreConfig returns the core configuration the flags ask for.
func (f *runFlags) coreConfig(p netsim.Profile) lockstep.Config {
	budget := f.budget
	if budget < 0 {
		budget = uplinkCap(p)
	}
	frame := time.Duration(f.frameMS) * time.Millisecond
	policy, _ := parsePolicy(f.policy, frame) // checked by check
	if f.delay > 0 {
		policy = lockstep.Fixed{Frames: f.delay}
	}
	cfg := lockstep.Config{
		Frame:  frame,
		Policy: policy,
		Budget: budget,
	}
	if f.transport == locksteptest.TransportStream {
		cfg = lockstep.ReliableCarrier(cfg)
	}
	return cfg
}

// applyTo sets the policy, budget and timeouts of the flags on c, a
// member's core configuration, leaving what the lobby agreed (members,
// slot, session tag, start, frame length, initial delay, open slots) and the member's
// signing as they are, but for --unsigned.
func (f *runFlags) applyTo(c *lockstep.Config, p netsim.Profile) {
	own := f.coreConfig(p)
	own.Members, own.Self, own.Session, own.Start, own.Frame, own.InitialDelay = c.Members, c.Self, c.Session, c.Start, c.Frame, c.InitialDelay
	own.Open = c.Open
	own.Logger, own.Signer, own.Verifier = c.Logger, c.Signer, c.Verifier
	if f.unsigned {
		own.Signer, own.Verifier = nil, nil
	}
	*c = own
}
