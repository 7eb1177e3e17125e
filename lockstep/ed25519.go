package lockstep

import (
	"crypto/ed25519"
	"crypto/sha256"

	"github.com/phalanx-net/phalanx/bucket"
)

// Ed25519Signer signs statements with an Ed25519 private key (a libp2p
// Ed25519 identity's raw private key is one). Safe for concurrent use.
type Ed25519Signer struct {
	Key ed25519.PrivateKey
}

// Sign returns the Ed25519 signature of msg (64 bytes).
func (s Ed25519Signer) Sign(msg []byte) ([]byte, error) {
	return ed25519.Sign(s.Key, msg), nil
}

// Ed25519Verifier checks statements with each member's Ed25519 public key,
// by slot. A slot without a key (nil, or past the end) verifies nothing.
// Safe for concurrent use.
type Ed25519Verifier []ed25519.PublicKey

// Verify reports whether sig is member's signature of msg.
func (v Ed25519Verifier) Verify(member bucket.Slot, msg, sig []byte) bool {
	if int(member) >= len(v) || len(v[member]) != ed25519.PublicKeySize {
		return false
	}
	return ed25519.Verify(v[member], msg, sig)
}

// Ed25519Keys derives one Ed25519 key pair per member from seed,
// deterministically, for simulations and tests: member i's key is
// ed25519.NewKeyFromSeed of SHA-256("phalanx-simulated-key", seed, i as
// one byte). Whoever knows the seed knows every key: such signatures prove
// nothing against the holder of the seed. The virtual harness derives its
// members' keys from the session's seed (rng.SeedFromUint64 of its Seed),
// so a replay of a simulated session can be checked from its header.
func Ed25519Keys(members int, seed []byte) ([]Ed25519Signer, Ed25519Verifier) {
	signers := make([]Ed25519Signer, members)
	verifier := make(Ed25519Verifier, members)
	for i := range members {
		h := sha256.New()
		h.Write([]byte("phalanx-simulated-key"))
		h.Write(seed)
		h.Write([]byte{byte(i)})
		key := ed25519.NewKeyFromSeed(h.Sum(nil))
		signers[i] = Ed25519Signer{Key: key}
		verifier[i] = key.Public().(ed25519.PublicKey)
	}
	return signers, verifier
}
