package stamp

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// Stamper signs request bodies as a Turnkey client does. Stampers hold a
// private key in memory; they never print it.
type Stamper interface {
	// Stamp returns the header to send with body, the exact bytes sent.
	Stamp(body []byte) (headerName, headerValue string, err error)
}

// PublicKeyer is implemented by the API-key stampers of this package.
type PublicKeyer interface {
	PublicKey() string // lowercase hex, as registered
}

type apiKeyStamper struct {
	scheme string
	pub    string
	sign   func(body []byte) ([]byte, error)
}

func (s *apiKeyStamper) PublicKey() string { return s.pub }

func (s *apiKeyStamper) Stamp(body []byte) (string, string, error) {
	sig, err := s.sign(body)
	if err != nil {
		return "", "", err
	}
	// The TypeScript key order: publicKey, scheme, signature.
	v, err := json.Marshal(struct {
		PublicKey string `json:"publicKey"`
		Scheme    string `json:"scheme"`
		Signature string `json:"signature"`
	}{s.pub, s.scheme, hex.EncodeToString(sig)})
	if err != nil {
		return "", "", err
	}
	return HeaderAPIKey, base64.RawURLEncoding.EncodeToString(v), nil
}

func parseP256Private(privateKeyHex string) (*ecdsa.PrivateKey, error) {
	b, ok := decodeHex(privateKeyHex)
	if !ok || len(b) != 32 {
		return nil, malformed("P-256 private key must be 32 bytes of hex")
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), b)
	if err != nil {
		return nil, malformed("P-256 private key is not a valid scalar")
	}
	return k, nil
}

func p256PublicHex(k *ecdsa.PrivateKey) (string, error) {
	u, err := k.PublicKey.Bytes()
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(compressPoint(u)), nil
}

// NewP256Stamper returns an X-Stamp stamper for a P-256 API key given as a
// 32-byte scalar in hex: scheme SIGNATURE_SCHEME_TK_API_P256, compressed
// public key, DER signature over SHA-256(body).
func NewP256Stamper(privateKeyHex string) (Stamper, error) {
	k, err := parseP256Private(privateKeyHex)
	if err != nil {
		return nil, err
	}
	pub, err := p256PublicHex(k)
	if err != nil {
		return nil, err
	}
	return &apiKeyStamper{scheme: SchemeP256, pub: pub, sign: func(body []byte) ([]byte, error) {
		h := sha256.Sum256(body)
		return ecdsa.SignASN1(rand.Reader, k, h[:])
	}}, nil
}

func parseSecp256k1Private(privateKeyHex string) (*secp256k1.PrivateKey, error) {
	b, ok := decodeHex(privateKeyHex)
	if !ok || len(b) != 32 {
		return nil, malformed("secp256k1 private key must be 32 bytes of hex")
	}
	var s secp256k1.ModNScalar
	if s.SetByteSlice(b) || s.IsZero() {
		return nil, malformed("secp256k1 private key is not a valid scalar")
	}
	return secp256k1.NewPrivateKey(&s), nil
}

// NewSecp256k1Stamper returns an X-Stamp stamper for a secp256k1 API key (32-byte
// scalar hex): scheme SIGNATURE_SCHEME_TK_API_SECP256K1, DER (low-S)
// signature over SHA-256(body).
func NewSecp256k1Stamper(privateKeyHex string) (Stamper, error) {
	k, err := parseSecp256k1Private(privateKeyHex)
	if err != nil {
		return nil, err
	}
	return &apiKeyStamper{scheme: SchemeSecp256k1, pub: hex.EncodeToString(k.PubKey().SerializeCompressed()),
		sign: func(body []byte) ([]byte, error) {
			h := sha256.Sum256(body)
			return secpecdsa.Sign(k, h[:]).Serialize(), nil
		}}, nil
}

// NewEIP191Stamper returns an X-Stamp stamper that signs as an Ethereum
// wallet's personal_sign does (scheme SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191,
// r‖s as DER, v dropped), for tests of wallet login.
func NewEIP191Stamper(privateKeyHex string) (Stamper, error) {
	k, err := parseSecp256k1Private(privateKeyHex)
	if err != nil {
		return nil, err
	}
	return &apiKeyStamper{scheme: SchemeSecp256k1EIP191, pub: hex.EncodeToString(k.PubKey().SerializeCompressed()),
		sign: func(body []byte) ([]byte, error) {
			return secpecdsa.Sign(k, EIP191Hash(body)).Serialize(), nil
		}}, nil
}

func parseEd25519Private(privateKeyHex string) (ed25519.PrivateKey, error) {
	b, ok := decodeHex(privateKeyHex)
	if !ok || (len(b) != ed25519.SeedSize && len(b) != ed25519.PrivateKeySize) {
		return nil, malformed("ed25519 private key must be a 32-byte seed or 64-byte seed‖public key, in hex")
	}
	k := ed25519.NewKeyFromSeed(b[:ed25519.SeedSize])
	if len(b) == ed25519.PrivateKeySize && !bytes.Equal(b[32:], k[32:]) {
		return nil, malformed("ed25519 private key: the public half does not match the seed")
	}
	return k, nil
}

// NewEd25519Stamper returns an X-Stamp stamper for an Ed25519 API key, given
// as a 32-byte seed or the 64-byte seed‖public key form go-sdk uses, in hex.
func NewEd25519Stamper(privateKeyHex string) (Stamper, error) {
	k, err := parseEd25519Private(privateKeyHex)
	if err != nil {
		return nil, err
	}
	return &apiKeyStamper{scheme: SchemeEd25519, pub: hex.EncodeToString(k[32:]),
		sign: func(body []byte) ([]byte, error) { return ed25519.Sign(k, body), nil }}, nil
}

// PublicKeyHex returns the public key, as registered, of a private key in
// the forms the stampers accept.
func PublicKeyHex(curve Curve, privateKeyHex string) (string, error) {
	switch curve {
	case CurveP256:
		k, err := parseP256Private(privateKeyHex)
		if err != nil {
			return "", err
		}
		return p256PublicHex(k)
	case CurveSecp256k1:
		k, err := parseSecp256k1Private(privateKeyHex)
		if err != nil {
			return "", err
		}
		return hex.EncodeToString(k.PubKey().SerializeCompressed()), nil
	case CurveEd25519:
		k, err := parseEd25519Private(privateKeyHex)
		if err != nil {
			return "", err
		}
		return hex.EncodeToString(k[32:]), nil
	}
	return "", malformed("unknown curve %q", string(curve))
}

// GenerateKey creates an API key pair. The private key is a 32-byte scalar
// for P-256 and secp256k1 and the 64-byte seed‖public key (go-sdk's form)
// for Ed25519, in hex; the public key is as registered.
func GenerateKey(curve Curve) (privateKeyHex, publicKeyHex string, err error) {
	switch curve {
	case CurveP256:
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return "", "", err
		}
		b, err := k.Bytes()
		if err != nil {
			return "", "", err
		}
		pub, err := p256PublicHex(k)
		if err != nil {
			return "", "", err
		}
		return hex.EncodeToString(b), pub, nil
	case CurveSecp256k1:
		k, err := secp256k1.GeneratePrivateKey()
		if err != nil {
			return "", "", err
		}
		return hex.EncodeToString(k.Serialize()), hex.EncodeToString(k.PubKey().SerializeCompressed()), nil
	case CurveEd25519:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return "", "", err
		}
		return hex.EncodeToString(priv), hex.EncodeToString(pub), nil
	}
	return "", "", malformed("unknown curve %q", string(curve))
}
