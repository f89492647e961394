package oidc

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

type fixture struct {
	ti          *testIssuer
	clk         *clock
	v           *Verifier
	rsa, ec, ed testKey
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	f := &fixture{
		clk: &clock{t: time.Unix(1_800_000_000, 0)},
		rsa: testKey{kid: "rsa1", alg: AlgRS256, priv: newRSAKey(t, 0)},
		ec:  testKey{kid: "ec1", alg: AlgES256, priv: newECKey(t)},
		ed:  testKey{kid: "ed1", alg: AlgEdDSA, priv: edPriv},
	}
	f.ti = newTestIssuer(t, f.rsa, f.ec, f.ed)
	f.v = NewVerifier(Config{TrustedIssuers: []string{f.ti.URL()}, AllowLoopbackHTTP: true, Now: f.clk.Now})
	return f
}

const clientPub = "02a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

func (f *fixture) claims() map[string]any {
	now := f.clk.Now().Unix()
	return map[string]any{
		"iss": f.ti.URL(), "sub": "user-1", "aud": "client-a",
		"iat": now, "exp": now + 600,
		"nonce": NonceFor(clientPub), "email": "a@b.test", "email_verified": true,
	}
}

func TestNonceFor(t *testing.T) {
	// sha256("abc")
	if got := NonceFor("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatal(got)
	}
}

