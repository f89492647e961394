package custody

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Server-held API keys: keys Latchkey itself stamps requests with, such as an organization's
// auth proxy key. The private half is made here, sealed at once, and only ever opened here to
// sign one request body; callers see the public key and the stamp.

// The X-Stamp an API key sends (docs/wire.md §1): scheme, header name.
const (
	stampHeader = "X-Stamp"
	stampScheme = "SIGNATURE_SCHEME_TK_API_P256"
)

// NewAPIKey creates a P-256 API key whose private half is sealed for b. It returns the public
// key as API keys are registered (compressed point, lowercase hex) and the sealed private half.
func (c *Custodian) NewAPIKey(b Binding) (publicKey string, sealed []byte, err error) {
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return "", nil, err
	}
	scalar := k.Bytes()
	defer wipe(scalar)
	if sealed, err = c.kr.Seal(scalar, b); err != nil {
		return "", nil, err
	}
	return compressP256(k.PublicKey().Bytes()), sealed, nil
}

// StampWithAPIKey signs body with a key made by NewAPIKey, exactly as a Turnkey client stamps
// a request: it returns the header name and value (base64url of {publicKey, scheme,
// signature}, a DER ECDSA signature over SHA-256(body)).
func (c *Custodian) StampWithAPIKey(sealed []byte, b Binding, body []byte) (header, value string, err error) {
	scalar, err := c.kr.Open(sealed, b)
	if err != nil {
		return "", "", err
	}
	defer wipe(scalar)
	if len(scalar) != 32 {
		return "", "", errors.New("custody: sealed API key has the wrong length")
	}
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar)
	if err != nil {
		return "", "", fmt.Errorf("custody: sealed API key is not a P-256 scalar")
	}
	pub, err := k.PublicKey.Bytes()
	if err != nil {
		return "", "", err
	}
	d := sha256.Sum256(body)
	sig, err := ecdsa.SignASN1(rand.Reader, k, d[:])
	if err != nil {
		return "", "", err
	}
	// The TypeScript key order: publicKey, scheme, signature.
	v, err := json.Marshal(struct {
		PublicKey string `json:"publicKey"`
		Scheme    string `json:"scheme"`
		Signature string `json:"signature"`
	}{compressP256(pub), stampScheme, hex.EncodeToString(sig)})
	if err != nil {
		return "", "", err
	}
	return stampHeader, base64.RawURLEncoding.EncodeToString(v), nil
}

// compressP256 turns an uncompressed point (0x04‖X‖Y) into its compressed hex form.
func compressP256(u []byte) string {
	out := make([]byte, 33)
	out[0] = 0x02 | u[64]&1
	copy(out[1:], u[1:33])
	return hex.EncodeToString(out)
}
