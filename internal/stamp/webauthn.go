package stamp

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
)

// Authenticator data flags (WebAuthn §6.1).
const (
	flagUP = 0x01 // user present
	flagUV = 0x04 // user verified
	flagAT = 0x40 // attested credential data included
	flagED = 0x80 // extension data included
)

// Assertion is a parsed X-Stamp-WebAuthn header.
type Assertion struct {
	// CredentialID is base64url as received; see CanonicalCredentialID.
	CredentialID      string
	AuthenticatorData []byte
	ClientDataJSON    []byte
	Signature         []byte
}

// WebAuthnPolicy restricts which relying party ids and origins are accepted.
// An empty list accepts any.
type WebAuthnPolicy struct {
	RPIDs   []string
	Origins []string
}

type webAuthnStampJSON struct {
	AuthenticatorData *string `json:"authenticatorData"`
	ClientDataJSON    *string `json:"clientDataJson"`
	CredentialID      *string `json:"credentialId"`
	Signature         *string `json:"signature"`
}

// ParseWebAuthn parses an X-Stamp-WebAuthn header value: raw JSON (not
// base64) with base64url fields. A base64url-wrapped value is tolerated.
func ParseWebAuthn(header string) (Assertion, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return Assertion{}, malformed("X-Stamp-WebAuthn is empty")
	}
	if len(header) > MaxStampHeaderBytes {
		return Assertion{}, malformed("X-Stamp-WebAuthn is longer than %d bytes", MaxStampHeaderBytes)
	}
	raw := []byte(header)
	if header[0] != '{' {
		b, ok := decodeBase64(header)
		if !ok {
			return Assertion{}, malformed("X-Stamp-WebAuthn is neither JSON nor base64url JSON")
		}
		raw = b
	}
	var st webAuthnStampJSON
	if err := json.Unmarshal(raw, &st); err != nil {
		return Assertion{}, malformed(
			"X-Stamp-WebAuthn is not a JSON object {authenticatorData, clientDataJson, credentialId, signature}",
		)
	}
	fields := []struct {
		name string
		v    *string
		out  *[]byte
	}{
		{"authenticatorData", st.AuthenticatorData, nil},
		{"clientDataJson", st.ClientDataJSON, nil},
		{"credentialId", st.CredentialID, nil},
		{"signature", st.Signature, nil},
	}
	var a Assertion
	fields[0].out, fields[1].out, fields[3].out = &a.AuthenticatorData, &a.ClientDataJSON, &a.Signature
	for _, f := range fields {
		if f.v == nil || *f.v == "" {
			return Assertion{}, malformed("X-Stamp-WebAuthn has no %s", f.name)
		}
		b, ok := decodeBase64(*f.v)
		if !ok {
			return Assertion{}, malformed("X-Stamp-WebAuthn %s is not valid base64url", f.name)
		}
		if f.out != nil {
			*f.out = b
		}
	}
	a.CredentialID = *st.CredentialID
	return a, nil
}

// CanonicalCredentialID returns the credential id as base64url without
// padding, the form Registered.CredentialID uses, whatever form it arrived in.
func (a Assertion) CanonicalCredentialID() (string, error) {
	return CanonicalCredentialID(a.CredentialID)
}

