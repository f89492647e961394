package stamp

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

// The allocation bound every fuzz target holds each parser to (costtest.Budget): a few dozen
// bytes per input byte, beside the fixed cost of a key and a signature check.
const (
	fuzzPerByte = 64
	fuzzFixed   = 64 << 10
)

// checkErr fails unless err is nil or one of the package's two kinds.
func checkErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnverified) {
		t.Fatalf("error of unknown kind: %v", err)
	}
}

func FuzzVerifyAPIKey(f *testing.F) {
	v := loadVectors(f)
	f.Add(v.P256.Header, []byte(v.P256.Body))
	f.Add(stampHeader(v.Ed25519.PublicKey, SchemeEd25519, v.Ed25519.Signature), []byte(v.Ed25519.Body))
	for _, mk := range []func(string) (Stamper, error){NewSecp256k1Stamper, NewEIP191Stamper} {
		st, _ := mk("4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318")
		_, h, _ := st.Stamp([]byte("{}"))
		f.Add(h, []byte("{}"))
	}
	f.Add("", []byte(nil))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		var p APIKeyProof
		var err error
		costtest.Budget(t, []byte(header), fuzzPerByte, fuzzFixed, func() { p, err = VerifyAPIKey(header, body) })
		checkErr(t, err)
		if err == nil {
			k, herr := hex.DecodeString(p.PublicKey)
			if herr != nil || (len(k) != 33 && len(k) != 32) || hex.EncodeToString(k) != p.PublicKey {
				t.Fatalf("verified with a non-canonical public key %q", p.PublicKey)
			}
		}
	})
}

func FuzzParseWebAuthn(f *testing.F) {
	auth, _ := stamptest.New(testRPID, testOrigin)
	body := []byte(`{"organizationId":"o"}`)
	_, h, _ := auth.Stamp(body)
	f.Add(h, body, []byte(nil))
	f.Add(h, body, auth.COSEPublicKey())
	f.Add(
		`{"authenticatorData":"","clientDataJson":"e30","credentialId":"AA","signature":"AA"}`,
		[]byte("{}"),
		[]byte{0xa0},
	)
	f.Fuzz(func(t *testing.T, header string, body, cose []byte) {
		var a Assertion
		var err error
		costtest.Budget(t, []byte(header), fuzzPerByte, fuzzFixed, func() { a, err = ParseWebAuthn(header) })
		checkErr(t, err)
		if err != nil {
			return
		}
		if len(cose) == 0 {
			cose = auth.COSEPublicKey()
		}
		in := append([]byte(header), cose...)
		costtest.Budget(t, in, fuzzPerByte, fuzzFixed, func() { _, err = a.Verify(body, cose, testPolicy) })
		checkErr(t, err)
	})
}

func FuzzParseAttestation(f *testing.F) {
	auth, _ := stamptest.New(testRPID, testOrigin)
	challenge := []byte("fuzz-challenge")
	for _, format := range []string{"none", "packed"} {
		reg, _ := auth.Attest(challenge, format)
		cdj, _ := base64.RawURLEncoding.DecodeString(reg.ClientDataJSON)
		obj, _ := base64.RawURLEncoding.DecodeString(reg.AttestationObject)
		f.Add(reg.CredentialID, cdj, obj, base64.RawURLEncoding.EncodeToString(challenge))
	}
	f.Fuzz(func(t *testing.T, credID string, cdj, obj []byte, challenge string) {
		att := Attestation{
			CredentialID:      credID,
			ClientDataJSON:    base64.RawURLEncoding.EncodeToString(cdj),
			AttestationObject: base64.RawURLEncoding.EncodeToString(obj),
		}
		in := []byte(credID + att.ClientDataJSON + att.AttestationObject + challenge)
		for _, pol := range []WebAuthnPolicy{testPolicy, {}} {
			var r Registered
			var err error
			costtest.Budget(t, in, fuzzPerByte, fuzzFixed, func() { r, err = ParseAttestation(att, challenge, pol) })
			checkErr(t, err)
			if err == nil {
				// What registration stores must be usable for verification.
				if _, err := parseCOSEKey(r.COSEPublicKey); err != nil {
					t.Fatalf("registered key does not parse: %v", err)
				}
			}
		}
	})
}

