package oidc

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Issuer mints Latchkey's own OIDC id_tokens (ES256) and serves the discovery
// document and JWKS that verify them. The private key stays behind the
// crypto.Signer.
type Issuer struct {
	url    string
	signer crypto.Signer
	kid    string
	jwks   []byte
	disc   []byte
	now    func() time.Time
}

// IssuerConfig configures an Issuer.
type IssuerConfig struct {
	// URL is the issuer identifier, an absolute https (or loopback http) URL
	// without a trailing slash; the discovery document lives under it.
	URL string
	// Signer holds the P-256 signing key.
	Signer crypto.Signer
	// PreviousKeys are still published, so tokens minted before a key
	// rotation verify until they expire.
	PreviousKeys []*ecdsa.PublicKey
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// MintClaims are the claims of a minted token.
type MintClaims struct {
	Subject       string
	Audience      string
	Email         string
	EmailVerified bool
	Nonce         string
	// Lifetime defaults to 10 minutes.
	Lifetime time.Duration
	// Extra claims; they may not override the registered ones above.
	Extra map[string]any
}

// Paths, relative to the issuer URL, that the handler serves.
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/.well-known/jwks.json"
)

// NewIssuer checks the configuration and precomputes the documents.
func NewIssuer(cfg IssuerConfig) (*Issuer, error) {
	if err := CheckIssuerURL(cfg.URL); err != nil {
		return nil, err
	}
	if cfg.Signer == nil {
		return nil, errors.New("oidc: issuer needs a signer")
	}
	pub, ok := cfg.Signer.Public().(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, errors.New("oidc: issuer signer must hold a P-256 ECDSA key")
	}
	current, err := ECJWK(pub, "")
	if err != nil {
		return nil, err
	}
	set := JWKS{Keys: []JWK{current}}
	for _, p := range cfg.PreviousKeys {
		j, err := ECJWK(p, "")
		if err != nil {
			return nil, err
		}
		if j.Kid != current.Kid {
			set.Keys = append(set.Keys, j)
		}
	}
	jwks, _ := json.Marshal(set)
	disc, _ := json.Marshal(map[string]any{
		"issuer":                                cfg.URL,
		"jwks_uri":                              cfg.URL + JWKSPath,
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{AlgES256},
		"claims_supported": []string{
			"iss",
			"sub",
			"aud",
			"exp",
			"iat",
			"nonce",
			"email",
			"email_verified",
		},
	})
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Issuer{url: cfg.URL, signer: cfg.Signer, kid: current.Kid, jwks: jwks, disc: disc, now: now}, nil
}

// URL is the issuer identifier.
func (i *Issuer) URL() string { return i.url }

// KeyID is the kid of the current signing key.
func (i *Issuer) KeyID() string { return i.kid }

// Mint signs an id_token.
func (i *Issuer) Mint(c MintClaims) (string, error) {
	if c.Subject == "" || c.Audience == "" {
		return "", errors.New("oidc: a minted token needs a subject and an audience")
	}
	life := c.Lifetime
	if life <= 0 {
		life = 10 * time.Minute
	}
	now := i.now()
	claims := map[string]any{}
	for k, v := range c.Extra {
		claims[k] = v
	}
	claims["iss"] = i.url
	claims["sub"] = c.Subject
	claims["aud"] = c.Audience
	claims["iat"] = now.Unix()
	claims["exp"] = now.Add(life).Unix()
	if c.Nonce != "" {
		claims["nonce"] = c.Nonce
	}
	if c.Email != "" {
		claims["email"] = c.Email
		claims["email_verified"] = c.EmailVerified
	}
	header, _ := json.Marshal(map[string]string{"alg": AlgES256, "typ": "JWT", "kid": i.kid})
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("oidc: extra claims: %w", err)
	}
	input := b64.EncodeToString(header) + "." + b64.EncodeToString(payload)
	digest := sha256.Sum256([]byte(input))
	sig, err := i.signer.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("oidc: signing: %w", err)
	}
	raw, err := rawECDSA(sig)
	if err != nil {
		return "", err
	}
	return input + "." + b64.EncodeToString(raw), nil
}

// rawECDSA accepts a signer's ASN.1 DER or raw r‖s and returns r‖s.
func rawECDSA(sig []byte) ([]byte, error) {
	if len(sig) == 64 {
		return sig, nil
	}
	var rs struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(sig, &rs)
	if err != nil || len(rest) != 0 || rs.R == nil || rs.S == nil || rs.R.Sign() <= 0 || rs.S.Sign() <= 0 ||
		rs.R.BitLen() > 256 || rs.S.BitLen() > 256 {
		return nil, errors.New("oidc: signer returned a malformed ECDSA signature")
	}
	out := make([]byte, 64)
	rs.R.FillBytes(out[:32])
	rs.S.FillBytes(out[32:])
	return out, nil
}

// ServeHTTP serves the discovery document and the JWKS at DiscoveryPath and
// JWKSPath below the issuer URL's path (mount the handler at the issuer's
// root, or strip nothing: it matches by suffix).
func (i *Issuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var body []byte
	switch {
	case strings.HasSuffix(r.URL.Path, DiscoveryPath):
		body = i.disc
	case strings.HasSuffix(r.URL.Path, JWKSPath):
		body = i.jwks
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Header().Set("Access-Control-Allow-Origin", "*")
	_, _ = w.Write(body)
}

// CheckIssuerURL refuses an issuer identifier that is not https (or http on loopback), or has a
// query, a fragment or a trailing slash.
func CheckIssuerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(raw, "/") ||
		!(u.Scheme == "https" || (u.Scheme == "http" && isLoopback(u.Hostname()))) {
		return fmt.Errorf(
			"oidc: issuer URL %q must be https (or http on loopback), without query, fragment or trailing slash",
			raw,
		)
	}
	return nil
}
