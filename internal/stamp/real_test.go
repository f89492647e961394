package stamp

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

func TestRealBrowserAssertion(t *testing.T) {
	raw, err := os.ReadFile("testdata/real_assertion.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		AuthenticatorData, Signature, ClientDataJSON, Origin, Challenge, PublicKeySPKI string
		RPID                                                                           string `json:"rpId"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	spki, _ := base64.StdEncoding.DecodeString(v.PublicKeySPKI)
	pk, err := x509.ParsePKIXPublicKey(spki)
	if err != nil {
		t.Fatal(err)
	}
	u, err := pk.(*ecdsa.PublicKey).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	cose := stamptest.EncodeCBOR(
		stamptest.Map{{K: 1, V: 2}, {K: 3, V: -7}, {K: -1, V: 1}, {K: -2, V: u[1:33]}, {K: -3, V: u[33:]}},
	)
	header := `{"authenticatorData":"` + v.AuthenticatorData + `","clientDataJson":"` + v.ClientDataJSON +
		`","credentialId":"AA","signature":"` + base64.RawURLEncoding.EncodeToString(mustB64(t, v.Signature)) + `"}`
	a, err := ParseWebAuthn(header)
	if err != nil {
		t.Fatal(err)
	}
	pol := WebAuthnPolicy{RPIDs: []string{v.RPID}, Origins: []string{v.Origin}}
	n, err := a.verifyChallenge([]byte(v.Challenge), cose, pol)
	if err != nil {
		t.Fatal(err)
	}
	if n != 74 {
		t.Fatalf("signCount = %d, want 74", n)
	}
	// As a Turnkey stamp over any body it fails on the challenge.
	if _, err := a.Verify([]byte("{}"), cose, pol); !errors.Is(err, ErrUnverified) {
		t.Fatalf("Verify: %v", err)
	}
	a.AuthenticatorData[36]++
	if _, err := a.verifyChallenge([]byte(v.Challenge), cose, pol); !errors.Is(err, ErrUnverified) {
		t.Fatalf("tampered counter: %v", err)
	}
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, ok := decodeBase64(s)
	if !ok {
		t.Fatalf("bad base64 %q", s)
	}
	return b
}

// TestRealAuthenticatorRegistrations registers real YubiKey credentials and
// then verifies a real assertion with the stored COSE key.
func TestRealAuthenticatorRegistrations(t *testing.T) {
	raw, err := os.ReadFile("testdata/real_yubico.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Examples []struct {
			Name, RPID, Origin, Format, AttestationClientData, AttestationObject, CredentialID string
			AssertionClientData, AssertionAuthData, AssertionSignature                         string
			SignCount                                                                          uint32
		}
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for _, ex := range file.Examples {
		t.Run(ex.Name, func(t *testing.T) {
			pol := WebAuthnPolicy{RPIDs: []string{ex.RPID}, Origins: []string{ex.Origin}}
			var cd struct{ Challenge string }
			_ = json.Unmarshal([]byte(ex.AttestationClientData), &cd)
			reg, err := ParseAttestation(Attestation{
				CredentialID:      ex.CredentialID,
				ClientDataJSON:    base64.RawURLEncoding.EncodeToString([]byte(ex.AttestationClientData)),
				AttestationObject: ex.AttestationObject,
			}, cd.Challenge, pol)
			if err != nil {
				t.Fatal(err)
			}
			if reg.AttestationFormat != ex.Format || reg.Alg != AlgES256 || len(reg.PublicKey) != 66 {
				t.Fatalf("registered = %+v", reg)
			}
			if want, _ := CanonicalCredentialID(ex.CredentialID); reg.CredentialID != want {
				t.Fatalf("CredentialID = %s", reg.CredentialID)
			}
			a := Assertion{
				CredentialID:      ex.CredentialID,
				AuthenticatorData: mustB64(t, ex.AssertionAuthData),
				ClientDataJSON:    []byte(ex.AssertionClientData),
				Signature:         mustB64(t, ex.AssertionSignature),
			}
			_ = json.Unmarshal([]byte(ex.AssertionClientData), &cd)
			n, err := a.verifyChallenge(mustB64(t, cd.Challenge), reg.COSEPublicKey, pol)
			if err != nil {
				t.Fatal(err)
			}
			if n != ex.SignCount {
				t.Fatalf("signCount = %d, want %d", n, ex.SignCount)
			}
			// The attestation binds to its own challenge and rpId.
			if _, err := ParseAttestation(Attestation{CredentialID: ex.CredentialID,
				ClientDataJSON:    base64.RawURLEncoding.EncodeToString([]byte(ex.AttestationClientData)),
				AttestationObject: ex.AttestationObject}, "b3RoZXI", pol); !errors.Is(err, ErrUnverified) {
				t.Fatalf("other challenge: %v", err)
			}
		})
	}
}
