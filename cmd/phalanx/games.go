package main

import (
	"fmt"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/examples/rts"
	"github.com/phalanx-net/phalanx/lockstep"
	"github.com/phalanx-net/phalanx/lockstep/locksteptest"
)

// game is a simulation the CLI can run: a factory for every member's copy
// and each member's command generator.
type game struct {
	perturb  func(slot bucket.Slot, sim lockstep.Simulation) // alters a member's state, for --perturb
	name     string
	newSim   func(slot bucket.Slot) lockstep.Simulation
	commands func(slot bucket.Slot, frame bucket.Frame) [][]byte
	// version and config go into replay headers (replay.Header.SimVersion
	// and SimConfig); replaySim rebuilds the simulation from them.
	version string
	config  []byte
}

// newGame returns the named game for members players, seeded by seed.
func newGame(name string, members int, seed uint64) (*game, error) {
	switch name {
	case "rts":
		cfg := rts.DefaultConfig()
		cfg.Players = members
		cfg.Seed = seed
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("rts with %d players: %w", members, err)
		}
		gens := make([]*rts.Generator, members)
		for i := range gens {
			gens[i] = rts.NewGenerator(cfg, i, seed)
		}
		config, _ := cfg.MarshalBinary() // never fails
		return &game{
			name:    name,
			version: rts.SimVersion,
			config:  config,
			newSim: func(bucket.Slot) lockstep.Simulation {
				sim, err := rts.NewSim(cfg)
				if err != nil {
					panic(err) // cfg was validated above
				}
				return sim
			},
			commands: func(slot bucket.Slot, frame bucket.Frame) [][]byte {
				return gens[slot].Next(int64(frame))
			},
			perturb: func(slot bucket.Slot, sim lockstep.Simulation) {
				sim.(*rts.Sim).Perturb(seed + uint64(slot))
			},
		}, nil
	case "null":
		gens := make([]*nullGenerator, members)
		for i := range gens {
			gens[i] = newNullGenerator(seed, i)
		}
		return &game{
			name:    name,
			version: nullSimVersion,
			newSim:  func(bucket.Slot) lockstep.Simulation { return &locksteptest.NullSim{} },
			commands: func(slot bucket.Slot, frame bucket.Frame) [][]byte {
				return gens[slot].next(frame)
			},
			perturb: func(_ bucket.Slot, sim lockstep.Simulation) {
				sim.(*locksteptest.NullSim).Perturb()
			},
		}, nil
	}
	return nil, fmt.Errorf("unknown simulation %q (known: rts, null)", name)
}

// nullGenerator issues commands at the rts generator's rate (about 70 a
// minute, in bursts) with 12-byte payloads, for the null simulation.
type nullGenerator struct {
	state uint64
	next_ bucket.Frame
	burst int
	seq   uint32
}

func newNullGenerator(seed uint64, member int) *nullGenerator {
	return &nullGenerator{state: seed*0x9e3779b97f4a7c15 + uint64(member+1)*0xbf58476d1ce4e5b9}
}

func (g *nullGenerator) rand(n uint64) uint64 {
	// splitmix64
	g.state += 0x9e3779b97f4a7c15
	z := g.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return (z ^ z>>31) % n
}

func (g *nullGenerator) next(frame bucket.Frame) [][]byte {
	if frame < g.next_ {
		return nil
	}
	if g.burst == 0 {
		g.burst = 1 + int(g.rand(5))
	}
	g.burst--
	if g.burst == 0 {
		g.next_ = frame + 10 + bucket.Frame(g.rand(60))
	} else {
		g.next_ = frame + 2 + bucket.Frame(g.rand(7))
	}
	g.seq++
	p := make([]byte, 12)
	for i := range p {
		p[i] = byte(g.rand(256))
	}
	return [][]byte{p}
}
