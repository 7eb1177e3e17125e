package rts

import (
	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/determinism"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Sim runs a World under the lockstep engine: it implements
// lockstep.Simulation and lockstep.SectionHasher. Each bucket's commands
// become Inputs in the bucket's order, the member's slot being the player.
//
// The state is hashed once per frame: Hash and SectionHashes share the
// sections written by HashSections. A Sim is not safe for concurrent use.
type Sim struct {
	world  *World
	inputs []Input
	hasher *determinism.Hasher
	secs   []determinism.SectionHash
	hashed bool // the hasher holds the current state's sections
}

// NewSim returns a Sim running a new World of cfg.
func NewSim(cfg Config) (*Sim, error) {
	w, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Sim{world: w, hasher: determinism.NewHasher()}, nil
}

// World returns the world the Sim steps.
func (s *Sim) World() *World { return s.world }

// Step applies the bucket's commands and advances the world one tick.
func (s *Sim) Step(_ bucket.Frame, cmds []bucket.Command) {
	s.inputs = s.inputs[:0]
	for _, c := range cmds {
		s.inputs = append(s.inputs, Input{Player: int(c.Slot), Data: c.Payload})
	}
	s.world.Step(s.inputs)
	s.hashed = false
}

// Perturb alters the world as World.Perturb does (for desync tests).
func (s *Sim) Perturb(r uint64) {
	s.world.Perturb(r)
	s.hashed = false
}

func (s *Sim) hash() {
	if !s.hashed {
		s.hasher.Reset()
		s.world.HashSections(s.hasher)
		s.hashed = true
	}
}

// Hash returns the world's state hash, equal to World.Hash.
func (s *Sim) Hash() uint64 {
	s.hash()
	return s.hasher.Sum64()
}

// SectionHashes appends the hashes of the world's sections ("frame", "map",
// "units", "rng", "players").
func (s *Sim) SectionHashes(dst []lockstep.Section) []lockstep.Section {
	s.hash()
	s.secs = s.hasher.AppendSections(s.secs[:0])
	for _, sec := range s.secs {
		dst = append(dst, lockstep.Section{Name: sec.Name, Hash: sec.Hash})
	}
	return dst
}
