// Package bucket holds the pure data structures of lockstep scheduling:
// per-member command streams with their seals, per-frame buckets in canonical
// order, readiness of a frame, window bounds, and the adaptive delay policy.
//
// Nothing here does I/O, reads a clock or starts a goroutine; the lockstep
// engine owns these values and is the only one to mutate them.
//
// Vocabulary:
//
//   - A [Frame] is one simulation step. Frames are numbered from 0.
//   - A [Slot] names a member by its index in the sorted member list.
//   - A [Command] is one opaque payload a member issued, stamped with the frame
//     it executes on and the member's sequence number (0, 1, 2, ...).
//   - A member's [Stream] is its commands in sequence order. Frames never
//     decrease along a stream.
//   - The stream's seal is the member's promise that no further command of it
//     will carry a frame at or below the seal. Seals only grow.
//   - Frame f is ready when every live member's seal is at least f; its
//     [Bucket] is every command stamped f, ordered by slot, then sequence.
package bucket
