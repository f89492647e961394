package stamp

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	secpecdsa "github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/sha3"

	"github.com/latchkey/latchkey/internal/wire"
)

// Header names, as the SDKs send them. HTTP header names are case-insensitive.
const (
	HeaderAPIKey   = "X-Stamp"
	HeaderWebAuthn = "X-Stamp-WebAuthn"
	HeaderAttested = "X-Stamp-Attested"
)

// Signature schemes of an X-Stamp (docs/wire.md §1).
const (
	SchemeP256            = "SIGNATURE_SCHEME_TK_API_P256"
	SchemeSecp256k1       = "SIGNATURE_SCHEME_TK_API_SECP256K1"
	SchemeEd25519         = "SIGNATURE_SCHEME_TK_API_ED25519"
	SchemeSecp256k1EIP191 = "SIGNATURE_SCHEME_TK_API_SECP256K1_EIP191"
)

// SchemeCurve returns the API key curve a signature scheme uses.
func SchemeCurve(scheme string) (Curve, bool) {
	switch scheme {
	case SchemeP256:
		return CurveP256, true
	case SchemeSecp256k1, SchemeSecp256k1EIP191:
		return CurveSecp256k1, true
	case SchemeEd25519:
		return CurveEd25519, true
	}
	return "", false
}

// APIKeyProof is what a valid X-Stamp proves: the holder of PublicKey signed
// the body.
type APIKeyProof struct {
	// PublicKey is lowercase hex as the API key is registered: compressed
	// SEC1 (33 bytes) for P-256 and secp256k1, 32 bytes for Ed25519, whatever
	// form the stamp carried.
	PublicKey string
	Curve     Curve
	Scheme    string
	// Signature is the hex signature as received, for the vote record.
	Signature string

	key *publicKey // the parsed key, for Registered
}

// Registered tells the package that the proof's key is a registered, unexpired
// API or session key, as the caller found it: only such keys get a P-256
// table (p256tables.go), so keys nobody registered cannot take the tables'
// memory or builds from those that are.
func (p APIKeyProof) Registered() {
	if p.key != nil && p.key.p256 != nil {
		p.key.registered.Store(true)
	}
}

type apiKeyStampJSON struct {
	PublicKey *string `json:"publicKey"`
	Scheme    *string `json:"scheme"`
	Signature *string `json:"signature"`
}

// VerifyAPIKey parses an X-Stamp header value and verifies its signature over
// body, the raw request bytes. It does not look the key up: the caller checks
// that PublicKey is a registered, unexpired API key of the right curve.
//
// A P-256 key that verifies repeatedly, and that the caller has reported
// registered (APIKeyProof.Registered), is verified with a precomputed table
// (p256tables.go); the answers are crypto/ecdsa's.
func VerifyAPIKey(header string, body []byte) (APIKeyProof, error) {
	return verifyAPIKey(header, body, false)
}

// VerifyAPIKeyStandard is VerifyAPIKey with P-256 signatures always verified
// by crypto/ecdsa and no table built: the standard library's cost, which
// latchkey bench reports as the crypto floor.
func VerifyAPIKeyStandard(header string, body []byte) (APIKeyProof, error) {
	return verifyAPIKey(header, body, true)
}

func verifyAPIKey(header string, body []byte, standard bool) (APIKeyProof, error) {
	if header == "" {
		return APIKeyProof{}, malformed("X-Stamp is empty")
	}
	if len(header) > MaxStampHeaderBytes {
		return APIKeyProof{}, malformed("X-Stamp is longer than %d bytes", MaxStampHeaderBytes)
	}
	raw, ok := decodeBase64(strings.TrimSpace(header))
	if !ok {
		return APIKeyProof{}, malformed("X-Stamp is not valid base64url")
	}
	st, err := parseAPIKeyStamp(raw)
	if err != nil {
		return APIKeyProof{}, malformed("X-Stamp is not a JSON object {publicKey, scheme, signature}")
	}
	switch {
	case st.PublicKey == nil || *st.PublicKey == "":
		return APIKeyProof{}, malformed("X-Stamp has no publicKey")
	case st.Scheme == nil || *st.Scheme == "":
		return APIKeyProof{}, malformed("X-Stamp has no scheme")
	case st.Signature == nil || *st.Signature == "":
		return APIKeyProof{}, malformed("X-Stamp has no signature")
	}
	scheme, sigHex, keyHex := *st.Scheme, *st.Signature, *st.PublicKey
	curve, ok := SchemeCurve(scheme)
	if !ok {
		return APIKeyProof{}, malformed("X-Stamp scheme %q is not supported (want one of %s, %s, %s, %s)",
			truncate(scheme), SchemeP256, SchemeSecp256k1, SchemeEd25519, SchemeSecp256k1EIP191)
	}
	keyRaw, ok := decodeHex(keyHex)
	if !ok {
		return APIKeyProof{}, malformed("X-Stamp publicKey is not hex")
	}
	sig, ok := decodeHex(sigHex)
	if !ok {
		return APIKeyProof{}, malformed("X-Stamp signature is not hex")
	}
	pk, cached, err := parsePublicKey(curve, keyRaw)
	if err != nil {
		return APIKeyProof{}, err
	}
	if err := verifyWithKey(scheme, pk, sig, body, cached, standard); err != nil {
		return APIKeyProof{}, err
	}
	if !cached {
		rememberKey(keyRaw, pk)
	}
	return APIKeyProof{PublicKey: pk.hex, Curve: curve, Scheme: scheme, Signature: sigHex, key: pk}, nil
}

