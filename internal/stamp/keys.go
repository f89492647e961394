package stamp

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/hex"
	"sync"
	"sync/atomic"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/latchkey/latchkey/internal/p256verify"
)

// Curve is an API key curve, spelled as the swagger's v1ApiKeyCurve.
type Curve string

const (
	CurveP256      Curve = "API_KEY_CURVE_P256"
	CurveSecp256k1 Curve = "API_KEY_CURVE_SECP256K1"
	CurveEd25519   Curve = "API_KEY_CURVE_ED25519"
)

// publicKey is a parsed API public key. Exactly one of the key fields is set.
type publicKey struct {
	curve Curve
	hex   string // canonical form: compressed SEC1 or 32-byte Ed25519, lowercase
	p256  *ecdsa.PublicKey
	k1    *secp256k1.PublicKey
	ed    ed25519.PublicKey

	// For P-256 keys in the key cache (p256tables.go): the precomputed table once built,
	// whether a build is under way, whether the key cache has let the key go, and whether a
	// caller has found the key registered (APIKeyProof.Registered).
	table      atomic.Pointer[p256verify.Table]
	building   atomic.Bool
	evicted    atomic.Bool
	registered atomic.Bool
}

// keyCacheSize bounds the parsed-key cache. Decompressing a point costs a
// square root (tens of µs); a hit costs a map lookup.
const keyCacheSize = 4096

// keyCache maps (curve, raw key bytes) to a parsed key. With the P-256 tables
// some of its keys hold (p256tables.go), it is the only mutable state in the
// package. Keys are added only after a signature made with them has verified,
// so garbage keys never occupy it; when full, an arbitrary entry is evicted
// (Go randomises map iteration), and its table with it.
type keyCache struct {
	mu sync.RWMutex
	m  map[string]*publicKey
}

var parsedKeys = &keyCache{m: make(map[string]*publicKey, 64)}

func (c *keyCache) get(k string) *publicKey {
	c.mu.RLock()
	pk := c.m[k]
	c.mu.RUnlock()
	return pk
}

func (c *keyCache) put(k string, pk *publicKey) {
	c.mu.Lock()
	if _, ok := c.m[k]; ok {
		// Two requests parsed the same new key at once; keep the entry others may
		// already use (and may have built a table for).
		c.mu.Unlock()
		return
	}
	if len(c.m) >= keyCacheSize {
		for old, opk := range c.m {
			delete(c.m, old)
			if opk.p256 != nil {
				p256Tables.drop(opk)
			}
			break
		}
	}
	c.m[k] = pk
	c.mu.Unlock()
}

func cacheKey(curve Curve, raw []byte) string {
	return string(curve) + "\x00" + string(raw)
}

// parsePublicKey parses raw key bytes for a curve, consulting the cache. The
// second result says whether the key came from the cache; callers add it with
// rememberKey once a signature has verified.
func parsePublicKey(curve Curve, raw []byte) (*publicKey, bool, error) {
	if pk := parsedKeys.get(cacheKey(curve, raw)); pk != nil {
		return pk, true, nil
	}
	pk, err := decodePublicKey(curve, raw)
	return pk, false, err
}

func rememberKey(raw []byte, pk *publicKey) {
	parsedKeys.put(cacheKey(pk.curve, raw), pk)
}

func decodePublicKey(curve Curve, raw []byte) (*publicKey, error) {
	switch curve {
	case CurveP256:
		return decodeP256(raw)
	case CurveSecp256k1:
		switch {
		case len(raw) == 33 && (raw[0] == 2 || raw[0] == 3), len(raw) == 65 && raw[0] == 4:
		default:
			return nil, malformed(
				"secp256k1 public key must be 33 bytes compressed (02/03) or 65 bytes uncompressed (04), got %d bytes",
				len(raw),
			)
		}
		k, err := secp256k1.ParsePubKey(raw)
		if err != nil {
			return nil, malformed("secp256k1 public key %s is not a point on the curve", hex.EncodeToString(raw))
		}
		return &publicKey{curve: curve, hex: hex.EncodeToString(k.SerializeCompressed()), k1: k}, nil
	case CurveEd25519:
		if len(raw) != ed25519.PublicKeySize {
			return nil, malformed("ed25519 public key must be 32 bytes, got %d bytes", len(raw))
		}
		return &publicKey{
			curve: curve,
			hex:   hex.EncodeToString(raw),
			ed:    ed25519.PublicKey(append([]byte(nil), raw...)),
		}, nil
	}
	return nil, malformed("unknown curve %q", string(curve))
}

func decodeP256(raw []byte) (*publicKey, error) {
	var uncompressed []byte
	switch {
	case len(raw) == 33 && (raw[0] == 2 || raw[0] == 3):
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), raw)
		if x == nil {
			return nil, malformed("P-256 public key %s is not a point on the curve", hex.EncodeToString(raw))
		}
		uncompressed = make([]byte, 65)
		uncompressed[0] = 4
		x.FillBytes(uncompressed[1:33])
		y.FillBytes(uncompressed[33:])
	case len(raw) == 65 && raw[0] == 4:
		uncompressed = raw
	default:
		return nil, malformed(
			"P-256 public key must be 33 bytes compressed (02/03) or 65 bytes uncompressed (04), got %d bytes",
			len(raw),
		)
	}
	k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), uncompressed)
	if err != nil {
		return nil, malformed("P-256 public key %s is not a point on the curve", hex.EncodeToString(raw))
	}
	return &publicKey{curve: CurveP256, hex: hex.EncodeToString(compressPoint(uncompressed)), p256: k}, nil
}

// compressPoint turns a 65-byte uncompressed SEC1 point into 33-byte
// compressed form.
func compressPoint(u []byte) []byte {
	c := make([]byte, 33)
	c[0] = 2 | u[64]&1
	copy(c[1:], u[1:33])
	return c
}
