// Package peer is Phalanx's real network: a libp2p host per member, the
// session lobby that agrees on members, slots, seed and start time, and a
// QUIC datagram channel that carries lockstep datagrams between the members
// as a [lockstep.Transport].
//
// A member runs three steps:
//
//	h, err := peer.NewHost(ctx, peer.HostConfig{IdentityFile: "member.key"})
//	sess, err := peer.Join(ctx, h, params, others) // others: the other members' addresses
//	tr, err := peer.NewTransport(ctx, h, sess, peer.TransportConfig{})
//
// [NewHost] starts a libp2p host with the QUIC transport only, listening on
// loopback unless told otherwise. [Join] meets the other members over the libp2p stream protocol
// /phalanx/lobby/1.0.0: every pair checks that both speak the same protocol
// version and want the same session, every member contributes to the seed by
// commit-then-reveal so no member can choose it, and the lowest peer ID
// announces the start time. [NewTransport] then opens one QUIC connection per
// pair of members under the ALPN "phalanx/1", authenticated by the members'
// libp2p TLS identities, and carries the lockstep packets in QUIC datagrams;
// a peer that is not a member is refused. In [ModeStream], the baseline to
// compare against, the packets travel instead over one reliable ordered QUIC
// stream per direction, under the ALPN "phalanx-stream/1". The datagram
// channel shares the host's libp2p QUIC socket, so a member has one UDP
// port. [DiscoverMDNS] finds the other members on a LAN.
//
// Members behind NATs meet at a [Relay] ([NewRelay]: a circuit relay v2 and
// a lobby directory) instead: [Meet] (or MemberConfig.Meet) reserves a slot
// there, waits in a named lobby for the others, and connects to each
// directly, else through the relay and then by hole punching, else stays
// relayed, the packets then on a stream over the relayed connection
// ([PacketsProtocol]). [Member.Paths] says which.
//
// A member whose process died comes back with the same identity
// (MemberConfig.Rejoin): the live members tell it the session and serve it
// a checkpoint they vouched for and the buckets since over the libp2p
// stream protocol [CatchupProtocol], while the lockstep cores agree on the
// frame it counts from again ([Member.Admission]). A new identity joins a
// session started with open slots (SessionParams.Slots) the same way, into
// a slot every member gives it. A spectator ([Watch]) fetches the same over
// the same protocol from members that serve spectators
// (MemberConfig.Spectators), or from spectators that serve
// (WatchConfig.Spectators), and never enters the session.
//
// In this package's API, peer.ID and peer.AddrInfo are the types of libp2p's
// core/peer package. docs/network.md describes the protocols byte by byte.
//
// Everything here that starts a goroutine stops it: a [Host] on
// [Host.Close], a [Transport] on [Transport.Close]; [Join] returns only when
// its goroutines are done, and [DiscoverMDNS] keeps advertising until its
// context ends or the host closes. Logging goes
// through the *slog.Logger in each configuration (nil discards). There is no
// global state.
package peer
