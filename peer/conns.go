package peer

import (
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/phalanx-net/phalanx/bucket"
	"github.com/quic-go/quic-go"
)

// dialLoop dials a higher member, after waiting first (if not zero), until
// a connection is up or the transport closes.
func (t *Transport) dialLoop(slot bucket.Slot, id peer.ID, first time.Duration) {
	if first > 0 {
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(first):
		}
	}
	backoff := 50 * time.Millisecond
	upgraded := false // a direct path appeared while relayed, and was tried
	upgrade := time.NewTicker(time.Second)
	defer upgrade.Stop()
dial:
	for failures := 0; t.ctx.Err() == nil; failures++ {
		addr, relayOnly := t.dialTarget(slot, id)
		// No direct path (or a direct one that keeps failing) but one
		// through a relay: the packets take the relayed connection.
		if relayOnly || (failures >= 3 && t.host.pathsTo(id).relayed) {
			l, out, err := t.dialRelayed(slot, id)
			if err == nil {
				// Open it again if the member refuses or loses it, as long
				// as it is the member's link; and once hole punching (or
				// anything) gives a direct path, dial that: the new link
				// replaces the relayed one, and the lockstep core repeats
				// what the switch loses.
			wait:
				for {
					select {
					case <-t.ctx.Done():
						return
					case <-out.done:
						break wait
					case <-upgrade.C:
						if !upgraded && t.host.pathsTo(id).direct.IsValid() {
							upgraded = true
							t.log.Info("peer: a direct path to a relayed member; switching to it", "member", slot, "id", id)
							failures = -1
							continue dial
						}
					}
				}
				if t.links[slot].Load() != l {
					return
				}
				err = out.failed()
			}
			t.log.Debug("peer: opening the relayed packet stream failed; retrying", "member", slot, "id", id, "err", err)
			if !t.retryAfter(slot, err, &backoff) {
				return
			}
			continue
		}
		// A configuration per try: libp2p's check of the server's
		// identity serves one handshake.
		conf := clientTLS(t.host.ident, id)
		// Our mode first, the other after it: a member in the other mode
		// then completes the handshake in its mode, which proves it runs
		// that mode (see serverTLS).
		conf.NextProtos = []string{t.mode.alpn(), t.mode.other().alpn()}
		conn, release, err := t.host.dialDatagram(t.ctx, addr, conf, t.mode.quicConfig())
		if err == nil {
			t.holdRelease(conn, release)
		}
		otherMode := err == nil && conn.ConnectionState().TLS.NegotiatedProtocol != t.mode.alpn()
		if otherMode {
			// The member ends the handshake once it has our proof, which
			// tells it why; wait for that a moment, then close.
			wait := time.NewTimer(time.Second)
			select {
			case <-conn.Context().Done():
			case <-wait.C:
			case <-t.ctx.Done():
			}
			wait.Stop()
			_ = conn.CloseWithError(CodeModeMismatch, "transport mode mismatch")
		}
		if err == nil && !otherMode {
			t.attach(slot, conn, true)
			return
		}
		if otherMode || refusedMode(err) {
			err = fmt.Errorf("%w: member %d (%s) refuses the %s transport (ALPN %q): it runs the %s transport", ErrModeMismatch, slot, id, t.mode, t.mode.alpn(), t.mode.other())
			t.log.Warn("peer: transport mode mismatch", "member", slot, "id", id, "err", err)
			t.mu.Lock()
			t.dialErr[slot] = err
			t.mu.Unlock()
			t.fail(err)
			return
		}
		t.log.Debug("peer: dialling member failed; retrying", "member", slot, "id", id, "err", err)
		if !t.retryAfter(slot, err, &backoff) {
			return
		}
	}
}

// holdRelease keeps release, the reference to conn's dial socket, until
// conn ends, then gives it back; Close gives back those still held. A
// member that takes connections and drops them, again and again, so costs
// nothing that stays.
func (t *Transport) holdRelease(conn *quic.Conn, release func()) {
	t.mu.Lock()
	t.releases[conn] = release // (a dial loop: Close takes the map only once they ended)
	t.mu.Unlock()
	t.wg.Go(func() {
		select {
		case <-t.ctx.Done():
			return // Close gives it back once the connection is closed
		case <-conn.Context().Done():
		}
		t.mu.Lock()
		release, held := t.releases[conn]
		delete(t.releases, conn)
		t.mu.Unlock()
		if held {
			release()
		}
	})
}

// retryAfter notes err as the last failure towards slot and waits the
// backoff, which it then doubles up to a second. It reports false when the
// transport is closing instead.
func (t *Transport) retryAfter(slot bucket.Slot, err error, backoff *time.Duration) bool {
	t.mu.Lock()
	t.dialErr[slot] = err
	t.mu.Unlock()
	select {
	case <-t.ctx.Done():
		return false
	case <-time.After(*backoff):
	}
	*backoff = min(2**backoff, time.Second)
	return true
}

// accepted takes a connection the host accepted for the datagram channel:
// it attaches one from a lower member and refuses the rest.
func (t *Transport) accepted(conn *quic.Conn) {
	id, err := remoteID(conn)
	if err != nil {
		t.refuse(conn, CodeBadIdentity, "no libp2p identity", "", err)
		return
	}
	slot, member := t.sess.Slot(id)
	switch {
	case !member:
		t.refuse(conn, CodeNotMember, "not a member of this session", id, nil)
	case id >= t.sess.Members[t.self]:
		t.refuse(conn, CodeWrongDirection, "the lower peer ID dials", id, nil)
	default:
		t.attach(slot, conn, false)
	}
}

