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

// InputHash returns the FNV-1a 64 hash of a bucket: its frame, then each
// command's slot, sequence number, payload length and payload, integers
// little-endian (frame 8 bytes, slot 1, sequence 4, length 4). Members
// exchange it with state hashes to tell diverged inputs from diverged states.
func InputHash(frame bucket.Frame, cmds []bucket.Command) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64, n int) {
		for i := range n {
			h ^= (v >> (8 * i)) & 0xff
			h *= 1099511628211
		}
	}
	mix(uint64(frame), 8)
	for _, c := range cmds {
		mix(uint64(c.Slot), 1)
		mix(uint64(c.Seq), 4)
		mix(uint64(len(c.Payload)), 4)
		for _, b := range c.Payload {
			h ^= uint64(b)
			h *= 1099511628211
		}
	}
	return h
}

// StepBucket steps sim with one bucket of Core.Ready, hashes the state
// (with its sections when sim is a SectionHasher, appended to sections[:0])
// and reports the hashes to core with Core.Stepped: the whole of a caller's
// duty for each bucket, so that no caller can forget desync reporting. It
// returns the state hash and the sections slice for reuse.
func StepBucket(core *Core, sim Simulation, b Bucket, sections []Section) (uint64, []Section) {
	sim.Step(b.Frame, b.Commands)
	hash := sim.Hash()
	sections = sections[:0]
	if sh, ok := sim.(SectionHasher); ok {
		sections = sh.SectionHashes(sections)
	}
	core.Stepped(b.Frame, hash, sections)
	return hash, sections
}

// Snapshotter is an optional interface of a Simulation that saves and
// restores its whole state as bytes. With it, a member that rejoins or
// joins late loads a checkpoint other members vouched for (its state hash)
// and steps only the buckets since, instead of every bucket from frame 0.
type Snapshotter interface {
	// AppendSnapshot appends the whole state after the last Step and
	// returns the extended slice.
	AppendSnapshot(dst []byte) []byte
	// Restore replaces the state with one AppendSnapshot saved, of a
	// simulation made with the same configuration. It returns an error
	// for data it cannot read; the state is then unspecified.
	Restore(data []byte) error
}
