package oidc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/latchkey/latchkey/internal/costtest"
)

func str(in []byte) string { return unsafe.String(unsafe.SliceData(in), len(in)) }

// Hostile JSON values of about n bytes.
var hostileJSON = []struct {
	name string
	make func(n int) string
}{
	{"deep arrays", func(n int) string { return strings.Repeat("[", n/2) + strings.Repeat("]", n/2) }},
	{"deep objects", func(n int) string { return strings.Repeat(`{"a":`, n/5) + "0" + strings.Repeat("}", n/5) }},
	{"many members", func(n int) string { return "{" + strings.Repeat(`"a":0,`, n/6) + `"b":0}` }},
	{"many distinct members", func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; b.Len() < n; i++ {
			b.WriteString(`"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) +
				string(rune('a'+i/676%26)) + `":[0],`)
		}
		return b.String() + `"z":0}`
	}},
	{"many elements", func(n int) string { return "[" + strings.Repeat("0,", n/2) + "0]" }},
	{"escapes", func(n int) string { return `"` + strings.Repeat(`\u0041`, n/6) + `"` }},
}

// An id_token is parsed before its signature is checked: whatever JSON its header and payload
// hold, parsing costs no more than its length; one over MaxTokenBytes costs nothing
// proportional to it.
func TestParseJWSCost(t *testing.T) {
	run := func(in []byte) { _, _ = parseJWS(str(in)) }
	sig := "." + b64.EncodeToString(make([]byte, 64))
	var shapes []costtest.Shape
	for _, h := range hostileJSON {
		shapes = append(shapes,
			costtest.Shape{Name: "header " + h.name, Run: run, Make: func(n int) []byte {
				return []byte(b64.EncodeToString([]byte(`{"alg":"ES256","x":`+h.make(n)+`}`)) + ".e30" + sig)
			}},
			costtest.Shape{Name: "payload " + h.name, Run: run, Make: func(n int) []byte {
				return []byte("eyJhbGciOiJFUzI1NiJ9." + b64.EncodeToString([]byte(`{"iss":`+h.make(n)+`}`)) + sig)
			}},
		)
	}
	shapes = append(shapes, costtest.Shape{Name: "dots", Run: run, Make: func(n int) []byte {
		return []byte(strings.Repeat(".", n))
	}})
	costtest.Linear(t, 2<<10, shapes...)
	over := []costtest.Shape{
		{Name: "dots over the limit", Run: run, PerByte: 0.01,
			Make: func(n int) []byte { return []byte(strings.Repeat(".", MaxTokenBytes+n)) }},
		{Name: "payload over the limit", Run: run, PerByte: 0.01, Make: func(n int) []byte {
			return []byte("e30." + strings.Repeat("e", MaxTokenBytes+n) + sig)
		}},
	}
	costtest.Linear(t, MaxTokenBytes, over...)
}

// jwksOf is a JWKS of n copies of one P-256 key under distinct kids.
func jwksOf(t testing.TB, n int) []byte {
	k := testKey{kid: "k", alg: AlgES256, priv: newECKey(t)}
	j := k.jwk()
	set := JWKS{}
	for i := range n {
		j.Kid = "k" + strings.Repeat("x", i%3) + string(rune('a'+i%26))
		set.Keys = append(set.Keys, j)
	}
	b, _ := json.Marshal(set)
	return b
}

// A JWKS is the issuer's, but still bytes from the network: parsing costs no more than its size,
// and one with more than MaxJWKSKeys keys is refused before any key in it is parsed.
func TestParseJWKSCost(t *testing.T) {
	costtest.Linear(t, 4<<10, costtest.Shape{
		Name: "hostile JSON",
		Make: func(n int) []byte { return []byte(`{"keys":` + hostileJSON[0].make(n) + `}`) },
		Run:  func(in []byte) { _, _ = parseJWKS(in) },
	}, costtest.Shape{
		Name: "many keys",
		Make: func(n int) []byte { return jwksOf(t, n/150) },
		Run:  func(in []byte) { _, _ = parseJWKS(in) },
	})
}

