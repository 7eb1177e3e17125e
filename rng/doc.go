// Package rng is the shared pseudo-random number generator of a Phalanx
// session: PCG32 (PCG-XSH-RR with 64-bit state), bit-for-bit compatible with
// the reference C implementation by Melissa O'Neill.
//
// Every member of a session draws from the same generator, seeded from a seed
// the members agree on (see [SharedSeed]), so every draw must be reproducible
// on every machine and in every language a member may be written in. For that
// reason each method documents exactly how many 32-bit outputs it consumes and
// how it maps them to its result; a port that follows those paragraphs
// produces the same values.
//
// A [PCG] is a small value (16 bytes). It is not safe for concurrent use; a
// simulation owns its generator and steps it from one goroutine. Independent
// streams for separate purposes (damage rolls, map generation, a player's AI)
// come from [PCG.Derive], which does not disturb the parent.
package rng
