package stamp

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
)

// Limits of a passkey registration, checked on the base64url text before it is
// decoded (docs/limits.md §3).
const (
	// MaxAttestationObjectBytes bounds the decoded attestationObject. Certificate
	// chains in tpm or android-key statements reach 3 to 5 KiB; a none or packed
	// attestation is about 300 bytes.
	MaxAttestationObjectBytes = 64 << 10
	// MaxClientDataJSONBytes bounds the decoded clientDataJSON of a registration.
	// Browsers send 130 to 300 bytes (Chrome's longest adds a note of about 100).
	MaxClientDataJSONBytes = 16 << 10
)

// decodedLen is the number of bytes base64 text s decodes to (if it is valid),
// known before decoding it.
func decodedLen(s string) int { return len(strings.TrimRight(s, "=")) * 6 / 8 }

// Attestation is a passkey registration as Turnkey clients send it
// (docs/wire.md §2 "Registration"): every field base64url.
// Transports are carried for the caller to store; they are not checked here.
type Attestation struct {
	CredentialID      string
	ClientDataJSON    string
	AttestationObject string
	Transports        []string
}

// Registered is a checked passkey credential, ready to store.
type Registered struct {
	// CredentialID is base64url without padding.
	CredentialID string
	// COSEPublicKey is the credential public key exactly as CBOR-encoded in
	// authData; store it and pass it to Assertion.Verify.
	COSEPublicKey []byte
	// PublicKey is a display form: compressed SEC1 hex for ES256, 32-byte hex
	// for EdDSA, hex of the COSE key for RS256.
	PublicKey         string
	Alg               int
	AAGUID            string
	AttestationFormat string
	SignCount         uint32
}

// attestationFormats are the registered WebAuthn attestation statement
// formats (IANA "WebAuthn Attestation Statement Format Identifiers").
var attestationFormats = map[string]bool{
	"none": true, "packed": true, "tpm": true, "android-key": true,
	"android-safetynet": true, "fido-u2f": true, "apple": true, "compound": true,
}

// attestedAuthData is authenticator data with attested credential data.
type attestedAuthData struct {
	flags     byte
	signCount uint32
	aaguid    [16]byte
	credID    []byte
	coseKey   []byte // exact bytes
	key       *coseKey
}

// parseAttestedAuthData parses authData that must carry attested credential
// data (WebAuthn §6.5.1), with extensions if the ED flag is set, and nothing
// after them.
func parseAttestedAuthData(ad []byte) (*attestedAuthData, error) {
	if len(ad) < 37 {
		return nil, malformed("authData is %d bytes, want at least 37", len(ad))
	}
	out := &attestedAuthData{flags: ad[32], signCount: binary.BigEndian.Uint32(ad[33:37])}
	if out.flags&flagAT == 0 {
		return nil, malformed("authData has no attested credential data (AT flag not set)")
	}
	rest := ad[37:]
	if len(rest) < 18 {
		return nil, malformed("authData attested credential data is truncated")
	}
	copy(out.aaguid[:], rest[:16])
	n := int(binary.BigEndian.Uint16(rest[16:18]))
	rest = rest[18:]
	if n == 0 || n > 1023 {
		return nil, malformed("authData credentialId length %d is outside 1..1023", n)
	}
	if len(rest) < n {
		return nil, malformed("authData credentialId is truncated")
	}
	out.credID, rest = rest[:n], rest[n:]
	v, used, err := cborDecodeFirst(rest)
	if err != nil {
		return nil, malformed("authData credential public key: %v", err)
	}
	out.coseKey, rest = append([]byte(nil), rest[:used]...), rest[used:]
	if out.key, err = coseKeyFromValue(v, out.coseKey); err != nil {
		return nil, err
	}
	if out.flags&flagED != 0 {
		ext, used, err := cborDecodeFirst(rest)
		if err != nil {
			return nil, malformed("authData extensions: %v", err)
		}
		if _, ok := ext.(cborMap); !ok {
			return nil, malformed("authData extensions are not a CBOR map")
		}
		rest = rest[used:]
	}
	if len(rest) != 0 {
		return nil, malformed("authData has %d unexpected trailing bytes", len(rest))
	}
	return out, nil
}