func TestVerifyAccepts(t *testing.T) {
	f := newFixture(t)
	expect := Expect{Audiences: []string{"client-b", "client-a"}, Nonce: NonceFor(clientPub)}
	tests := []struct {
		name   string
		key    testKey
		hdr    map[string]any
		edit   func(map[string]any)
		expect *Expect
		check  func(*testing.T, *Claims)
	}{
		{name: "RS256", key: f.rsa},
		{name: "ES256", key: f.ec},
		{name: "EdDSA", key: f.ed},
		{name: "no kid: the key that fits the algorithm", key: f.ec, hdr: map[string]any{"kid": nil}},
		{name: "aud as an array", key: f.ec, edit: func(c map[string]any) { c["aud"] = []string{"other", "client-a"} },
			check: func(t *testing.T, c *Claims) {
				if c.Audience != "client-a" {
					t.Errorf("Audience = %q", c.Audience)
				}
			}},
		{
			name:   "any audience when none expected",
			key:    f.ec,
			edit:   func(c map[string]any) { c["aud"] = "someone" },
			expect: &Expect{},
		},
		{
			name:   "no nonce when none expected",
			key:    f.ec,
			edit:   func(c map[string]any) { delete(c, "nonce") },
			expect: &Expect{Audiences: []string{"client-a"}},
		},
		{
			name: "expired within the leeway",
			key:  f.ec,
			edit: func(c map[string]any) { c["iat"] = f.clk.Now().Unix() - 600; c["exp"] = f.clk.Now().Unix() - 30 },
		},
		{
			name: "Apple's string email_verified",
			key:  f.ec,
			edit: func(c map[string]any) { c["email_verified"] = "true" },
		},
		{
			name: "fractional dates",
			key:  f.ec,
			edit: func(c map[string]any) { c["iat"] = float64(f.clk.Now().Unix()) + 0.5 },
		},
		{name: "nbf in the past", key: f.rsa, edit: func(c map[string]any) { c["nbf"] = f.clk.Now().Unix() - 10 }},
		{name: "email unverified", key: f.ec, edit: func(c map[string]any) { c["email_verified"] = false },
			check: func(t *testing.T, c *Claims) {
				if c.EmailVerified {
					t.Error("EmailVerified")
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := f.claims()
			if tt.edit != nil {
				tt.edit(claims)
			}
			e := expect
			if tt.expect != nil {
				e = *tt.expect
			}
			c, err := f.v.Verify(context.Background(), sign(t, tt.key, tt.hdr, claims), e)
			if err != nil {
				t.Fatal(err)
			}
			if c.Issuer != f.ti.URL() || c.Subject != "user-1" || c.Email != "a@b.test" {
				t.Errorf("claims %+v", c)
			}
			if tt.check != nil {
				tt.check(t, c)
			} else if tt.edit == nil && (!c.EmailVerified || c.Nonce != NonceFor(clientPub) || c.Audience != "client-a" ||
				!c.Expiry.Equal(f.clk.Now().Add(600*time.Second)) || !c.IssuedAt.Equal(f.clk.Now())) {
				t.Errorf("claims %+v", c)
			}
		})
	}
	if n := f.ti.discHits.Load(); n != 1 {
		t.Errorf("%d discovery fetches, want 1 (cached)", n)
	}
}

func TestVerifyRefuses(t *testing.T) {
	f := newFixture(t)
	expect := Expect{Audiences: []string{"client-a"}, Nonce: NonceFor(clientPub)}
	other := testKey{kid: "ec1", alg: AlgES256, priv: newECKey(t)}
	now := f.clk.Now().Unix()
	b := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name  string
		token func() string
		want  error
	}{
		{"unknown issuer", func() string {
			c := f.claims()
			c["iss"] = "https://evil.test"
			return sign(t, f.ec, nil, c)
		}, ErrUnknownIssuer},
		{"issuer differing by a trailing slash", func() string {
			c := f.claims()
			c["iss"] = f.ti.URL() + "/"
			return sign(t, f.ec, nil, c)
		}, ErrUnknownIssuer},
		{"payload tampered", func() string {
			tok := sign(t, f.ec, nil, f.claims())
			parts := strings.Split(tok, ".")
			c := f.claims()
			c["sub"] = "admin"
			parts[1] = b(mustJSON(c))
			return strings.Join(parts, ".")
		}, ErrBadSignature},
		{
			"signed by another key under a known kid",
			func() string { return sign(t, other, nil, f.claims()) },
			ErrBadSignature,
		},
		{"RS256 signature bytes under ES256", func() string {
			tok := sign(t, f.rsa, map[string]any{"alg": AlgES256, "kid": "ec1"}, f.claims())
			return tok
		}, ErrBadSignature},
		{"alg none", func() string {
			return b(`{"alg":"none"}`) + "." + b(mustJSON(f.claims())) + ".c2ln"
		}, ErrUnsupportedAlg},
		{
			"HS256",
			func() string { return sign(t, f.ec, map[string]any{"alg": "HS256"}, f.claims()) },
			ErrUnsupportedAlg,
		},
		{"ES256 header with an RSA key's kid", func() string {
			return sign(t, f.ec, map[string]any{"kid": "rsa1"}, f.claims())
		}, ErrUnknownKey},
		{
			"unknown kid",
			func() string { return sign(t, f.ec, map[string]any{"kid": "nope"}, f.claims()) },
			ErrUnknownKey,
		},
		{"expired", func() string {
			c := f.claims()
			c["iat"] = now - 900
			c["exp"] = now - 120
			return sign(t, f.ec, nil, c)
		}, ErrExpired},
		{"issued in the future", func() string {
			c := f.claims()
			c["iat"] = now + 300
			c["exp"] = now + 900
			return sign(t, f.ec, nil, c)
		}, ErrNotYetValid},
		{"not yet valid", func() string {
			c := f.claims()
			c["nbf"] = now + 300
			return sign(t, f.ec, nil, c)
		}, ErrNotYetValid},
		{"wrong audience", func() string {
			c := f.claims()
			c["aud"] = []string{"client-b", "client-c"}
			return sign(t, f.ec, nil, c)
		}, ErrAudience},
		{"empty aud", func() string {
			c := f.claims()
			c["aud"] = []string{}
			return sign(t, f.ec, nil, c)
		}, ErrClaims},
		{"wrong nonce", func() string {
			c := f.claims()
			c["nonce"] = NonceFor("03" + clientPub[2:])
			return sign(t, f.ec, nil, c)
		}, ErrNonce},
		{"missing nonce", func() string {
			c := f.claims()
			delete(c, "nonce")
			return sign(t, f.ec, nil, c)
		}, ErrNonce},
		{"missing sub", func() string {
			c := f.claims()
			delete(c, "sub")
			return sign(t, f.ec, nil, c)
		}, ErrClaims},
		{"missing exp", func() string {
			c := f.claims()
			delete(c, "exp")
			return sign(t, f.ec, nil, c)
		}, ErrClaims},
		{"exp as a string", func() string {
			c := f.claims()
			c["exp"] = fmt.Sprint(now + 600)
			return sign(t, f.ec, nil, c)
		}, ErrClaims},
		{"missing iat", func() string {
			c := f.claims()
			delete(c, "iat")
			return sign(t, f.ec, nil, c)
		}, ErrClaims},
		{
			"critical header",
			func() string { return sign(t, f.ec, map[string]any{"crit": []string{"exp"}}, f.claims()) },
			ErrMalformed,
		},
		{"padded base64", func() string {
			tok := sign(t, f.ec, nil, f.claims())
			parts := strings.Split(tok, ".")
			parts[2] += "=="
			return strings.Join(parts, ".")
		}, ErrMalformed},
		{"two segments", func() string { return b(`{"alg":"ES256"}`) + "." + b(mustJSON(f.claims())) }, ErrMalformed},
		{
			"payload not an object",
			func() string { return b(`{"alg":"ES256"}`) + "." + b(`[1]`) + ".c2ln" },
			ErrMalformed,
		},
		{
			"trailing data after the payload",
			func() string { return b(`{"alg":"ES256"}`) + "." + b(`{"iss":"x"} {}`) + ".c2ln" },
			ErrMalformed,
		},
		{"empty", func() string { return "" }, ErrMalformed},
		{"huge", func() string { return strings.Repeat("a", MaxTokenBytes+1) }, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.token()
			_, err := f.v.Verify(context.Background(), tok, expect)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			assertNoTokenInError(t, err, tok)
		})
	}
}

