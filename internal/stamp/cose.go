package stamp

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"math/big"
)

// COSE algorithm identifiers accepted for WebAuthn credentials.
const (
	AlgES256 = -7
	AlgEdDSA = -8
	AlgRS256 = -257
)

// coseKey is a parsed COSE_Key (RFC 9052 §7, RFC 9053). Exactly one of the
// key fields is set.
type coseKey struct {
	alg     int
	p256    *ecdsa.PublicKey
	ed      ed25519.PublicKey
	rsa     *rsa.PublicKey
	display string // compressed SEC1 hex, 32-byte Ed25519 hex, or hex of the COSE bytes (RSA)
}

// parseCOSEKey parses a CBOR-encoded credential public key.
func parseCOSEKey(b []byte) (*coseKey, error) {
	v, err := cborDecode(b)
	if err != nil {
		return nil, malformed("credential public key: %v", err)
	}
	return coseKeyFromValue(v, b)
}

func coseKeyFromValue(v any, raw []byte) (*coseKey, error) {
	m, ok := v.(cborMap)
	if !ok {
		return nil, malformed("credential public key is not a CBOR map")
	}
	kty, ok := coseInt(m, 1)
	if !ok {
		return nil, malformed("credential public key has no integer kty (1)")
	}
	alg, ok := coseInt(m, 3)
	if !ok {
		return nil, malformed("credential public key has no integer alg (3)")
	}
	switch alg {
	case AlgES256:
		if kty != 2 {
			return nil, malformed("credential public key: alg ES256 needs kty EC2 (2), got %d", kty)
		}
		if crv, _ := coseInt(m, -1); crv != 1 {
			return nil, malformed("credential public key: ES256 needs crv P-256 (1), got %d", crv)
		}
		x, okx := coseBytes(m, -2)
		y, oky := coseBytes(m, -3)
		if !okx || !oky || len(x) != 32 || len(y) != 32 {
			return nil, malformed("credential public key: EC2 x (-2) and y (-3) must be 32-byte strings")
		}
		u := make([]byte, 65)
		u[0] = 4
		copy(u[1:], x)
		copy(u[33:], y)
		k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), u)
		if err != nil {
			return nil, malformed("credential public key is not a point on P-256")
		}
		return &coseKey{alg: AlgES256, p256: k, display: hex.EncodeToString(compressPoint(u))}, nil
	case AlgEdDSA:
		if kty != 1 {
			return nil, malformed("credential public key: alg EdDSA needs kty OKP (1), got %d", kty)
		}
		if crv, _ := coseInt(m, -1); crv != 6 {
			return nil, malformed("credential public key: EdDSA needs crv Ed25519 (6), got %d", crv)
		}
		x, ok := coseBytes(m, -2)
		if !ok || len(x) != ed25519.PublicKeySize {
			return nil, malformed("credential public key: OKP x (-2) must be a 32-byte string")
		}
		return &coseKey{alg: AlgEdDSA, ed: ed25519.PublicKey(x), display: hex.EncodeToString(x)}, nil
	case AlgRS256:
		if kty != 3 {
			return nil, malformed("credential public key: alg RS256 needs kty RSA (3), got %d", kty)
		}
		n, okn := coseBytes(m, -1)
		e, oke := coseBytes(m, -2)
		if !okn || !oke {
			return nil, malformed("credential public key: RSA n (-1) and e (-2) must be byte strings")
		}
		nn := new(big.Int).SetBytes(n)
		if bits := nn.BitLen(); bits < 2048 || bits > 8192 {
			return nil, malformed("credential public key: RSA modulus of %d bits is outside 2048..8192", bits)
		}
		if len(e) == 0 || len(e) > 4 {
			return nil, malformed("credential public key: RSA exponent must be 1 to 4 bytes")
		}
		ev := 0
		for _, c := range e {
			ev = ev<<8 | int(c)
		}
		if ev < 3 || ev&1 == 0 {
			return nil, malformed("credential public key: RSA exponent %d is not valid", ev)
		}
		return &coseKey{alg: AlgRS256, rsa: &rsa.PublicKey{N: nn, E: ev}, display: hex.EncodeToString(raw)}, nil
	}
	return nil, malformed("credential public key alg %d is not supported (want -7 ES256, -8 EdDSA or -257 RS256)", alg)
}

func coseInt(m cborMap, k int64) (int64, bool) {
	v, ok := m.intKey(k)
	if !ok {
		return 0, false
	}
	i, ok := v.(cborInt)
	if !ok {
		return 0, false
	}
	return i.int64()
}

func coseBytes(m cborMap, k int64) ([]byte, bool) {
	v, ok := m.intKey(k)
	if !ok {
		return nil, false
	}
	b, ok := v.([]byte)
	return b, ok
}

// verify checks sig over msg (the whole message, not a digest) with the
// key's algorithm. what names the signature in error messages.
func (k *coseKey) verify(msg, sig []byte, what string) error {
	switch k.alg {
	case AlgES256:
		if _, _, m := parseDER(sig); m != "" {
			return malformed("%s: %s", what, m)
		}
		h := sha256.Sum256(msg)
		if !ecdsa.VerifyASN1(k.p256, h[:], sig) {
			return unverified("%s does not verify with ES256 credential key %s", what, k.display)
		}
	case AlgEdDSA:
		if len(sig) != ed25519.SignatureSize {
			return malformed("%s: Ed25519 signature must be 64 bytes, got %d", what, len(sig))
		}
		if !ed25519.Verify(k.ed, msg, sig) {
			return unverified("%s does not verify with EdDSA credential key %s", what, k.display)
		}
	case AlgRS256:
		h := sha256.Sum256(msg)
		if err := rsa.VerifyPKCS1v15(k.rsa, crypto.SHA256, h[:], sig); err != nil {
			return unverified("%s does not verify with the RS256 credential key", what)
		}
	default:
		return malformed("%s: unsupported algorithm %d", what, k.alg)
	}
	return nil
}

// COSEKeyFromP256 builds the ES256 COSE_Key
// {1: 2, 3: -7, -1: 1, -2: x, -3: y} for a P-256 public key given as
// compressed or uncompressed SEC1 hex, for credentials known only by their
// public key (for example imported authenticators).
func COSEKeyFromP256(publicKeyHex string) ([]byte, error) {
	raw, ok := decodeHex(publicKeyHex)
	if !ok {
		return nil, malformed("P-256 public key is not hex")
	}
	pk, err := decodeP256(raw)
	if err != nil {
		return nil, err
	}
	u, err := pk.p256.Bytes()
	if err != nil {
		return nil, malformed("P-256 public key cannot be encoded")
	}
	out := []byte{0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20}
	out = append(out, u[1:33]...)
	out = append(out, 0x22, 0x58, 0x20)
	return append(out, u[33:]...), nil
}
