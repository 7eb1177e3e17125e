// Package cmdstream holds the lockstep engine's command streams: each
// member's commands in sequence order with its seal ([Stream]), every
// member's stream as one member knows them, which frames are ready and what
// their buckets hold ([Table]), and how far ahead a command may reach
// ([Window]).
//
// Nothing here does I/O, reads a clock or starts a goroutine; the lockstep
// engine owns these values and is the only one to mutate them. The
// vocabulary they are made of (frames, slots, commands) is package bucket's.
//
//   - A member's [Stream] is its commands in sequence order. Frames never
//     decrease along a stream.
//   - The stream's seal is the member's promise that no further command of it
//     will carry a frame at or below the seal. Seals only grow.
//   - Frame f is ready when every live member's seal is at least f; its
//     bucket is every command stamped f, ordered by slot, then sequence.
package cmdstream