func assertNoTokenInError(t *testing.T, err error, tok string) {
	t.Helper()
	for _, part := range strings.Split(tok, ".") {
		if len(part) >= 16 && strings.Contains(err.Error(), part) {
			t.Fatalf("error contains part of the token: %v", err)
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestVerifyIssuerURLRules(t *testing.T) {
	ti := newTestIssuer(t, testKey{kid: "ec1", alg: AlgES256, priv: newECKey(t)})
	key := ti.keys[0]
	tok := func(iss string) string {
		now := time.Now().Unix()
		return sign(t, key, nil, map[string]any{"iss": iss, "sub": "s", "aud": "a", "iat": now, "exp": now + 60})
	}
	tests := []struct {
		name string
		cfg  Config
		iss  string
		want error
	}{
		{
			"loopback http without AllowLoopbackHTTP",
			Config{TrustedIssuers: []string{ti.URL()}},
			ti.URL(),
			ErrUnknownIssuer,
		},
		{
			"trusted http issuer that is not loopback",
			Config{TrustedIssuers: []string{"http://example.com"}, AllowLoopbackHTTP: true},
			"http://example.com",
			ErrUnknownIssuer,
		},
		{"defaults dropped", Config{NoDefaultIssuers: true}, IssuerGoogle, ErrUnknownIssuer},
		{"loopback http allowed", Config{TrustedIssuers: []string{ti.URL()}, AllowLoopbackHTTP: true}, ti.URL(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewVerifier(tt.cfg).Verify(context.Background(), tok(tt.iss), Expect{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	v := NewVerifier(Config{})
	for _, iss := range DefaultTrustedIssuers {
		if !v.Trusts(iss) {
			t.Errorf("%s not trusted by default", iss)
		}
	}
}

func TestVerifyDiscoveryMustNameTheIssuer(t *testing.T) {
	f := newFixture(t)
	f.ti.discIss = "https://accounts.google.com"
	_, err := f.v.Verify(context.Background(), sign(t, f.ec, nil, f.claims()), Expect{})
	if !errors.Is(err, ErrDiscovery) {
		t.Fatalf("err = %v", err)
	}
}

func TestVerifyKeyRotation(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ec2 := testKey{kid: "ec2", alg: AlgES256, priv: newECKey(t)}
	if _, err := f.v.Verify(ctx, sign(t, f.ec, nil, f.claims()), Expect{}); err != nil {
		t.Fatal(err)
	}
	if f.ti.jwksHits.Load() != 1 {
		t.Fatalf("jwks hits %d", f.ti.jwksHits.Load())
	}
	f.ti.setKeys(ec2)
	// Keys were fetched a moment ago: an unknown kid does not refetch yet.
	if _, err := f.v.Verify(ctx, sign(t, ec2, nil, f.claims()), Expect{}); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("err = %v, want ErrUnknownKey", err)
	}
	if f.ti.jwksHits.Load() != 1 {
		t.Fatalf("refetched within the interval: %d", f.ti.jwksHits.Load())
	}
	f.clk.Advance(61 * time.Second)
	if _, err := f.v.Verify(ctx, sign(t, ec2, nil, f.claims()), Expect{}); err != nil {
		t.Fatalf("after rotation: %v", err)
	}
	if f.ti.jwksHits.Load() != 2 {
		t.Fatalf("jwks hits %d, want 2", f.ti.jwksHits.Load())
	}
	// A flood of made-up kids costs one fetch a minute at most.
	f.clk.Advance(61 * time.Second)
	for i := range 50 {
		_, err := f.v.Verify(ctx, sign(t, ec2, map[string]any{"kid": fmt.Sprint("bogus", i)}, f.claims()), Expect{})
		if !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("err = %v", err)
		}
	}
	if n := f.ti.jwksHits.Load(); n != 3 {
		t.Fatalf("jwks hits %d after the flood, want 3", n)
	}
	// The retired key no longer verifies.
	if _, err := f.v.Verify(ctx, sign(t, f.ec, nil, f.claims()), Expect{}); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("retired key: err = %v", err)
	}
}

func TestVerifyCacheTTLAndOutage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.v.Verify(ctx, sign(t, f.ec, nil, f.claims()), Expect{}); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(2 * time.Hour)
	f.ti.jwksFails.Store(true)
	// The issuer is down when the cache expires: the keys we have still work.
	if _, err := f.v.Verify(ctx, sign(t, f.ec, nil, f.claims()), Expect{}); err != nil {
		t.Fatalf("during an outage: %v", err)
	}
	if f.ti.discHits.Load() != 2 {
		t.Fatalf("discovery hits %d, want 2", f.ti.discHits.Load())
	}
	f.ti.jwksFails.Store(false)
	f.clk.Advance(10 * time.Second)
	if _, err := f.v.Verify(ctx, sign(t, f.ec, nil, f.claims()), Expect{}); err != nil {
		t.Fatal(err)
	}
	if f.ti.discHits.Load() != 3 {
		t.Fatalf("discovery hits %d, want 3 (refreshed after the outage)", f.ti.discHits.Load())
	}

	// A fresh verifier with the issuer down fails clearly and backs off.
	f.ti.jwksFails.Store(true)
	v := NewVerifier(Config{TrustedIssuers: []string{f.ti.URL()}, AllowLoopbackHTTP: true, Now: f.clk.Now})
	before := f.ti.jwksHits.Load()
	for range 5 {
		if _, err := v.Verify(ctx, sign(t, f.ec, nil, f.claims()), Expect{}); !errors.Is(err, ErrDiscovery) {
			t.Fatalf("err = %v, want ErrDiscovery", err)
		}
	}
	if n := f.ti.jwksHits.Load() - before; n != 1 {
		t.Fatalf("%d fetches while failing, want 1", n)
	}
}

func TestVerifyConcurrentFirstUse(t *testing.T) {
	f := newFixture(t)
	tok := sign(t, f.ec, nil, f.claims())
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.v.Verify(context.Background(), tok, Expect{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := f.ti.discHits.Load(); n != 1 {
		t.Fatalf("%d discovery fetches, want 1", n)
	}
}

func TestVerifyCancelledFetchDoesNotPoisonTheCache(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tok := sign(t, f.ec, nil, f.claims())
	if _, err := f.v.Verify(ctx, tok, Expect{}); !errors.Is(err, ErrDiscovery) {
		t.Fatalf("cancelled: err = %v", err)
	}
	if _, err := f.v.Verify(context.Background(), tok, Expect{}); err != nil {
		t.Fatalf("after a cancelled fetch: %v", err)
	}
}