func FuzzCBOR(f *testing.F) {
	for _, s := range []string{"00", "a26161016162820203", "bf61610161629f0203ffff", "5f42010243030405ff", "fb3ff199999999999a", "9f018202039f0405ffff"} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	auth, _ := stamptest.New(testRPID, testOrigin)
	f.Add(auth.COSEPublicKey())
	reg, _ := auth.Attest([]byte("c"), "packed")
	obj, _ := base64.RawURLEncoding.DecodeString(reg.AttestationObject)
	f.Add(obj)
	f.Fuzz(func(t *testing.T, b []byte) {
		var n int
		var err error
		costtest.Budget(t, b, fuzzPerByte, fuzzFixed, func() { _, n, err = cborDecodeFirst(b) })
		checkErr(t, err)
		if err == nil && (n <= 0 || n > len(b)) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		_, err = cborDecode(b)
		checkErr(t, err)
		_, err = parseCOSEKey(b)
		checkErr(t, err)
	})
}

func FuzzVerifyAttested(f *testing.F) {
	body := []byte(`{"type":"ACTIVITY_TYPE_STAMP_LOGIN"}`)
	priv := "487f361ddfd73440e707f4daa6775b376859e8a3c9f29b3bb694a12927c0213c"
	h, _ := attestedHeader(f, priv, SchemeAttestedOIDC, "a.b.c", body, false)
	f.Add(h, body)
	h, _ = attestedHeader(f, priv, SchemeAttestedVerificationToken, "a.b.c", body, true)
	f.Add(h, body)
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		var err error
		costtest.Budget(t, []byte(header), fuzzPerByte, fuzzFixed, func() { _, err = VerifyAttested(header, body) })
		checkErr(t, err)
	})
}

// FuzzParseAPIKeyStamp holds the direct reading of a stamp's JSON to json.Unmarshal's.
func FuzzParseAPIKeyStamp(f *testing.F) {
	for _, s := range []string{
		`{"publicKey":"02ab","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"3044"}`,
		` { "signature" : "3044" ,	"scheme":"s","publicKey":""}` + "\n",
		`{"publicKey":"a","scheme":"b","signature":"c","publicKey":"d"}`,
		`{"publicKey":"a","scheme":"b","signature":"c"}x`,
		`{"publicKey":"a","scheme":"b"}`,
		`{"PublicKey":"a","scheme":"b","signature":"c"}`,
		`{"publicKey":"a\u0041","scheme":"b","signature":"c"}`,
		`{"publicKey":null,"scheme":"b","signature":"c"}`,
		`{"publicKey":"a","scheme":"b","signature":"c",}`,
		`{"publicKey":"é","scheme":"b","signature":"c"}`,
		``, `{`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got apiKeyStampJSON
		var ok bool
		costtest.Budget(t, raw, fuzzPerByte, fuzzFixed, func() { got, ok = parsePlainStamp(raw) })
		if !ok {
			return
		}
		var want apiKeyStampJSON
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("read %q, which json.Unmarshal refuses: %v", raw, err)
		}
		str := func(p *string) string {
			if p == nil {
				return "<nil>"
			}
			return *p
		}
		for _, pair := range [][2]*string{{got.PublicKey, want.PublicKey}, {got.Scheme, want.Scheme},
			{got.Signature, want.Signature}} {
			if str(pair[0]) != str(pair[1]) {
				t.Fatalf("read %q as %q, json.Unmarshal as %q", raw, str(pair[0]), str(pair[1]))
			}
		}
	})
}
