// Package wire encodes and decodes Phalanx datagrams. It turns bytes into
// structs and back and does nothing else: no state, no I/O, no clock.
//
// The format is specified byte by byte in docs/protocol.md; this package is
// its reference implementation. Decoding never panics on any input and does
// not allocate when the destination's command slice has room.
//
// A [Packet] is a fixed header followed by optional blocks, each flagged in
// the header, then extension blocks. packet.go holds the header and the order
// of the blocks; each block has a file of its own with its type, its length,
// its encoding and its decoding (echo.go, commands.go, hash.go,
// membership.go, leave.go, relay.go, detail.go, and the extension blocks in
// statement.go and admission.go), and primitives.go holds the integer and
// frame codings they share.
package wire
