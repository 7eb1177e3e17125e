// Package replay records, reads and verifies Phalanx replay files: the
// complete record needed to re-run a lockstep session and prove that it
// matches.
//
// A replay holds a header (what was played: engine and simulation versions,
// members, frame length, seed), then every frame's bucket in execution order,
// membership changes, periodic state hashes (with the simulation's section
// hashes when it has them), and a fixed-size trailer with the last frame, the
// final state hash and why the recording ended. docs/replay-format.md in the
// repository specifies the format byte by byte.
//
// The body is written in chunks, each with its length and a CRC-32C, so a
// session that crashes leaves a replay that is readable up to its last whole
// chunk. A [Writer] writes a chunk whenever [Writer.Flush] is called (a
// session calls it once a turn) and at least every few frames
// ([Writer.SetFlushFrames]).
//
// A [Reader] streams a replay record by record; [ReadTrailer] finds the
// trailer from the end of a file without reading the body; [OpenFile] does
// both. [Verify] re-runs a replay through a [lockstep.Simulation] and reports
// the first checkpoint whose state hash differs.
//
// Damaged input never makes the reader panic. Errors wrap the package's
// sentinel errors (check them with errors.Is) and say where the damage is:
// the byte offset, the chunk, and the last frame read intact.
//
// Nothing in this package is safe for concurrent use, except that distinct
// values may be used from distinct goroutines.
package replay
