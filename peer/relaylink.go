package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/phalanx-net/phalanx/bucket"
)

// PacketsProtocol is the libp2p protocol that carries a pair's lockstep
// packets when the members have no direct path, only a connection through
// a relay: one stream per pair, opened by the lower peer ID, each direction
// framed as in ModeStream (a 2-byte length, then the packet).
const PacketsProtocol = "/phalanx/packets/1.0.0"

// handlePackets hands a relayed packet stream to the running Transport.
func (h *Host) handlePackets(s network.Stream) {
	t := h.current.Load()
	if t == nil {
		_ = s.Reset()
		return
	}
	t.acceptedRelayed(s)
}

// acceptedRelayed takes a packet stream a member opened: one from a lower
// member becomes its link; the rest are refused.
func (t *Transport) acceptedRelayed(s network.Stream) {
	id := s.Conn().RemotePeer()
	slot, member := t.sess.Slot(id)
	switch {
	case !member:
		t.refused.Add(1)
		t.host.refusals.refused("peer: refused a relayed packet stream", "from", id, "why", "not a member of this session")
		_ = s.Reset()
	case id >= t.sess.Members[t.self]:
		t.refused.Add(1)
		t.host.refusals.refused("peer: refused a relayed packet stream", "from", id, "why", "the lower peer ID opens it")
		_ = s.Reset()
	default:
		t.attachLink(slot, t.relayedLink(slot, s))
	}
}

// dialRelayed opens the packet stream to a higher member over whatever
// libp2p connection there is, a relayed one included, and returns its
// link. The member may still refuse it (libp2p confirms the protocol
// lazily: a member whose transport is not running yet resets the stream);
// the link's sender is done then.
func (t *Transport) dialRelayed(slot bucket.Slot, id peer.ID) (*link, *streamSender, error) {
	ctx := network.WithAllowLimitedConn(t.ctx, "phalanx packets")
	s, err := t.host.h.NewStream(ctx, id, PacketsProtocol)
	if err != nil {
		return nil, nil, err
	}
	l := t.relayedLink(slot, s)
	t.attachLink(slot, l)
	return l, l.carrier.(*streamCarrier).out, nil
}

// relayedLink returns the link of the relayed packet stream s to slot.
func (t *Transport) relayedLink(slot bucket.Slot, s network.Stream) *link {
	return &link{relayed: s, carrier: &streamCarrier{relayed: s, out: newStreamSender(slot, t.queue, t.log)}}
}

// runRelayed writes what is queued to the relayed stream s until ctx ends
// or a write fails.
func (s *streamSender) runRelayed(ctx context.Context, str network.Stream) {
	s.write(ctx, str)
}

// relayReadLoop reads the frames of a relayed link and delivers them in
// order, waiting rather than dropping when Incoming is full.
func (t *Transport) relayReadLoop(slot bucket.Slot, l *link, c *streamCarrier) {
	r := bufio.NewReaderSize(c.relayed, 4<<10)
	for {
		packet, err := readFrame(r)
		if err != nil {
			if errors.Is(err, errFrameTooLarge) {
				t.log.Warn("peer: member sent a malformed relayed stream; closing it", "member", slot, "err", err)
			} else if cur := t.links[slot].Load(); t.ctx.Err() == nil && cur == l && !errors.Is(err, io.EOF) {
				t.log.Warn("peer: relayed stream to member lost", "member", slot, "err", err)
			}
			c.out.fail(fmt.Errorf("peer: relayed stream: %w", err))
			_ = c.relayed.Reset()
			return
		}
		if !t.deliver(slot, packet, true) {
			return
		}
	}
}

// paths of the host's libp2p connections to a member.
type connPaths struct {
	direct  netip.AddrPort // the remote address of a direct QUIC connection, if any
	relayed bool           // there is a connection through a relay
}

// pathsTo reports how the host's libp2p connections reach id.
func (h *Host) pathsTo(id peer.ID) connPaths {
	var p connPaths
	for _, c := range h.h.Network().ConnsToPeer(id) {
		a := c.RemoteMultiaddr()
		if isCircuit(a) {
			p.relayed = true
			continue
		}
		if ap, ok := udpAddrPort(a); ok && !p.direct.IsValid() {
			p.direct = ap
		}
	}
	return p
}

// isCircuit reports whether a is an address through a relay.
func isCircuit(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// dialTarget returns where to dial member id's datagram channel: its
// announced endpoint, unless the host's direct libp2p connection to it
// comes from another IP (the member is behind a NAT, the connection went
// through its mapping, perhaps punched): then that connection's address,
// which the NAT lets through. relayOnly is set when the only connection is
// through a relay.
func (t *Transport) dialTarget(slot bucket.Slot, id peer.ID) (addr *net.UDPAddr, relayOnly bool) {
	ep := t.sess.Endpoints[slot]
	if m := t.moved[slot].Load(); m != nil {
		ep = *m
	}
	p := t.host.pathsTo(id)
	switch {
	case p.direct.IsValid() && p.direct.Addr().Unmap() != ep.Addr().Unmap():
		return net.UDPAddrFromAddrPort(p.direct), false
	case !p.direct.IsValid() && p.relayed:
		return nil, true
	}
	return net.UDPAddrFromAddrPort(ep), false
}

// udpAddrPort returns the IP and UDP port of a QUIC multiaddr.
func udpAddrPort(a ma.Multiaddr) (netip.AddrPort, bool) {
	ip, ok := remoteIP(a)
	if !ok {
		return netip.AddrPort{}, false
	}
	v, err := a.ValueForProtocol(ma.P_UDP)
	if err != nil {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(v, 10, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip, uint16(port)), true
}
