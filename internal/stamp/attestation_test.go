package stamp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

func TestParseAttestationNoneAndPacked(t *testing.T) {
	auth, _ := stamptest.New(testRPID, testOrigin)
	challenge := []byte("registration-challenge-0123456789")
	for _, format := range []string{"none", "packed"} {
		t.Run(format, func(t *testing.T) {
			reg, err := auth.Attest(challenge, format)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range []string{base64.RawURLEncoding.EncodeToString(challenge), base64.URLEncoding.EncodeToString(challenge)} {
				r, err := ParseAttestation(Attestation(reg), ch, testPolicy)
				if err != nil {
					t.Fatal(err)
				}
				if r.CredentialID != auth.CredentialID() || r.PublicKey != auth.PublicKeyCompressed() ||
					r.Alg != AlgES256 ||
					r.AttestationFormat != format ||
					r.AAGUID != "1a7c4e2b-0000-4000-8000-6c617463686b" ||
					string(r.COSEPublicKey) != string(auth.COSEPublicKey()) {
					t.Fatalf("registered = %+v", r)
				}
			}
			// The stored key then verifies that authenticator's stamps.
			body := []byte(`{"organizationId":"o"}`)
			_, h, _ := auth.Stamp(body)
			a, _ := ParseWebAuthn(h)
			if _, err := a.Verify(body, auth.COSEPublicKey(), testPolicy); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// attObject re-assembles an attestation object from parts.
func attObject(format string, stmt stamptest.Map, authData []byte) string {
	return base64.RawURLEncoding.EncodeToString(
		stamptest.EncodeCBOR(
			stamptest.Map{{K: "fmt", V: format}, {K: "attStmt", V: stmt}, {K: "authData", V: authData}},
		),
	)
}

func buildAuthData(auth *stamptest.Authenticator, rpID string, flags byte, credID []byte, trailing []byte) []byte {
	h := sha256.Sum256([]byte(rpID))
	ad := append(h[:], flags, 0, 0, 0, 0)
	ad = append(ad, stamptest.AAGUID[:]...)
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(credID)))
	ad = append(ad, credID...)
	ad = append(ad, auth.COSEPublicKey()...)
	return append(ad, trailing...)
}

func TestParseAttestationErrors(t *testing.T) {
	auth, _ := stamptest.New(testRPID, testOrigin)
	challenge := []byte("chal")
	chB64 := base64.RawURLEncoding.EncodeToString(challenge)
	credID, _ := base64.RawURLEncoding.DecodeString(auth.CredentialID())
	good, _ := auth.Attest(challenge, "none")
	cdjCreate := stamptest.ClientDataJSON("webauthn.create", challenge, testOrigin)
	enc := base64.RawURLEncoding.EncodeToString
	ad := buildAuthData(auth, testRPID, stamptest.FlagUP|stamptest.FlagAT, credID, nil)
	with := func(f func(*stamptest.Registration)) Attestation {
		r := good
		f(&r)
		return Attestation(r)
	}
	for _, tc := range []struct {
		name      string
		att       Attestation
		challenge string
		kind      error
		msg       string
	}{
		{"empty challenge", Attestation(good), "", ErrMalformed, "challenge is empty"},
		{"wrong challenge", Attestation(good), enc([]byte("other")), ErrUnverified, "registration challenge"},
		{"wrong type", with(func(r *stamptest.Registration) {
			r.ClientDataJSON = enc(stamptest.ClientDataJSON("webauthn.get", challenge, testOrigin))
		}), chB64, ErrUnverified, "type"},
		{"wrong origin", with(func(r *stamptest.Registration) {
			r.ClientDataJSON = enc(stamptest.ClientDataJSON("webauthn.create", challenge, "https://evil.example"))
		}), chB64, ErrUnverified, "origin"},
		{"credential id mismatch", with(func(r *stamptest.Registration) { r.CredentialID = "AAAA" }), chB64, ErrUnverified, "does not match the credential id"},
		{"bad credential id", with(func(r *stamptest.Registration) { r.CredentialID = "!!" }), chB64, ErrMalformed, "credentialId"},
		{"bad attestationObject base64", with(func(r *stamptest.Registration) { r.AttestationObject = "**" }), chB64, ErrMalformed, "attestationObject"},
		{"attestationObject not CBOR", with(func(r *stamptest.Registration) { r.AttestationObject = enc([]byte{0xff}) }), chB64, ErrMalformed, "CBOR"},
		{"attestationObject not a map", with(func(r *stamptest.Registration) { r.AttestationObject = enc(stamptest.EncodeCBOR([]any{1})) }), chB64, ErrMalformed, "not a CBOR map"},
		{"no fmt", with(func(r *stamptest.Registration) {
			r.AttestationObject = enc(stamptest.EncodeCBOR(stamptest.Map{{K: "attStmt", V: stamptest.Map{}}, {K: "authData", V: ad}}))
		}), chB64, ErrMalformed, "fmt"},
		{"unknown fmt", with(func(r *stamptest.Registration) { r.AttestationObject = attObject("selfie", stamptest.Map{}, ad) }), chB64, ErrMalformed, "not supported"},
		{"none with statement", with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject("none", stamptest.Map{{K: "sig", V: []byte{1}}}, ad)
		}), chB64, ErrMalformed, "empty attStmt"},
		{"no AT flag", with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject("none", stamptest.Map{}, buildAuthData(auth, testRPID, stamptest.FlagUP, credID, nil))
		}), chB64, ErrMalformed, "AT flag"},
		{"missing UP flag", with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject("none", stamptest.Map{}, buildAuthData(auth, testRPID, stamptest.FlagAT, credID, nil))
		}), chB64, ErrUnverified, "UP"},
		{"wrong rpId", with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject("none", stamptest.Map{}, buildAuthData(auth, "evil.example", stamptest.FlagUP|stamptest.FlagAT, credID, nil))
		}), chB64, ErrUnverified, "rpIdHash"},
		{"trailing authData", with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject("none", stamptest.Map{}, buildAuthData(auth, testRPID, stamptest.FlagUP|stamptest.FlagAT, credID, []byte{0}))
		}), chB64, ErrMalformed, "trailing"},
		{"packed bad signature", with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject("packed", stamptest.Map{{K: "alg", V: -7}, {K: "sig", V: auth.Sign(ad, []byte("other"))}}, ad)
			r.ClientDataJSON = enc(cdjCreate)
		}), chB64, ErrUnverified, "does not verify"},
		{"packed alg mismatch", with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject("packed", stamptest.Map{{K: "alg", V: -257}, {K: "sig", V: auth.Sign(ad, cdjCreate)}}, ad)
			r.ClientDataJSON = enc(cdjCreate)
		}), chB64, ErrUnverified, "alg"},
		{"packed without sig", with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject("packed", stamptest.Map{{K: "alg", V: -7}}, ad)
		}), chB64, ErrMalformed, "sig"},
		// The limits, checked on the text before it is decoded.
		{"attestationObject over the limit", with(func(r *stamptest.Registration) {
			r.AttestationObject = enc(make([]byte, MaxAttestationObjectBytes+1))
		}), chB64, ErrMalformed, fmt.Sprintf("longer than %d bytes", MaxAttestationObjectBytes)},
		{"clientDataJson over the limit", with(func(r *stamptest.Registration) {
			r.ClientDataJSON = enc(make([]byte, MaxClientDataJSONBytes+1))
		}), chB64, ErrMalformed, fmt.Sprintf("longer than %d bytes", MaxClientDataJSONBytes)},
		{"attestationObject over the item budget", with(func(r *stamptest.Registration) {
			many := make([]any, MaxCBORItems)
			for i := range many {
				many[i] = 0
			}
			r.AttestationObject = attObject("none", stamptest.Map{{K: "x", V: many}}, ad)
		}), chB64, ErrMalformed, fmt.Sprintf("more than %d items", MaxCBORItems)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAttestation(tc.att, tc.challenge, testPolicy)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.kind, tc.msg)
			}
		})
	}

	// Certificate-based statements are accepted unchecked and recorded.
	for _, f := range []struct {
		format string
		stmt   stamptest.Map
	}{
		{"packed", stamptest.Map{{K: "alg", V: -7}, {K: "sig", V: []byte{1}}, {K: "x5c", V: []any{[]byte{0x30}}}}},
		{"fido-u2f", stamptest.Map{{K: "sig", V: []byte{1}}, {K: "x5c", V: []any{[]byte{0x30}}}}},
		{"apple", stamptest.Map{{K: "x5c", V: []any{[]byte{0x30}}}}},
	} {
		att := with(func(r *stamptest.Registration) {
			r.AttestationObject = attObject(f.format, f.stmt, ad)
			r.ClientDataJSON = enc(cdjCreate)
		})
		r, err := ParseAttestation(att, chB64, testPolicy)
		if err != nil || r.AttestationFormat != f.format {
			t.Fatalf("%s: %+v %v", f.format, r, err)
		}
	}
}