// A token without a kid is tried against every key of its issuer that fits its alg. With a JWKS
// of 6,000 keys (the most a 1 MiB document holds) one such token cost 1.2 s of signature
// checks, every time; a JWKS over MaxJWKSKeys is now refused, and a token costs at most
// MaxJWKSKeys checks.
func TestJWKSKeysBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	verifier := func(jwks []byte) *Verifier {
		return NewVerifier(Config{
			TrustedIssuers: []string{fuzzIssuer}, NoDefaultIssuers: true,
			HTTPClient: &http.Client{Transport: stubTransport{jwks: jwks}},
			Now:        func() time.Time { return now },
		})
	}
	other := testKey{alg: AlgES256, priv: newECKey(t)}
	tok := sign(t, other, nil, map[string]any{"iss": fuzzIssuer, "sub": "s", "aud": "a",
		"iat": now.Unix(), "exp": now.Unix() + 60})

	big := jwksOf(t, 6000)
	_, err := verifier(big).Verify(context.Background(), tok, Expect{})
	if !errors.Is(err, ErrDiscovery) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d", MaxJWKSKeys)) {
		t.Fatalf("a JWKS of 6000 keys: %v", err)
	}
	if _, err := parseJWKS(jwksOf(t, MaxJWKSKeys+1)); err == nil {
		t.Fatalf("a JWKS of %d keys was accepted", MaxJWKSKeys+1)
	}
	keys, err := parseJWKS(jwksOf(t, MaxJWKSKeys))
	if err != nil || len(keys) != MaxJWKSKeys {
		t.Fatalf("a JWKS of %d keys: %d keys, %v", MaxJWKSKeys, len(keys), err)
	}
	// At the limit, a token with no kid and a key the issuer does not hold is checked against
	// each key once, and refused.
	if _, err := verifier(jwksOf(t, MaxJWKSKeys)).Verify(context.Background(), tok, Expect{}); !errors.Is(err,
		ErrBadSignature) {
		t.Fatalf("at the limit: %v", err)
	}
}

// The nesting of a token's header and claims is counted before they are decoded.
func TestJWSDepthBounded(t *testing.T) {
	sig := "." + b64.EncodeToString(make([]byte, 64))
	at := strings.Repeat("[", MaxJSONDepth-1) + strings.Repeat("]", MaxJSONDepth-1)
	over := "[" + at + "]"
	for _, tc := range []struct {
		name, header, payload string
		refused               bool
	}{
		{"header at the limit", `{"alg":"ES256","x":` + at + `}`, `{}`, false},
		{"header over the limit", `{"alg":"ES256","x":` + over + `}`, `{}`, true},
		{"payload at the limit", `{"alg":"ES256"}`, `{"x":` + at + `}`, false},
		{"payload over the limit", `{"alg":"ES256"}`, `{"x":` + over + `}`, true},
		{"brackets in strings do not count", `{"alg":"ES256"}`, `{"x":"` + strings.Repeat("[{", 100) + `"}`, false},
		{"escaped quotes do not end strings", `{"alg":"ES256"}`, `{"x":"\"` + strings.Repeat("[", 100) + `"}`, false},
	} {
		_, err := parseJWS(b64.EncodeToString([]byte(tc.header)) + "." + b64.EncodeToString([]byte(tc.payload)) + sig)
		refused := err != nil && strings.Contains(err.Error(), fmt.Sprintf("deeper than %d", MaxJSONDepth))
		if refused != tc.refused || (!tc.refused && err != nil) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// docTransport serves body as every document: discovery, JWKS, token and user-info answers.
type docTransport struct{ body []byte }

func (d docTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(d.body)), Request: r,
		Header: http.Header{}}, nil
}

// Discovery documents and OAuth 2.0 answers come from configured providers, but are still bytes
// from the network: whatever their shape, reading them costs no more than their size.
func TestProviderDocumentsCost(t *testing.T) {
	var shapes []costtest.Shape
	for _, h := range hostileJSON {
		doc := func(n int) []byte { return []byte(`{"issuer":"x","jwks_uri":` + h.make(n) + `}`) }
		shapes = append(shapes,
			costtest.Shape{Name: "discovery " + h.name, Make: doc, Run: func(in []byte) {
				v := NewVerifier(Config{TrustedIssuers: []string{fuzzIssuer}, NoDefaultIssuers: true,
					HTTPClient: &http.Client{Transport: docTransport{in}}})
				_, _ = v.fetch(context.Background(), fuzzIssuer)
			}},
			costtest.Shape{Name: "user info " + h.name, Make: func(n int) []byte {
				return []byte(`{"id":"1","data":` + h.make(n) + `}`)
			}, Run: func(in []byte) { _, _ = parseUserInfo("x", in) }},
		)
	}
	costtest.Linear(t, 16<<10, shapes...)

	// The user info's nesting is bounded as an id_token's claims are.
	at := strings.Repeat("[", MaxJSONDepth-1) + strings.Repeat("]", MaxJSONDepth-1)
	if u, err := parseUserInfo("x", []byte(`{"id":"1","x":`+at+`}`)); err != nil || u.ID != "1" {
		t.Fatalf("user info at the depth limit: %v", err)
	}
	_, err := parseUserInfo("x", []byte(`{"id":"1","x":[`+at+`]}`))
	if !errors.Is(err, ErrOAuth2) || !strings.Contains(err.Error(), fmt.Sprintf("deeper than %d", MaxJSONDepth)) {
		t.Fatalf("user info over the depth limit: %v", err)
	}
}
