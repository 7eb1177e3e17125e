// Package lockstep is the Phalanx engine: deterministic lockstep over
// unreliable datagrams.
//
// The heart of it is [Core], a sans-I/O state machine in the shape of etcd's
// raft RawNode: it starts no goroutine, reads no clock and opens no socket.
// The caller hands it local commands ([Core.Submit]), received datagrams
// ([Core.Receive]) and the current time, and collects everything the core
// wants done in one batch ([Core.Ready]): datagrams to send to each member,
// buckets to step in order, events, and the time by which Ready must be
// called again.
//
// Every command is stamped with the frame it executes on, a little in the
// future: at least a lead sized from how late the others receive this
// member's datagrams (docs/architecture.md, "Sizing the lead from
// measurement").
// Every member steps the same buckets in the same order, so a deterministic
// [Simulation] computes the same world on every member.
//
// With a [Signer] and a [Verifier] in [Config], each member signs a running
// hash of its own command stream, so that its commands forwarded by others
// after a drop, or read from a replay, are proven to be its own; a member
// that forwards altered or invented commands is dropped for a violation.
//
// A member dropped before may come back with the same slot and key, and a
// slot open since the start ([Config.Open]) may take a new member: a core
// made with [Config.Join] is admitted at a frame every live member agrees on
// ([EventRejoin], [EventJoin]), and its caller catches its simulation up to
// that frame, from a checkpoint when the simulation is a [Snapshotter].
//
// Time is a time.Duration on the caller's monotonic clock (any epoch, the
// same for every call on one Core). The virtual-time harness in
// lockstep/locksteptest passes simulated time; a real session passes the
// time since it started.
package lockstep
