package stamp

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// attestedHeader signs body with a P-256 stamper and re-wraps the signature
// as an X-Stamp-Attested value.
func attestedHeader(t testing.TB, priv, scheme, token string, body []byte, rawJSON bool) (string, string) {
	st, err := NewP256Stamper(priv)
	if err != nil {
		t.Fatal(err)
	}
	_, h, _ := st.Stamp(body)
	raw, _ := base64.RawURLEncoding.DecodeString(h)
	var f map[string]string
	_ = json.Unmarshal(raw, &f)
	b, _ := json.Marshal(
		map[string]string{
			"publicKeyAttestation": token,
			"scheme":               scheme,
			"publicKey":            f["publicKey"],
			"signature":            f["signature"],
		},
	)
	if rawJSON {
		return string(b), f["publicKey"]
	}
	return base64.RawURLEncoding.EncodeToString(b), f["publicKey"]
}

func TestVerifyAttested(t *testing.T) {
	priv, _, _ := GenerateKey(CurveP256)
	body := []byte(`{"type":"ACTIVITY_TYPE_STAMP_LOGIN"}`)
	for _, scheme := range []string{SchemeAttestedVerificationToken, SchemeAttestedOIDC} {
		for _, rawJSON := range []bool{false, true} {
			h, pub := attestedHeader(t, priv, scheme, "tok.en.sig", body, rawJSON)
			p, err := VerifyAttested(h, body)
			if err != nil {
				t.Fatal(err)
			}
			if p.PublicKey != pub || p.Scheme != scheme || p.Attestation != "tok.en.sig" {
				t.Fatalf("proof = %+v", p)
			}
			if _, err := VerifyAttested(h, append(body, ' ')); !errors.Is(err, ErrUnverified) {
				t.Fatalf("other body: %v", err)
			}
		}
	}
	good, pub := attestedHeader(t, priv, SchemeAttestedOIDC, "t", body, true)
	for _, tc := range []struct {
		name, header string
		kind         error
		msg          string
	}{
		{"empty", "", ErrMalformed, "empty"},
		{"bad base64", "e!", ErrMalformed, "base64url"},
		{"bad JSON", "{", ErrMalformed, "JSON"},
		{"unknown scheme", strings.Replace(good, SchemeAttestedOIDC, SchemeP256, 1), ErrMalformed, "scheme"},
		{"no token", strings.Replace(good, `"publicKeyAttestation":"t"`, `"publicKeyAttestation":""`, 1), ErrMalformed, "publicKeyAttestation"},
		{"bad key hex", strings.Replace(good, pub, "zz", 1), ErrMalformed, "publicKey is not hex"},
		{"secp256k1 key", strings.Replace(good, pub, hex.EncodeToString(make([]byte, 20)), 1), ErrMalformed, "33 bytes"},
	} {
		if _, err := VerifyAttested(tc.header, body); !errors.Is(err, tc.kind) ||
			!strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}