// parseAPIKeyStamp decodes a stamp's JSON as json.Unmarshal into apiKeyStampJSON does. Stamps
// as clients make them (the three members, each once, named as written here, values without
// escapes) are read with wire.EachMember, which costs a small fraction of the decoder's
// reflection; anything else is left to json.Unmarshal.
func parseAPIKeyStamp(raw []byte) (apiKeyStampJSON, error) {
	if st, ok := parsePlainStamp(raw); ok {
		return st, nil
	}
	var st apiKeyStampJSON
	err := json.Unmarshal(raw, &st)
	return st, err
}

var stampMembers = []string{"publicKey", "scheme", "signature"}

func parsePlainStamp(raw []byte) (st apiKeyStampJSON, ok bool) {
	var v [3][]byte
	if !wire.Members(raw, stampMembers, v[:], false) {
		return st, false
	}
	for i, field := range [3]**string{&st.PublicKey, &st.Scheme, &st.Signature} {
		if v[i] == nil {
			continue
		}
		s, plain := wire.PlainString(v[i])
		if !plain {
			return st, false // an escape, or a value not a string
		}
		*field = &s
	}
	return st, true
}

func verifyWithKey(scheme string, pk *publicKey, sig, body []byte, cached, standard bool) error {
	switch scheme {
	case SchemeP256:
		if _, _, m := parseDER(sig); m != "" {
			return malformed("X-Stamp %s", m)
		}
		h := sha256.Sum256(body)
		if !verifyP256(pk, h[:], sig, cached, standard) {
			return unverified("X-Stamp signature does not verify for P-256 public key %s over the request body", pk.hex)
		}
	case SchemeSecp256k1, SchemeSecp256k1EIP191:
		var h []byte
		if scheme == SchemeSecp256k1 {
			d := sha256.Sum256(body)
			h = d[:]
		} else {
			h = EIP191Hash(body)
		}
		if err := verifySecp256k1(pk.k1, h, sig); err != nil {
			return err
		}
	case SchemeEd25519:
		if len(sig) != ed25519.SignatureSize {
			return malformed("X-Stamp ed25519 signature must be 64 bytes, got %d", len(sig))
		}
		if !ed25519.Verify(pk.ed, body, sig) {
			return unverified(
				"X-Stamp signature does not verify for Ed25519 public key %s over the request body",
				pk.hex,
			)
		}
	}
	return nil
}

// verifySecp256k1 verifies a DER ECDSA signature over a 32-byte digest. High-S
// signatures are accepted: decred's Verify does not enforce low S (its
// Serialize normalises, its Verify does not), matching P-256 behaviour.
func verifySecp256k1(k *secp256k1.PublicKey, digest, sig []byte) error {
	rb, sb, m := parseDER(sig)
	if m != "" {
		return malformed("X-Stamp %s", m)
	}
	var r, s secp256k1.ModNScalar
	if r.SetBytes(&rb) != 0 || s.SetBytes(&sb) != 0 {
		return unverified("X-Stamp signature component is not below the secp256k1 group order")
	}
	if !secpecdsa.NewSignature(&r, &s).Verify(digest, k) {
		pub := k.SerializeCompressed()
		return unverified("X-Stamp signature does not verify for secp256k1 public key %x over the request body", pub)
	}
	return nil
}

// EIP191Hash is keccak256("\x19Ethereum Signed Message:\n" + len(msg) + msg),
// the digest an Ethereum wallet's personal_sign signs.
func EIP191Hash(msg []byte) []byte {
	h := sha3.NewLegacyKeccak256()
	h.Write([]byte("\x19Ethereum Signed Message:\n"))
	h.Write([]byte(strconv.Itoa(len(msg))))
	h.Write(msg)
	return h.Sum(nil)
}

// truncate keeps echoed client input short in error messages.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
