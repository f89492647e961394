package stamp

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

const (
	testRPID   = "app.example.com"
	testOrigin = "https://app.example.com"
)

var testPolicy = WebAuthnPolicy{RPIDs: []string{"other.example", testRPID}, Origins: []string{testOrigin}}

func TestWebAuthnChallengeVectors(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.WebAuthnChallenges {
		got := WebAuthnChallenge([]byte(c.Body))
		if string(got) != c.Hex {
			t.Errorf("challenge = %s, want %s", got, c.Hex)
		}
		if c.ClientDataChallenge != "" && base64.RawURLEncoding.EncodeToString(got) != c.ClientDataChallenge {
			t.Errorf(
				"clientData challenge = %s, want %s",
				base64.RawURLEncoding.EncodeToString(got),
				c.ClientDataChallenge,
			)
		}
	}
}

// TestWebAuthnHandAssembled checks an assertion whose every byte is laid
// out here by hand (COSE key, authenticatorData, clientDataJSON with the
// challenge from docs/wire.md §2), signed with the §1 fixture key.
func TestWebAuthnHandAssembled(t *testing.T) {
	v := loadVectors(t)
	priv, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), mustHex(t, v.P256.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	x, y := elliptic.UnmarshalCompressed(elliptic.P256(), mustHex(t, v.P256.PublicKey))
	// {1: 2, 3: -7, -1: 1, -2: x, -3: y}
	cose := mustHex(
		t,
		"a5"+"0102"+"0326"+"2001"+"215820"+hex.EncodeToString(
			x.FillBytes(make([]byte, 32)),
		)+"225820"+hex.EncodeToString(
			y.FillBytes(make([]byte, 32)),
		),
	)
	cdj := []byte(
		`{"type":"webauthn.get","challenge":"` + v.WebAuthnChallenges[0].ClientDataChallenge + `","origin":"https://app.example.com","crossOrigin":false}`,
	)
	rpHash := sha256.Sum256([]byte("app.example.com"))
	authData := append(rpHash[:], 0x05, 0, 0, 0, 7) // UP|UV, counter 7
	cdjHash := sha256.Sum256(cdj)
	digest := sha256.Sum256(append(append([]byte(nil), authData...), cdjHash[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, priv, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	header := `{"authenticatorData":"` + base64.RawURLEncoding.EncodeToString(authData) +
		`","clientDataJson":"` + base64.RawURLEncoding.EncodeToString(cdj) +
		`","credentialId":"AAEC","signature":"` + base64.RawURLEncoding.EncodeToString(sig) + `"}`
	a, err := ParseWebAuthn(header)
	if err != nil {
		t.Fatal(err)
	}
	if a.CredentialID != "AAEC" {
		t.Fatalf("CredentialID = %q", a.CredentialID)
	}
	n, err := a.Verify([]byte(v.P256.Body), cose, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if n != 7 {
		t.Fatalf("signCount = %d, want 7", n)
	}
	if built, err := COSEKeyFromP256(v.P256.PublicKey); err != nil || string(built) != string(cose) {
		t.Fatalf("COSEKeyFromP256 = %x, %v; want %x", built, err, cose)
	}
	if _, err := a.Verify([]byte(v.P256.Body+" "), cose, testPolicy); !errors.Is(err, ErrUnverified) ||
		!strings.Contains(err.Error(), "challenge") {
		t.Fatalf("other body: %v", err)
	}
}

func TestWebAuthnAuthenticatorRoundTrip(t *testing.T) {
	auth, err := stamptest.New(testRPID, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	var _ Stamper = auth
	body := []byte(`{"type":"ACTIVITY_TYPE_STAMP_LOGIN","timestampMs":"1","organizationId":"o","parameters":{}}`)
	for i := 1; i <= 3; i++ {
		name, value, err := auth.Stamp(body)
		if err != nil || !strings.EqualFold(name, HeaderWebAuthn) {
			t.Fatalf("%q %v", name, err)
		}
		a, err := ParseWebAuthn(value)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := a.CanonicalCredentialID(); id != auth.CredentialID() {
			t.Fatalf("credential id %q", id)
		}
		n, err := a.Verify(body, auth.COSEPublicKey(), testPolicy)
		if err != nil {
			t.Fatal(err)
		}
		if n != uint32(i) {
			t.Fatalf("counter = %d, want %d", n, i)
		}
		// Empty policy accepts any rpId and origin.
		if _, err := a.Verify(body, auth.COSEPublicKey(), WebAuthnPolicy{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWebAuthnVerifyErrors(t *testing.T) {
	auth, _ := stamptest.New(testRPID, testOrigin)
	other, _ := stamptest.New(testRPID, testOrigin)
	body := []byte(`{"organizationId":"o"}`)
	ch := stamptest.BodyChallenge(body)
	type parts struct {
		ad, cdj, sig []byte
	}
	build := func(typ string, challenge []byte, origin, rpID string, flags byte) parts {
		ad := stamptest.AuthenticatorData(rpID, flags, 1)
		cdj := stamptest.ClientDataJSON(typ, challenge, origin)
		return parts{ad, cdj, auth.Sign(ad, cdj)}
	}
	good := build("webauthn.get", ch, testOrigin, testRPID, stamptest.FlagUP)
	for _, tc := range []struct {
		name string
		p    parts
		key  []byte
		kind error
		msg  string
	}{
		{"wrong challenge", build("webauthn.get", stamptest.BodyChallenge([]byte("{}")), testOrigin, testRPID, 1), nil, ErrUnverified, "challenge does not match"},
		{"raw hash as challenge", build("webauthn.get", func() []byte { h := sha256.Sum256(body); return h[:] }(), testOrigin, testRPID, 1), nil, ErrUnverified, "challenge"},
		{"wrong type", build("webauthn.create", ch, testOrigin, testRPID, 1), nil, ErrUnverified, "type"},
		{"wrong origin", build("webauthn.get", ch, "https://evil.example", testRPID, 1), nil, ErrUnverified, "origin"},
		{"wrong rpId", build("webauthn.get", ch, testOrigin, "evil.example", 1), nil, ErrUnverified, "rpIdHash"},
		{"missing UP flag", build("webauthn.get", ch, testOrigin, testRPID, stamptest.FlagUV), nil, ErrUnverified, "UP"},
		{"short authenticatorData", parts{good.ad[:36], good.cdj, good.sig}, nil, ErrMalformed, "at least 37"},
		{"tampered authenticatorData", parts{append(append([]byte(nil), good.ad[:36]...), 9), good.cdj, good.sig}, nil, ErrUnverified, "does not verify"},
		{"wrong key", good, other.COSEPublicKey(), ErrUnverified, "does not verify"},
		{"non-DER signature", parts{good.ad, good.cdj, make([]byte, 64)}, nil, ErrMalformed, "not DER"},
		{"clientData not JSON", parts{good.ad, []byte("nope"), good.sig}, nil, ErrMalformed, "clientDataJSON"},
		{"clientData without origin", parts{good.ad, []byte(`{"type":"webauthn.get","challenge":"x"}`), good.sig}, nil, ErrMalformed, "origin"},
		{"bad COSE key", good, []byte{0xa0}, ErrMalformed, "kty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.key
			if key == nil {
				key = auth.COSEPublicKey()
			}
			a, err := ParseWebAuthn(stamptest.AssertionHeader(auth.CredentialID(), tc.p.ad, tc.p.cdj, tc.p.sig))
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Verify(body, key, testPolicy)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.kind, tc.msg)
			}
		})
	}
	a, _ := ParseWebAuthn(stamptest.AssertionHeader(auth.CredentialID(), good.ad, good.cdj, good.sig))
	if _, err := a.Verify(body, auth.COSEPublicKey(), testPolicy); err != nil {
		t.Fatalf("control: %v", err)
	}
}

func TestParseWebAuthnErrors(t *testing.T) {
	for _, tc := range []struct{ name, header, msg string }{
		{"empty", "", "empty"},
		{"not JSON", "{nope", "not a JSON object"},
		{"not base64 either", "%%%", "neither JSON"},
		{"missing signature", `{"authenticatorData":"AA","clientDataJson":"AA","credentialId":"AA"}`, "no signature"},
		{"bad base64", `{"authenticatorData":"A!","clientDataJson":"AA","credentialId":"AA","signature":"AA"}`, "authenticatorData is not valid base64url"},
	} {
		if _, err := ParseWebAuthn(tc.header); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
	// Padded fields and a base64url-wrapped header are tolerated.
	pad := base64.URLEncoding.EncodeToString
	h := `{"authenticatorData":"` + pad(
		[]byte{1},
	) + `","clientDataJson":"` + pad(
		[]byte("{}"),
	) + `","credentialId":"` + pad(
		[]byte{1, 2},
	) + `","signature":"` + pad(
		[]byte{3},
	) + `"}`
	for _, hv := range []string{h, base64.RawURLEncoding.EncodeToString([]byte(h))} {
		a, err := ParseWebAuthn(hv)
		if err != nil {
			t.Fatal(err)
		}
		if id, _ := a.CanonicalCredentialID(); id != "AQI" {
			t.Fatalf("canonical id %q", id)
		}
	}
}

// signedAssertion builds an assertion over body signed by sign.
func signedAssertion(body []byte, sign func(msg []byte) []byte) Assertion {
	ad := stamptest.AuthenticatorData(testRPID, stamptest.FlagUP, 42)
	cdj := stamptest.ClientDataJSON("webauthn.get", stamptest.BodyChallenge(body), testOrigin)
	return Assertion{
		CredentialID:      "AA",
		AuthenticatorData: ad,
		ClientDataJSON:    cdj,
		Signature:         sign(signedMessage(ad, cdj)),
	}
}

func TestWebAuthnEdDSAAndRS256(t *testing.T) {
	body := []byte(`{"a":1}`)
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	edCOSE := stamptest.EncodeCBOR(stamptest.Map{{K: 1, V: 1}, {K: 3, V: -8}, {K: -1, V: 6}, {K: -2, V: []byte(edPub)}})
	a := signedAssertion(body, func(m []byte) []byte { return ed25519.Sign(edPriv, m) })
	if n, err := a.Verify(body, edCOSE, testPolicy); err != nil || n != 42 {
		t.Fatalf("EdDSA: %d %v", n, err)
	}
	if _, err := a.Verify([]byte("{}"), edCOSE, testPolicy); err == nil {
		t.Fatal("EdDSA: other body verified")
	}

	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	e := binary.BigEndian.AppendUint32(nil, uint32(rk.E))[1:]
	rsaCOSE := stamptest.EncodeCBOR(
		stamptest.Map{{K: 1, V: 3}, {K: 3, V: -257}, {K: -1, V: rk.N.Bytes()}, {K: -2, V: e}},
	)
	a = signedAssertion(body, func(m []byte) []byte {
		h := sha256.Sum256(m)
		s, err := rsa.SignPKCS1v15(rand.Reader, rk, 5 /* crypto.SHA256 */, h[:])
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	if n, err := a.Verify(body, rsaCOSE, testPolicy); err != nil || n != 42 {
		t.Fatalf("RS256: %d %v", n, err)
	}
	a.Signature[10] ^= 1
	if _, err := a.Verify(body, rsaCOSE, testPolicy); !errors.Is(err, ErrUnverified) {
		t.Fatalf("RS256 tampered: %v", err)
	}
}

func TestCOSEKeyErrors(t *testing.T) {
	enc := stamptest.EncodeCBOR
	type M = stamptest.Map
	for _, tc := range []struct {
		name string
		key  []byte
		msg  string
	}{
		{"not a map", enc([]any{1}), "not a CBOR map"},
		{"no alg", enc(M{{K: 1, V: 2}}), "alg"},
		{"ES384", enc(M{{K: 1, V: 2}, {K: 3, V: -35}}), "not supported"},
		{"ES256 wrong kty", enc(M{{K: 1, V: 1}, {K: 3, V: -7}}), "kty EC2"},
		{"ES256 wrong curve", enc(M{{K: 1, V: 2}, {K: 3, V: -7}, {K: -1, V: 2}}), "crv"},
		{"ES256 short x", enc(M{{K: 1, V: 2}, {K: 3, V: -7}, {K: -1, V: 1}, {K: -2, V: []byte{1}}, {K: -3, V: make([]byte, 32)}}), "32-byte"},
		{"ES256 off curve", enc(M{{K: 1, V: 2}, {K: 3, V: -7}, {K: -1, V: 1}, {K: -2, V: make([]byte, 32)}, {K: -3, V: make([]byte, 32)}}), "not a point"},
		{"RSA small", enc(M{{K: 1, V: 3}, {K: 3, V: -257}, {K: -1, V: make([]byte, 64)}, {K: -2, V: []byte{1, 0, 1}}}), "outside"},
		{"trailing", append(enc(M{{K: 1, V: 2}}), 0), "trailing"},
	} {
		if _, err := parseCOSEKey(tc.key); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}
