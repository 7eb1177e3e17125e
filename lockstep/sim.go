package lockstep

import "github.com/phalanx-net/phalanx/bucket"

// Simulation is what a game implements to run under Phalanx. Both methods are
// called from one goroutine, in frame order, never concurrently.
//
// Step must be deterministic: the same sequence of buckets must produce the
// same state on every member and every machine (fixed-point math, the shared
// rng, no map iteration order, no clocks; see determinism/detcheck).
type Simulation interface {
	// Step advances the simulation by one frame, applying the bucket's
	// commands in the order given (slot, then sequence). Payloads are only
	// valid during the call. A command the game cannot decode must be
	// ignored deterministically, never panic.
	Step(frame bucket.Frame, commands []bucket.Command)

	// Hash returns a hash of the whole simulation state after the last Step.
	Hash() uint64
}

// SectionHasher is an optional interface of a Simulation that hashes its
// state in named sections (units, map, rng, ...), so that a desync report can
// name the first section that differs.
type SectionHasher interface {
	// SectionHashes appends the hash of each named section, in a fixed
	// order, and returns the extended slice.
	SectionHashes(dst []Section) []Section
}

// Section is the hash of one named part of a simulation's state.
type Section struct {
	Name string
	Hash uint64
}
