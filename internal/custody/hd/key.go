package hd

import (
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Curve names a signature curve by its wire value (swagger enum v1Curve).
type Curve string

// The curves Latchkey derives and signs with.
const (
	CurveSecp256k1 Curve = "CURVE_SECP256K1"
	CurveEd25519   Curve = "CURVE_ED25519"
	CurveP256      Curve = "CURVE_P256"
)

// ErrInvalidPrivateKey is returned for private key bytes that are not a valid key of the curve.
var ErrInvalidPrivateKey = errors.New("invalid private key")

// p256Order is the order of the P-256 group, n.
var p256Order, _ = new(big.Int).SetString("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551", 16)

// Key is one private key: a secp256k1 or P-256 scalar (32 bytes, big-endian, in [1, n-1]) or an
// Ed25519 seed (32 bytes, RFC 8032 "private key"). Its zero value is not usable. Call Wipe when
// done with it.
type Key struct {
	curve  Curve
	secret [32]byte
	pub    []byte // compressed SEC1 (secp256k1, P-256) or 32-byte Ed25519 key
	pubUnc []byte // uncompressed SEC1 (secp256k1, P-256) or 32-byte Ed25519 key
}

// NewKey imports a raw private key: a 32-byte scalar for secp256k1 and P-256, or a 32-byte
// Ed25519 seed. Encodings (hex, WIF, Solana's 64-byte seed‖public form) are the caller's job.
func NewKey(curve Curve, raw []byte) (*Key, error) {
	if len(raw) != 32 {
		return nil, fmt.Errorf("%w: want 32 bytes, got %d", ErrInvalidPrivateKey, len(raw))
	}
	k := &Key{curve: curve}
	copy(k.secret[:], raw)
	if err := k.init(); err != nil {
		k.Wipe()
		return nil, err
	}
	return k, nil
}

// GenerateKey returns a new standalone private key for curve, from crypto/rand.
func GenerateKey(curve Curve) (*Key, error) {
	if err := checkCurve(curve); err != nil {
		return nil, err
	}
	for {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		k, err := NewKey(curve, b[:])
		clear(b[:])
		if err == nil {
			return k, nil
		}
		if !errors.Is(err, ErrInvalidPrivateKey) {
			return nil, err
		}
		// A scalar outside [1, n-1]: astronomically rare; draw again.
	}
}

func checkCurve(curve Curve) error {
	switch curve {
	case CurveSecp256k1, CurveEd25519, CurveP256:
		return nil
	}
	return fmt.Errorf("hd: unsupported curve %q", string(curve))
}

// init validates the secret and computes the public keys.
func (k *Key) init() error {
	switch k.curve {
	case CurveSecp256k1:
		var s secp256k1.ModNScalar
		overflow := s.SetBytes(&k.secret)
		if overflow != 0 || s.IsZero() {
			s.Zero()
			return fmt.Errorf("%w: secp256k1 scalar must be in [1, n-1]", ErrInvalidPrivateKey)
		}
		s.Zero()
		// The public key (a scalar multiplication) is computed on first use: signing a
		// digest with ECDSA needs none, and it is the hot path.
		return nil
	case CurveP256:
		priv, err := ecdh.P256().NewPrivateKey(k.secret[:])
		if err != nil {
			return fmt.Errorf("%w: P-256 scalar must be in [1, n-1]", ErrInvalidPrivateKey)
		}
		unc := priv.PublicKey().Bytes()
		k.pubUnc = unc
		k.pub = compressP256(unc)
		return nil
	case CurveEd25519:
		k.pub = ed25519PublicKey(&k.secret)
		k.pubUnc = k.pub
		return nil
	}
	return checkCurve(k.curve)
}

func compressP256(unc []byte) []byte {
	out := make([]byte, 33)
	out[0] = 0x02 | unc[64]&1
	copy(out[1:], unc[1:33])
	return out
}

// Curve returns the key's curve.
func (k *Key) Curve() Curve { return k.curve }

// PublicKey returns the compressed SEC1 public key (33 bytes) for secp256k1 and P-256, or the
// 32-byte public key for Ed25519.
func (k *Key) PublicKey() []byte { k.ensurePub(); return append([]byte(nil), k.pub...) }

// UncompressedPublicKey returns the uncompressed SEC1 public key (65 bytes, 0x04‖X‖Y) for
// secp256k1 and P-256. Ed25519 has no uncompressed form; it returns the 32-byte key.
func (k *Key) UncompressedPublicKey() []byte {
	k.ensurePub()
	return append([]byte(nil), k.pubUnc...)
}

// ensurePub computes a secp256k1 key's public key the first time it is needed.
func (k *Key) ensurePub() {
	if k.pub != nil || k.curve != CurveSecp256k1 {
		return
	}
	priv := secp256k1.PrivKeyFromBytes(k.secret[:])
	pub := priv.PubKey()
	k.pub = pub.SerializeCompressed()
	k.pubUnc = pub.SerializeUncompressed()
	priv.Zero()
}

// PrivateKey returns a copy of the raw private key (scalar or Ed25519 seed). It exists for
// export, which seals the bytes inside internal/custody; nothing else should call it.
func (k *Key) PrivateKey() []byte { return append([]byte(nil), k.secret[:]...) }

// Wipe zeroes the private key. The Key must not be used afterwards.
func (k *Key) Wipe() {
	if k == nil {
		return
	}
	clear(k.secret[:])
	k.curve = ""
}