// ParseAttestation checks a passkey registration: clientDataJSON (type
// webauthn.create, the given registration challenge, an allowed origin), the
// attestation object, the authenticator data (allowed rpId, UP and AT flags,
// credential id equal to att.CredentialID) and the attestation statement as
// doc.go describes. challenge is the base64url registration challenge sent
// beside the attestation.
func ParseAttestation(att Attestation, challenge string, pol WebAuthnPolicy) (Registered, error) {
	if challenge == "" {
		return Registered{}, malformed("registration challenge is empty")
	}
	wantChallenge, ok := decodeBase64(challenge)
	if !ok {
		return Registered{}, malformed("registration challenge is not valid base64url")
	}
	credID, ok := decodeBase64(att.CredentialID)
	if !ok || len(credID) == 0 {
		return Registered{}, malformed("attestation credentialId is not valid base64url")
	}
	if decodedLen(att.ClientDataJSON) > MaxClientDataJSONBytes {
		return Registered{}, malformed("attestation clientDataJson is longer than %d bytes", MaxClientDataJSONBytes)
	}
	cdj, ok := decodeBase64(att.ClientDataJSON)
	if !ok || len(cdj) == 0 {
		return Registered{}, malformed("attestation clientDataJson is not valid base64url")
	}
	if decodedLen(att.AttestationObject) > MaxAttestationObjectBytes {
		return Registered{}, malformed("attestationObject is longer than %d bytes", MaxAttestationObjectBytes)
	}
	attObj, ok := decodeBase64(att.AttestationObject)
	if !ok || len(attObj) == 0 {
		return Registered{}, malformed("attestationObject is not valid base64url")
	}
	if err := checkClientData(cdj, "webauthn.create", wantChallenge, pol); err != nil {
		return Registered{}, err
	}
	v, err := cborDecode(attObj)
	if err != nil {
		return Registered{}, malformed("attestationObject: %v", err)
	}
	m, ok := v.(cborMap)
	if !ok {
		return Registered{}, malformed("attestationObject is not a CBOR map")
	}
	fmtV, _ := m.textKey("fmt")
	format, ok := fmtV.(string)
	if !ok {
		return Registered{}, malformed("attestationObject has no text fmt")
	}
	stmtV, _ := m.textKey("attStmt")
	stmt, ok := stmtV.(cborMap)
	if !ok {
		return Registered{}, malformed("attestationObject has no attStmt map")
	}
	adV, _ := m.textKey("authData")
	authData, ok := adV.([]byte)
	if !ok {
		return Registered{}, malformed("attestationObject has no authData byte string")
	}
	ad, err := parseAttestedAuthData(authData)
	if err != nil {
		return Registered{}, err
	}
	if err := checkRP(authData, pol); err != nil {
		return Registered{}, err
	}
	if !bytes.Equal(ad.credID, credID) {
		return Registered{}, unverified(
			"credentialId %s does not match the credential id in authData",
			base64.RawURLEncoding.EncodeToString(credID),
		)
	}
	if !attestationFormats[format] {
		return Registered{}, malformed("attestation format %q is not supported", truncate(format))
	}
	switch format {
	case "none":
		if len(stmt) != 0 {
			return Registered{}, malformed("attestation format none needs an empty attStmt")
		}
	case "packed":
		if err := checkPacked(stmt, ad, authData, cdj); err != nil {
			return Registered{}, err
		}
	default:
		// Certificate-based formats: accepted without checking the chain
		// (doc.go explains why); the format is recorded.
	}
	return Registered{
		CredentialID:      base64.RawURLEncoding.EncodeToString(credID),
		COSEPublicKey:     ad.coseKey,
		PublicKey:         ad.key.display,
		Alg:               ad.key.alg,
		AAGUID:            formatUUID(ad.aaguid),
		AttestationFormat: format,
		SignCount:         ad.signCount,
	}, nil
}

// checkPacked verifies a "packed" statement (WebAuthn §8.2). Self
// attestation (no x5c) is verified with the credential key; with x5c the
// statement is accepted unchecked.
func checkPacked(stmt cborMap, ad *attestedAuthData, authData, cdj []byte) error {
	algV, _ := stmt.textKey("alg")
	algI, ok := algV.(cborInt)
	if !ok {
		return malformed("packed attStmt has no integer alg")
	}
	alg, _ := algI.int64()
	sigV, _ := stmt.textKey("sig")
	sig, ok := sigV.([]byte)
	if !ok {
		return malformed("packed attStmt has no sig byte string")
	}
	if x5c, present := stmt.textKey("x5c"); present {
		if arr, ok := x5c.([]any); !ok || len(arr) == 0 {
			return malformed("packed attStmt x5c is not a non-empty array")
		}
		return nil
	}
	if _, present := stmt.textKey("ecdaaKeyId"); present {
		return malformed("packed attestation with ECDAA is not supported")
	}
	if alg != int64(ad.key.alg) {
		return unverified("packed self attestation alg %d does not match the credential key alg %d", alg, ad.key.alg)
	}
	return ad.key.verify(signedMessage(authData, cdj), sig, "packed self attestation signature")
}

func formatUUID(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
