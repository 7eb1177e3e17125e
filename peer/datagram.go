package peer

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2ptls "github.com/libp2p/go-libp2p/p2p/security/tls"
	"github.com/quic-go/quic-go"
)

// TLS application protocols of the datagram channel, one per [Mode]. A
// QUIC connection under any other ALPN than its own mode's fails its
// handshake.
const (
	ALPN       = "phalanx/1"        // ModeDatagram
	ALPNStream = "phalanx-stream/1" // ModeStream
)

// Application error codes with which a member closes a datagram connection
// (QUIC CONNECTION_CLOSE, RFC 9000 §20.2).
const (
	CodeClosed         quic.ApplicationErrorCode = 0x0 // the transport was closed
	CodeNotMember      quic.ApplicationErrorCode = 0x1 // the remote identity is not a member of the session
	CodeWrongDirection quic.ApplicationErrorCode = 0x2 // the higher peer ID dialled: the lower one dials
	CodeReplaced       quic.ApplicationErrorCode = 0x3 // a newer connection from the same member replaced it
	CodeBadIdentity    quic.ApplicationErrorCode = 0x4 // no libp2p identity could be read from the handshake
	CodeBadFrame       quic.ApplicationErrorCode = 0x5 // ModeStream: a frame longer than wire.MaxDatagramSize
	CodeModeMismatch   quic.ApplicationErrorCode = 0x6 // the member runs the other transport mode
)

// quicConfig is the QUIC configuration of every connection a member dials
// in ModeDatagram (Mode.quicConfig adjusts it for ModeStream): DATAGRAM
// frames on, no streams, keep-alives so a quiet member is not timed out by
// QUIC before the lockstep layer decides, and no path MTU discovery (its
// probes, up to 1,452 bytes each, would only find room the datagrams of
// at most wire.MaxDatagramSize never use).
func quicConfig() *quic.Config {
	return &quic.Config{
		EnableDatagrams:         true,
		MaxIncomingStreams:      -1,
		MaxIncomingUniStreams:   -1,
		HandshakeIdleTimeout:    3 * time.Second,
		MaxIdleTimeout:          15 * time.Second,
		KeepAlivePeriod:         2 * time.Second,
		DisablePathMTUDiscovery: true,
	}
}

// serverTLS returns the TLS configuration of the datagram listener: it
// presents our libp2p identity and requires the client to present a valid
// libp2p identity of its own, whatever it is. Membership is checked after
// the handshake, so that a stranger is refused with CodeNotMember rather
// than a TLS alert.
//
// A client offers its own mode's ALPN first and the other mode's after it;
// the listener prefers alpn, and accepts other too, so that the handshake
// gets as far as the client's proven identity. Then, and not before, a
// client whose first ALPN was another mode's is told of to otherMode, if
// not nil, and the handshake ends with a TLS alert (bad_certificate). The
// client's proof signs the whole handshake, ClientHello included, so the
// mode is judged on what an authenticated peer said: an unauthenticated
// packet, whatever it claims and wherever it seems to come from, cannot
// make a member believe another member runs the other mode.
func serverTLS(ident *libp2ptls.Identity, alpn, other string, otherMode func(peer.ID, string)) *tls.Config {
	conf, _ := ident.ConfigForPeer("")
	conf.NextProtos = []string{alpn, other}
	// ConfigForPeer's check reports the key on a channel and is meant for
	// one connection; this one serves every connection and keeps nothing.
	conf.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		_, err := pubKeyFromRaw(raw)
		return err
	}
	conf.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		first := ""
		if len(hello.SupportedProtos) > 0 {
			first = hello.SupportedProtos[0]
		}
		c := conf.Clone()
		c.GetConfigForClient = nil
		// Called after VerifyPeerCertificate: the client's identity, and
		// so its ClientHello, is proven.
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if first == alpn || (first != other && cs.NegotiatedProtocol == alpn) {
				return nil // our mode (or a client offering neither mode first: judged by what was chosen)
			}
			id, err := certsID(cs.PeerCertificates)
			if err != nil {
				return err
			}
			if otherMode != nil {
				otherMode(id, other)
			}
			return fmt.Errorf("peer: %s dialled for ALPN %q, this listener runs %q", id, other, alpn)
		}
		return c, nil
	}
	return conf
}

// certsID returns the libp2p identity proven by a TLS certificate chain.
func certsID(certs []*x509.Certificate) (peer.ID, error) {
	if len(certs) == 0 {
		return "", errors.New("no certificate")
	}
	raw := make([][]byte, len(certs))
	for i, c := range certs {
		raw[i] = c.Raw
	}
	pub, err := pubKeyFromRaw(raw)
	if err != nil {
		return "", err
	}
	return peer.IDFromPublicKey(pub)
}

// clientTLS returns the TLS configuration for dialling member remote in
// ModeDatagram (a Transport sets NextProtos to its mode's ALPN and the
// other's): the handshake fails unless the server proves the libp2p
// identity remote.
func clientTLS(ident *libp2ptls.Identity, remote peer.ID) *tls.Config {
	conf, _ := ident.ConfigForPeer(remote)
	conf.NextProtos = []string{ALPN}
	return conf
}

// remoteID returns the libp2p identity the remote end of conn proved in the
// TLS handshake.
func remoteID(conn *quic.Conn) (peer.ID, error) {
	return certsID(conn.ConnectionState().TLS.PeerCertificates)
}

// pubKeyFromRaw parses a certificate chain and returns the libp2p public key
// it carries, checking the key's signature over the certificate.
func pubKeyFromRaw(raw [][]byte) (crypto.PubKey, error) {
	chain := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return nil, fmt.Errorf("peer: bad certificate: %w", err)
		}
		chain[i] = c
	}
	return libp2ptls.PubKeyFromCertChain(chain)
}
