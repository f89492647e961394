package oidc

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testKey is a signing key with its kid.
type testKey struct {
	kid  string
	alg  string
	priv crypto.Signer
}

func (k testKey) jwk() JWK {
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		return JWK{Kty: "RSA", Kid: k.kid, Use: "sig", Alg: AlgRS256,
			N: b64.EncodeToString(pub.N.Bytes()), E: b64.EncodeToString(big.NewInt(int64(pub.E)).Bytes())}
	case *ecdsa.PublicKey:
		j, _ := ECJWK(pub, k.kid)
		return j
	case ed25519.PublicKey:
		return JWK{Kty: "OKP", Crv: "Ed25519", Kid: k.kid, X: b64.EncodeToString(pub)}
	}
	panic("key type")
}

var (
	rsaOnce sync.Once
	rsaKeys [2]*rsa.PrivateKey
)

func newRSAKey(t testing.TB, i int) *rsa.PrivateKey {
	rsaOnce.Do(func() {
		for j := range rsaKeys {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			rsaKeys[j] = k
		}
	})
	return rsaKeys[i]
}

func newECKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// sign makes a compact JWS with header fields hdr over claims.
func sign(t testing.TB, k testKey, hdr map[string]any, claims map[string]any) string {
	t.Helper()
	h := map[string]any{"alg": k.alg, "typ": "JWT"}
	if k.kid != "" {
		h["kid"] = k.kid
	}
	for key, v := range hdr {
		if v == nil {
			delete(h, key)
		} else {
			h[key] = v
		}
	}
	hb, _ := json.Marshal(h)
	pb, _ := json.Marshal(claims)
	input := b64.EncodeToString(hb) + "." + b64.EncodeToString(pb)
	var sig []byte
	var err error
	switch k.alg {
	case AlgRS256:
		d := sha256.Sum256([]byte(input))
		sig, err = k.priv.Sign(rand.Reader, d[:], crypto.SHA256)
	case AlgES256:
		d := sha256.Sum256([]byte(input))
		var der []byte
		der, err = k.priv.Sign(rand.Reader, d[:], crypto.SHA256)
		if err == nil {
			sig, err = rawECDSA(der)
		}
	case AlgEdDSA:
		sig, err = k.priv.Sign(rand.Reader, []byte(input), crypto.Hash(0))
	}
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64.EncodeToString(sig)
}

// testIssuer is a local OIDC issuer: discovery and JWKS over httptest.
type testIssuer struct {
	srv       *httptest.Server
	mu        sync.Mutex
	keys      []testKey
	discIss   string // issuer named in discovery; default the server URL
	discHits  atomic.Int32
	jwksHits  atomic.Int32
	jwksFails atomic.Bool
}

func newTestIssuer(t testing.TB, keys ...testKey) *testIssuer {
	ti := &testIssuer{keys: keys}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		ti.discHits.Add(1)
		ti.mu.Lock()
		iss := ti.discIss
		ti.mu.Unlock()
		if iss == "" {
			iss = ti.srv.URL
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": iss, "jwks_uri": ti.srv.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		ti.jwksHits.Add(1)
		if ti.jwksFails.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		ti.mu.Lock()
		set := JWKS{}
		for _, k := range ti.keys {
			set.Keys = append(set.Keys, k.jwk())
		}
		ti.mu.Unlock()
		// An encryption key and an unknown type are skipped, not fatal.
		set.Keys = append(
			set.Keys,
			JWK{Kty: "RSA", Use: "enc", Kid: "enc", N: "AQAB", E: "AQAB"},
			JWK{Kty: "oct", Kid: "sym"},
		)
		_ = json.NewEncoder(w).Encode(set)
	})
	ti.srv = httptest.NewServer(mux)
	t.Cleanup(ti.srv.Close)
	return ti
}

func (ti *testIssuer) URL() string { return ti.srv.URL }

func (ti *testIssuer) setKeys(keys ...testKey) {
	ti.mu.Lock()
	ti.keys = keys
	ti.mu.Unlock()
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