// CanonicalCredentialID re-encodes a base64 or base64url credential id as
// base64url without padding.
func CanonicalCredentialID(id string) (string, error) {
	b, ok := decodeBase64(id)
	if !ok || len(b) == 0 {
		return "", malformed("credential id is not valid base64url")
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// WebAuthnChallenge returns the challenge bytes a WebAuthn stamp over body
// must carry: the UTF-8 bytes of lowercase hex(SHA-256(body)).
func WebAuthnChallenge(body []byte) []byte {
	h := sha256.Sum256(body)
	out := make([]byte, hex.EncodedLen(len(h)))
	hex.Encode(out, h[:])
	return out
}

type clientData struct {
	Type      *string `json:"type"`
	Challenge *string `json:"challenge"`
	Origin    *string `json:"origin"`
}

// checkClientData parses clientDataJSON and checks type, challenge and origin.
func checkClientData(cdj []byte, wantType string, wantChallenge []byte, pol WebAuthnPolicy) error {
	var cd clientData
	if err := json.Unmarshal(cdj, &cd); err != nil {
		return malformed("clientDataJSON is not a JSON object")
	}
	if cd.Type == nil || cd.Challenge == nil || cd.Origin == nil {
		return malformed("clientDataJSON needs type, challenge and origin")
	}
	if *cd.Type != wantType {
		return unverified("clientDataJSON type is %q, want %q", truncate(*cd.Type), wantType)
	}
	ch, ok := decodeBase64(*cd.Challenge)
	if !ok {
		return malformed("clientDataJSON challenge is not valid base64url")
	}
	if !bytes.Equal(ch, wantChallenge) {
		if wantType == "webauthn.get" {
			return unverified(
				"clientDataJSON challenge does not match the request body (want base64url of hex SHA-256 of the body, %s)",
				base64.RawURLEncoding.EncodeToString(wantChallenge),
			)
		}
		return unverified("clientDataJSON challenge does not match the registration challenge")
	}
	if len(pol.Origins) > 0 && !slices.Contains(pol.Origins, *cd.Origin) {
		return unverified("clientDataJSON origin %q is not an allowed origin", truncate(*cd.Origin))
	}
	return nil
}

// checkRP checks the rpIdHash and the user-present flag.
func checkRP(authData []byte, pol WebAuthnPolicy) error {
	if len(pol.RPIDs) > 0 {
		ok := false
		for _, id := range pol.RPIDs {
			h := sha256.Sum256([]byte(id))
			if bytes.Equal(authData[:32], h[:]) {
				ok = true
				break
			}
		}
		if !ok {
			return unverified(
				"authenticatorData rpIdHash matches none of the allowed rpIds (%s)",
				strings.Join(pol.RPIDs, ", "),
			)
		}
	}
	if authData[32]&flagUP == 0 {
		return unverified("authenticatorData user-present (UP) flag is not set")
	}
	return nil
}

// signedMessage is authenticatorData ‖ SHA-256(clientDataJSON).
func signedMessage(authData, cdj []byte) []byte {
	h := sha256.Sum256(cdj)
	msg := make([]byte, 0, len(authData)+len(h))
	return append(append(msg, authData...), h[:]...)
}

// Verify checks the assertion as a stamp over body, the raw request bytes,
// made with the credential whose COSE public key (as stored at registration)
// is cosePublicKey. It returns the authenticator's signature counter; the
// caller decides what to do if it did not increase (many passkeys always
// report 0). The caller must also check that the credential id belongs to
// the key it passed.
func (a Assertion) Verify(body []byte, cosePublicKey []byte, pol WebAuthnPolicy) (uint32, error) {
	return a.verifyChallenge(WebAuthnChallenge(body), cosePublicKey, pol)
}

// verifyChallenge is Verify for any expected challenge bytes.
func (a Assertion) verifyChallenge(challenge []byte, cosePublicKey []byte, pol WebAuthnPolicy) (uint32, error) {
	if err := checkClientData(a.ClientDataJSON, "webauthn.get", challenge, pol); err != nil {
		return 0, err
	}
	if len(a.AuthenticatorData) < 37 {
		return 0, malformed("authenticatorData is %d bytes, want at least 37", len(a.AuthenticatorData))
	}
	if err := checkRP(a.AuthenticatorData, pol); err != nil {
		return 0, err
	}
	key, err := parseCOSEKey(cosePublicKey)
	if err != nil {
		return 0, err
	}
	if err := key.verify(signedMessage(a.AuthenticatorData, a.ClientDataJSON), a.Signature, "WebAuthn assertion signature"); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(a.AuthenticatorData[33:37]), nil
}
