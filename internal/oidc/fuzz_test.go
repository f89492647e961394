package oidc

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
)

// stubTransport answers discovery and JWKS for fuzzIssuer from memory, so
// the fuzzer never touches the network.
type stubTransport struct{ jwks []byte }

const fuzzIssuer = "https://issuer.fuzz.test"

func (s stubTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	switch r.URL.String() {
	case fuzzIssuer + "/.well-known/openid-configuration":
		body, _ = json.Marshal(map[string]string{"issuer": fuzzIssuer, "jwks_uri": fuzzIssuer + "/jwks"})
	case fuzzIssuer + "/jwks":
		body = s.jwks
	default:
		return &http.Response{StatusCode: 404, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	}
	return &http.Response{
		StatusCode: 200,
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    r,
		Header:     http.Header{},
	}, nil
}

func FuzzVerify(f *testing.F) {
	ec := testKey{kid: "ec1", alg: AlgES256, priv: newECKey(f)}
	rs := testKey{kid: "rsa1", alg: AlgRS256, priv: newRSAKey(f, 0)}
	_, edPriv, _ := ed25519.GenerateKey(bytes.NewReader(make([]byte, 64)))
	ed := testKey{kid: "ed1", alg: AlgEdDSA, priv: edPriv}
	jwks, _ := json.Marshal(JWKS{Keys: []JWK{ec.jwk(), rs.jwk(), ed.jwk()}})
	now := time.Unix(1_800_000_000, 0)
	claims := map[string]any{
		"iss":   fuzzIssuer,
		"sub":   "s",
		"aud":   []string{"a", "b"},
		"iat":   now.Unix(),
		"exp":   now.Unix() + 60,
		"nonce": "n",
	}
	for _, k := range []testKey{ec, rs, ed} {
		f.Add(sign(f, k, nil, claims))
	}
	f.Add(sign(f, ec, map[string]any{"kid": nil}, claims))
	f.Add(sign(f, ec, map[string]any{"crit": []string{"x"}}, claims))
	f.Add("e30.e30.e30")
	f.Add("..")
	f.Add("")
	v := NewVerifier(Config{
		TrustedIssuers: []string{fuzzIssuer}, NoDefaultIssuers: true,
		HTTPClient: &http.Client{Transport: stubTransport{jwks: jwks}},
		Now:        func() time.Time { return now },
	})
	// The first verification fetches the keys: not a cost of the token.
	_, _ = v.Verify(context.Background(), sign(f, ec, nil, claims), Expect{})
	f.Fuzz(func(t *testing.T, tok string) {
		var c *Claims
		var err error
		costtest.Budget(t, []byte(tok), 64, 64<<10, func() {
			c, err = v.Verify(context.Background(), tok, Expect{Audiences: []string{"a"}, Nonce: "n"})
		})
		if err != nil {
			if len(tok) >= 24 && strings.Contains(err.Error(), tok) {
				t.Fatalf("error contains the token: %v", err)
			}
			return
		}
		if c == nil || c.Issuer != fuzzIssuer || c.Subject == "" || c.Audience != "a" || c.Nonce != "n" {
			t.Fatalf("accepted with claims %+v", c)
		}
	})
}

// FuzzParseJWKS: a JWKS is untrusted bytes too.
func FuzzParseJWKS(f *testing.F) {
	ec := testKey{kid: "ec1", alg: AlgES256, priv: newECKey(f)}
	rs := testKey{kid: "rsa1", alg: AlgRS256, priv: newRSAKey(f, 0)}
	good, _ := json.Marshal(JWKS{Keys: []JWK{ec.jwk(), rs.jwk()}})
	f.Add(string(good))
	f.Add(`{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`)
	f.Add(`{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}`)
	f.Add(`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`)
	f.Add(`{"keys":[` + strings.Repeat(`{"kty":"x"},`, MaxJWKSKeys) + `{}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var keys []verificationKey
		var err error
		costtest.Budget(t, []byte(s), 64, 64<<10, func() { keys, err = parseJWKS([]byte(s)) })
		if err == nil && len(keys) == 0 {
			t.Fatal("no error and no keys")
		}
	})
}
