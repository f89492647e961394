// Package stamptest is a software WebAuthn authenticator for tests: it
// creates P-256 (ES256) passkeys, produces registration attestations ("none"
// and "packed" self attestation) and X-Stamp-WebAuthn headers exactly as a
// browser and @turnkey/webauthn-stamper would. It is independent of package
// stamp (it shares no code with the verifier), so tests that pass through
// both check one implementation against another.
//
// Never use it outside tests: its keys live in memory unprotected.
package stamptest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Authenticator flags.
const (
	FlagUP = 0x01
	FlagUV = 0x04
	FlagAT = 0x40
	FlagED = 0x80
)

// AAGUID is the authenticator model this software authenticator reports.
var AAGUID = [16]byte{0x1a, 0x7c, 0x4e, 0x2b, 0x00, 0x00, 0x40, 0x00, 0x80, 0x00, 0x6c, 0x61, 0x74, 0x63, 0x68, 0x6b}

// Authenticator holds one ES256 credential scoped to an rpId. It is not safe
// for concurrent use (Stamp advances the counter).
type Authenticator struct {
	RPID   string
	Origin string
	// Counter is the signature counter; each assertion increments it first.
	Counter uint32

	key    *ecdsa.PrivateKey
	credID []byte
}

// New creates a credential for rpID, used from origin (for example
// "localhost" and "http://localhost:3000").
func New(rpID, origin string) (*Authenticator, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	id := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	return &Authenticator{RPID: rpID, Origin: origin, key: k, credID: id}, nil
}

// CredentialID is the credential id, base64url without padding.
func (a *Authenticator) CredentialID() string {
	return base64.RawURLEncoding.EncodeToString(a.credID)
}

// PublicKeyCompressed is the credential public key as compressed SEC1 hex.
func (a *Authenticator) PublicKeyCompressed() string {
	u := a.uncompressed()
	c := append([]byte{2 | u[64]&1}, u[1:33]...)
	return hex.EncodeToString(c)
}

func (a *Authenticator) uncompressed() []byte {
	u, err := a.key.PublicKey.Bytes()
	if err != nil {
		panic(err) // a generated key always encodes
	}
	return u
}

// COSEPublicKey is the credential public key as a COSE_Key:
// {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}.
func (a *Authenticator) COSEPublicKey() []byte {
	u := a.uncompressed()
	return EncodeCBOR(Map{{1, 2}, {3, -7}, {-1, 1}, {-2, u[1:33]}, {-3, u[33:65]}})
}

// ClientDataJSON builds clientDataJSON as a browser does.
func ClientDataJSON(typ string, challenge []byte, origin string) []byte {
	b, _ := json.Marshal(struct {
		Type        string `json:"type"`
		Challenge   string `json:"challenge"`
		Origin      string `json:"origin"`
		CrossOrigin bool   `json:"crossOrigin"`
	}{typ, base64.RawURLEncoding.EncodeToString(challenge), origin, false})
	return b
}

// BodyChallenge is the WebAuthn challenge for a stamped body: the ASCII bytes
// of lowercase hex SHA-256(body).
func BodyChallenge(body []byte) []byte {
	h := sha256.Sum256(body)
	return []byte(hex.EncodeToString(h[:]))
}

// Sign signs authenticatorData ‖ SHA-256(clientDataJSON) with the credential
// key, DER encoded.
func (a *Authenticator) Sign(authData, clientDataJSON []byte) []byte {
	c := sha256.Sum256(clientDataJSON)
	h := sha256.Sum256(append(append([]byte(nil), authData...), c[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, h[:])
	if err != nil {
		panic(err)
	}
	return sig
}

// AuthenticatorData builds the 37-byte assertion authenticator data for
// rpID with the given flags and counter.
func AuthenticatorData(rpID string, flags byte, counter uint32) []byte {
	h := sha256.Sum256([]byte(rpID))
	ad := append(h[:], flags)
	return binary.BigEndian.AppendUint32(ad, counter)
}

// Registration mirrors stamp.Attestation field for field, so
// stamp.Attestation(reg) converts it; the JSON names are Turnkey's.
type Registration struct {
	CredentialID      string   `json:"credentialId"`
	ClientDataJSON    string   `json:"clientDataJson"`
	AttestationObject string   `json:"attestationObject"`
	Transports        []string `json:"transports"`
}

// Attest produces a registration for challenge (raw bytes; send
// base64url(challenge) beside it) with attestation format "none" or
// "packed" (self attestation).
func (a *Authenticator) Attest(challenge []byte, format string) (Registration, error) {
	cdj := ClientDataJSON("webauthn.create", challenge, a.Origin)
	h := sha256.Sum256([]byte(a.RPID))
	ad := append(h[:], FlagUP|FlagUV|FlagAT)
	ad = binary.BigEndian.AppendUint32(ad, a.Counter)
	ad = append(ad, AAGUID[:]...)
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(a.credID)))
	ad = append(ad, a.credID...)
	ad = append(ad, a.COSEPublicKey()...)
	var stmt Map
	switch format {
	case "none":
		stmt = Map{}
	case "packed":
		stmt = Map{{"alg", -7}, {"sig", a.Sign(ad, cdj)}}
	default:
		return Registration{}, fmt.Errorf("stamptest: unsupported attestation format %q", format)
	}
	obj := EncodeCBOR(Map{{"fmt", format}, {"attStmt", stmt}, {"authData", ad}})
	return Registration{
		CredentialID:      a.CredentialID(),
		ClientDataJSON:    base64.RawURLEncoding.EncodeToString(cdj),
		AttestationObject: base64.RawURLEncoding.EncodeToString(obj),
		Transports:        []string{"AUTHENTICATOR_TRANSPORT_INTERNAL"},
	}, nil
}

// AssertionHeader encodes an X-Stamp-WebAuthn value as
// @turnkey/webauthn-stamper does: raw JSON, base64url fields without padding.
func AssertionHeader(credentialID string, authData, clientDataJSON, signature []byte) string {
	enc := base64.RawURLEncoding.EncodeToString
	b, _ := json.Marshal(struct {
		AuthenticatorData string `json:"authenticatorData"`
		ClientDataJSON    string `json:"clientDataJson"`
		CredentialID      string `json:"credentialId"`
		Signature         string `json:"signature"`
	}{enc(authData), enc(clientDataJSON), credentialID, enc(signature)})
	return string(b)
}

// Stamp signs body as a passkey stamp; it makes *Authenticator a
// stamp.Stamper. Flags are UP|UV; the counter increments.
func (a *Authenticator) Stamp(body []byte) (headerName, headerValue string, err error) {
	a.Counter++
	ad := AuthenticatorData(a.RPID, FlagUP|FlagUV, a.Counter)
	cdj := ClientDataJSON("webauthn.get", BodyChallenge(body), a.Origin)
	return "X-Stamp-WebAuthn", AssertionHeader(a.CredentialID(), ad, cdj, a.Sign(ad, cdj)), nil
}
