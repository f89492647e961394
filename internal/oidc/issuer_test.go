package oidc

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// issuerServer starts an httptest server and returns it with a slot for the
// handler, because the issuer needs the server's URL first.
func issuerServer(t *testing.T) (*httptest.Server, *atomic.Pointer[Issuer]) {
	var h atomic.Pointer[Issuer]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Load().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &h
}

// rawSigner signs like a KMS that returns raw r‖s instead of DER.
type rawSigner struct{ k *ecdsa.PrivateKey }

func (s rawSigner) Public() crypto.PublicKey { return s.k.Public() }
func (s rawSigner) Sign(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
	der, err := s.k.Sign(r, d, o)
	if err != nil {
		return nil, err
	}
	return rawECDSA(der)
}

func TestIssuerRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signer func(*ecdsa.PrivateKey) crypto.Signer
	}{
		{"DER signer", func(k *ecdsa.PrivateKey) crypto.Signer { return k }},
		{"raw signer", func(k *ecdsa.PrivateKey) crypto.Signer { return rawSigner{k} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, slot := issuerServer(t)
			url := srv.URL + "/oidc"
			iss, err := NewIssuer(IssuerConfig{URL: url, Signer: tc.signer(newECKey(t))})
			if err != nil {
				t.Fatal(err)
			}
			slot.Store(iss)
			nonce := NonceFor(clientPub)
			tok, err := iss.Mint(MintClaims{Subject: "discord:1234", Audience: "latchkey-client", Email: "u@x.test",
				EmailVerified: true, Nonce: nonce, Extra: map[string]any{"provider": "discord", "iss": "ignored"}})
			if err != nil {
				t.Fatal(err)
			}
			v := NewVerifier(Config{TrustedIssuers: []string{url}, AllowLoopbackHTTP: true, NoDefaultIssuers: true})
			c, err := v.Verify(context.Background(), tok, Expect{Audiences: []string{"latchkey-client"}, Nonce: nonce})
			if err != nil {
				t.Fatal(err)
			}
			if c.Issuer != url || c.Subject != "discord:1234" || c.Email != "u@x.test" || !c.EmailVerified ||
				c.Raw["provider"] != "discord" || c.Expiry.Sub(c.IssuedAt) != 10*time.Minute {
				t.Fatalf("claims %+v", c)
			}
			var hdr map[string]string
			hb, _ := b64.DecodeString(strings.Split(tok, ".")[0])
			_ = json.Unmarshal(hb, &hdr)
			if hdr["alg"] != "ES256" || hdr["typ"] != "JWT" || hdr["kid"] != iss.KeyID() {
				t.Fatalf("header %v", hdr)
			}
		})
	}
}

func TestIssuerRotationPublishesPreviousKeys(t *testing.T) {
	srv, slot := issuerServer(t)
	oldKey, newKey := newECKey(t), newECKey(t)
	oldIss, err := NewIssuer(IssuerConfig{URL: srv.URL, Signer: oldKey})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := oldIss.Mint(MintClaims{Subject: "s", Audience: "a"})
	if err != nil {
		t.Fatal(err)
	}
	newIss, err := NewIssuer(
		IssuerConfig{URL: srv.URL, Signer: newKey, PreviousKeys: []*ecdsa.PublicKey{&oldKey.PublicKey}},
	)
	if err != nil {
		t.Fatal(err)
	}
	if newIss.KeyID() == oldIss.KeyID() {
		t.Fatal("same kid for two keys")
	}
	slot.Store(newIss)
	v := NewVerifier(Config{TrustedIssuers: []string{srv.URL}, AllowLoopbackHTTP: true})
	if _, err := v.Verify(context.Background(), tok, Expect{}); err != nil {
		t.Fatalf("token of the previous key: %v", err)
	}
	tok2, _ := newIss.Mint(MintClaims{Subject: "s", Audience: "a"})
	if _, err := v.Verify(context.Background(), tok2, Expect{}); err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
}

func TestIssuerHandler(t *testing.T) {
	iss, err := NewIssuer(IssuerConfig{URL: "https://auth.latchkey.test", Signer: newECKey(t)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path string
		status       int
		contains     string
	}{
		{"GET", DiscoveryPath, 200, `"jwks_uri":"https://auth.latchkey.test/.well-known/jwks.json"`},
		{"GET", JWKSPath, 200, `"kty":"EC"`},
		{"HEAD", JWKSPath, 200, ""},
		{"POST", JWKSPath, 405, ""},
		{"GET", "/other", 404, ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		iss.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
		if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.contains) {
			t.Errorf("%s %s: %d %s", tt.method, tt.path, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	iss.ServeHTTP(rec, httptest.NewRequest("GET", JWKSPath, nil))
	if strings.Contains(rec.Body.String(), `"d"`) {
		t.Fatal("JWKS publishes a private member")
	}
}

func TestNewIssuerRefuses(t *testing.T) {
	ec := newECKey(t)
	tests := []struct {
		name string
		cfg  IssuerConfig
	}{
		{"RSA signer", IssuerConfig{URL: "https://a.test", Signer: newRSAKey(t, 1)}},
		{"no signer", IssuerConfig{URL: "https://a.test"}},
		{"plain http, not loopback", IssuerConfig{URL: "http://a.test", Signer: ec}},
		{"trailing slash", IssuerConfig{URL: "https://a.test/", Signer: ec}},
		{"query", IssuerConfig{URL: "https://a.test/?x=1", Signer: ec}},
		{"relative", IssuerConfig{URL: "/oidc", Signer: ec}},
	}
	for _, tt := range tests {
		if _, err := NewIssuer(tt.cfg); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	iss, _ := NewIssuer(IssuerConfig{URL: "https://a.test", Signer: ec})
	if _, err := iss.Mint(MintClaims{Audience: "a"}); err == nil {
		t.Error("mint without subject accepted")
	}
}
