// Package determinism provides the building blocks a lockstep simulation needs
// to compute bit-identical results on every member: Q32.32 fixed-point numbers
// and 2-D vectors with integer-only square root and trigonometry, fixed-point
// draws from an [rng.PCG] stream, a specified state hasher for desync
// detection, and sorted iteration over maps.
//
// # Fixed-point arithmetic
//
// [Fixed] is a signed 64-bit two's complement integer read as a multiple of
// 2^-32: integer range [-2^31, 2^31), resolution 2^-32 (about 2.3e-10). Every
// operation is defined on the raw integers alone, so its result is the same on
// every architecture and in every language that has 64-bit integers; no
// floating point is used anywhere except in the boundary helpers
// [FromFloat64] and [Fixed.Float64], which simulation code must not call.
//
// The rules shared by all operations:
//
//   - Rounding. An operation whose exact result is not a multiple of 2^-32
//     ([Fixed.Mul], [Fixed.Div], [Fixed.DivInt], [FromFraction], [Vec2.Dot],
//     ...) rounds it to the nearest multiple, ties away from zero, unless its
//     doc comment says otherwise. [Sqrt] and [Vec2.Len] round down (floor).
//   - Overflow. Results outside the representable range wrap: the raw result
//     is the exact (rounded) result reduced modulo 2^64 into the int64 range,
//     as Go's own integer arithmetic does. Nothing saturates except
//     [FromFloat64].
//   - Panics. Division by zero and the few documented domain errors (square
//     root of a negative value, an empty range) panic with a message starting
//     "determinism: ".
//
// The algorithms of [Sqrt], [Sin], [Cos] and [Atan2] are specified in their
// doc comments and in the source precisely enough that a port reproduces them
// bit for bit; all of their constants are listed there in hexadecimal.
//
// # Random draws
//
// [Unit] and [UniformRange] turn draws of an [rng.PCG] into Fixed values and
// document exactly which draws they consume.
//
// # State hashing
//
// [Hasher] hashes a simulation's state with xxHash64 (seed 0), a fixed,
// published function, never hash/maphash, whose seed changes per process.
// Typed writes have a fixed little-endian encoding, and named sections let a
// desync report name the first part of the state that differs. The exact byte
// stream is specified on [Hasher].
//
// # Map iteration
//
// Go randomizes map iteration order. [SortedKeys] and [Sorted] iterate a map
// in ascending key order instead.
//
// # Concurrency
//
// Fixed and Vec2 are plain values; their functions are safe for concurrent
// use. A [Hasher] is not safe for concurrent use.
package determinism
