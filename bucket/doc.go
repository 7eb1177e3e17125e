// Package bucket is the vocabulary of lockstep scheduling that a game sees:
// frames, member slots and commands.
//
//   - A [Frame] is one simulation step. Frames are numbered from 0.
//   - A [Slot] names a member by its index in the sorted member list.
//   - A [Command] is one opaque payload a member issued, stamped with the frame
//     it executes on and the member's sequence number (0, 1, 2, ...).
//   - Frame f's bucket is every command stamped f, ordered by slot, then
//     sequence: what every member's simulation steps for frame f.
//
// The engine's own structures (command streams, seals, the delay policy)
// are internal to the module.
package bucket
