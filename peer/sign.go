package peer

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/phalanx-net/phalanx/bucket"
	"github.com/phalanx-net/phalanx/lockstep"
)

// Signed command streams: a member signs its statements (see lockstep's
// Config.Signer) with its libp2p identity key, and checks the others' with
// the public keys their peer IDs embed. Ed25519 identities, the default,
// embed their key and sign in 64 bytes; an identity whose peer ID embeds no
// key (RSA) cannot be checked, and one whose signatures pass
// wire.MaxSignatureSize does not sign.

// ErrNoPublicKey: a member's peer ID does not embed its public key, so its
// statements cannot be checked.
var ErrNoPublicKey = errors.New("peer: peer ID embeds no public key")

// identitySigner signs statements with a libp2p private key.
type identitySigner struct{ key crypto.PrivKey }

func (s identitySigner) Sign(msg []byte) ([]byte, error) { return s.key.Sign(msg) }

// identityVerifier checks statements with the members' public keys, by slot.
type identityVerifier []crypto.PubKey

func (v identityVerifier) Verify(member bucket.Slot, msg, sig []byte) bool {
	if int(member) >= len(v) || v[member] == nil {
		return false
	}
	ok, err := v[member].Verify(msg, sig)
	return ok && err == nil
}

// StatementSigner returns the signer of this host's statements: its
// identity key. Safe for concurrent use.
func (h *Host) StatementSigner() lockstep.Signer { return identitySigner{h.key} }

// StatementVerifier returns the verifier of the statements of the members
// whose peer IDs are ids, by slot, from the public keys the IDs embed; an
// empty ID is an open slot nobody took, whose statements fail. It
// returns an error wrapping ErrNoPublicKey, or the ID's decoding error, for
// the first member whose key it cannot get. Safe for concurrent use.
func StatementVerifier(ids []string) (lockstep.Verifier, error) {
	v := make(identityVerifier, len(ids))
	for i, s := range ids {
		if s == "" {
			continue
		}
		id, err := peer.Decode(s)
		if err != nil {
			return nil, fmt.Errorf("peer: member %d: %w", i, err)
		}
		if v[i], err = id.ExtractPublicKey(); err != nil {
			return nil, fmt.Errorf("%w: member %d (%s): %v", ErrNoPublicKey, i, s, err)
		}
	}
	return v, nil
}

// StatementVerifier returns the verifier of the session members'
// statements (see the package-level StatementVerifier); the statements of
// an open slot's member are checked with the key of whoever took the slot
// (seats.go), and fail while nobody has.
func (s *Agreement) StatementVerifier() (lockstep.Verifier, error) {
	var ids []string
	for _, id := range s.Members[:s.started()] {
		ids = append(ids, id.String())
	}
	v, err := StatementVerifier(ids)
	if err != nil || s.started() == len(s.Members) {
		return v, err
	}
	return seatVerifier{started: v.(identityVerifier), sess: s}, nil
}

// seatVerifier checks the starting members' statements with their keys and
// an open slot's with the key of the identity that took it.
type seatVerifier struct {
	started identityVerifier
	sess    *Agreement
}

func (v seatVerifier) Verify(member bucket.Slot, msg, sig []byte) bool {
	if int(member) < len(v.started) {
		return v.started.Verify(member, msg, sig)
	}
	id := v.sess.Member(member)
	if id == "" {
		return false
	}
	key, err := id.ExtractPublicKey()
	if err != nil {
		return false
	}
	ok, err := key.Verify(msg, sig)
	return ok && err == nil
}
