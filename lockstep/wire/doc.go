// Package wire encodes and decodes Phalanx datagrams. It turns bytes into
// structs and back and does nothing else: no state, no I/O, no clock.
//
// The format is specified byte by byte in docs/protocol.md; this package is
// its reference implementation. Decoding never panics on any input and does
// not allocate when the destination's command slice has room.
package wire