// otherMode hears of every handshake that chose the other mode's ALPN,
// once the client has proven its identity id (see serverTLS); the
// handshake is about to fail with a TLS alert, which tells the client. A
// member in the other mode makes NewTransport give up after
// modeMismatchGrace, with the reason logged; a stranger is only counted.
// An unauthenticated packet, whatever it claims and wherever it seems to
// come from, never gets this far.
func (t *Transport) otherMode(id peer.ID, _ string) {
	t.refused.Add(1)
	slot, member := t.sess.Slot(id)
	if !member || slot == t.self {
		t.host.refusals.refused("peer: refused a connection of a stranger in the other transport mode", "id", id, "ours", t.mode)
		return
	}
	err := fmt.Errorf("%w: member %d (%s) dialled for the %s transport, this member runs the %s transport", ErrModeMismatch, slot, id, t.mode.other(), t.mode)
	t.mu.Lock()
	first := t.mismatchErr == nil
	t.dialErr[slot] = err
	t.mismatchErr = err
	t.mu.Unlock()
	if first {
		t.log.Warn("peer: refused a connection: transport mode mismatch", "member", slot, "id", id, "err", err)
	}
	select {
	case t.mismatch <- struct{}{}:
	default:
	}
}

// refusedMode says whether a dial failed because the member runs the other
// mode: a listener of this version ends the handshake once it has checked
// our identity, with the TLS alert bad_certificate (see serverTLS), and one
// of an older version refuses our ALPN with no_application_protocol (RFC
// 7301); either comes as a QUIC crypto error (RFC 9001 §4.8) from the
// member we dialled, whose identity the handshake had proven by then.
func refusedMode(err error) bool {
	const badCertificate, noApplicationProtocol = 42, 120
	var te *quic.TransportError
	return errors.As(err, &te) && te.Remote &&
		(te.ErrorCode == 0x100+badCertificate || te.ErrorCode == 0x100+noApplicationProtocol)
}

// fail makes NewTransport give up at once with err, if it has not
// returned yet; the first reason stays.
func (t *Transport) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failErr == nil {
		t.failErr = err
		close(t.failed)
	}
}

func (t *Transport) refuse(conn *quic.Conn, code quic.ApplicationErrorCode, why string, id peer.ID, err error) {
	t.refused.Add(1)
	t.host.refusals.refused("peer: refused a datagram connection", "from", conn.RemoteAddr(), "id", id, "why", why, "err", err)
	_ = conn.CloseWithError(code, why)
}

// attach makes conn the connection to slot, with the carrier of the
// transport's mode; dialled says we dialled it (connectionLost).
func (t *Transport) attach(slot bucket.Slot, conn *quic.Conn, dialled bool) {
	t.attachLink(slot, &link{conn: conn, carrier: t.newCarrier(slot, conn), dialled: dialled})
}

// attachLink makes l the link to slot and starts its goroutines; a link
// it replaces is closed.
func (t *Transport) attachLink(slot bucket.Slot, l *link) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		l.close(CodeClosed, "transport closed")
		return
	}
	old := t.links[slot].Swap(l)
	if old == nil {
		t.connected++
		if t.connected == t.need {
			close(t.ready)
		}
	}
	l.start(t, slot, l)
	t.mu.Unlock()
	if l.relayed != nil {
		t.log.Info("peer: member connected through the relay", "member", slot, "remote", l.relayed.Conn().RemoteMultiaddr())
	} else {
		t.log.Debug("peer: member connected", "member", slot, "remote", l.conn.RemoteAddr())
	}
	if old != nil {
		old.close(CodeReplaced, "replaced by a newer connection")
	}
}

// readLoop moves the datagrams of one connection onto Incoming, promptly:
// quic-go queues only 128 of them and drops the rest.
func (t *Transport) readLoop(slot bucket.Slot, l *link) {
	for {
		data, err := l.conn.ReceiveDatagram(t.ctx)
		if err != nil {
			t.connectionLost(slot, l, err)
			return
		}
		t.hear(slot, l)
		t.deliver(slot, data, false)
	}
}

// connectionLost logs the end of l's connection, unless the transport is
// closing or a newer link replaced l. A connection we dialled that ends
// before anything arrived on it, and not by an application's close (the
// member's or ours), was never taken by the member: a QUIC client's
// handshake completes one flight before the server's, so a member whose
// handshake timed out meanwhile (a loss burst on the client's last flight)
// leaves us a connection that only its stateless reset or our idle timeout
// ends, and it waits for us to dial. Then we dial it again: at once the
// first time, and after a wait that doubles from 50 ms up to a second for
// each further connection in a row that it did not take, so a member that
// takes handshakes and never a connection gets a few a second, not as
// many as the path carries.
func (t *Transport) connectionLost(slot bucket.Slot, l *link, err error) {
	if t.ctx.Err() != nil || t.links[slot].Load() != l {
		return
	}
	var closed *quic.ApplicationError
	if l.dialled && !l.heard.Load() && !errors.As(err, &closed) {
		t.log.Info("peer: the member never took our connection; dialling again", "member", slot, "err", err)
		t.dialAgain(slot)
		return
	}

	t.log.Warn("peer: connection to member lost", "member", slot, "err", err)
}
