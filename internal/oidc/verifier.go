package oidc

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/latchkey/latchkey/internal/outbound"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The well-known public issuers trusted by default.
const (
	IssuerGoogle   = "https://accounts.google.com"
	IssuerApple    = "https://appleid.apple.com"
	IssuerFacebook = "https://www.facebook.com"
)

// DefaultTrustedIssuers are trusted unless Config.NoDefaultIssuers is set.
var DefaultTrustedIssuers = []string{IssuerGoogle, IssuerApple, IssuerFacebook}

// Errors. Every error Verify returns wraps exactly one of these; none contains
// the token.
var (
	ErrMalformed      = errors.New("oidc: malformed token")
	ErrUnknownIssuer  = errors.New("oidc: issuer is not trusted")
	ErrDiscovery      = errors.New("oidc: cannot fetch the issuer's keys")
	ErrUnsupportedAlg = errors.New("oidc: unsupported signing algorithm")
	ErrUnknownKey     = errors.New("oidc: token signed with a key the issuer does not publish")
	ErrBadSignature   = errors.New("oidc: bad signature")
	ErrExpired        = errors.New("oidc: token expired")
	ErrNotYetValid    = errors.New("oidc: token not yet valid")
	ErrAudience       = errors.New("oidc: token is for another audience")
	ErrNonce          = errors.New("oidc: nonce does not match")
	ErrClaims         = errors.New("oidc: missing or invalid claims")
)

// Config configures a Verifier.
type Config struct {
	// TrustedIssuers are added to DefaultTrustedIssuers. Matching is by exact
	// string.
	TrustedIssuers []string
	// NoDefaultIssuers drops DefaultTrustedIssuers.
	NoDefaultIssuers bool
	// HTTPClient fetches discovery documents and JWKS (default: 10 s
	// timeout, redirects only to https).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
	// AllowLoopbackHTTP lets issuers and jwks_uris on loopback hosts use
	// plain http (tests, local development).
	AllowLoopbackHTTP bool
	// CacheTTL is how long discovery and keys are kept (default 1 h).
	CacheTTL time.Duration
	// RefetchInterval is the least time between two fetches for the same
	// issuer triggered by an unknown kid (default 1 min).
	RefetchInterval time.Duration
	// Leeway is the clock skew allowed on exp, iat and nbf (default 1 min).
	Leeway time.Duration
}

// Expect is what the caller requires of a token beyond its validity.
type Expect struct {
	// Audiences are the accepted client ids; empty accepts any.
	Audiences []string
	// Nonce, when set, must equal the token's nonce.
	Nonce string
}

// Claims are the verified claims of an id_token. Raw holds every claim, with
// numbers as json.Number.
type Claims struct {
	Issuer, Subject, Audience, Email string
	EmailVerified                    bool
	Nonce                            string
	IssuedAt, Expiry                 time.Time
	Raw                              map[string]any
}

// Verifier verifies id_tokens. Safe for concurrent use.
type Verifier struct {
	trusted  map[string]bool
	client   *http.Client
	now      func() time.Time
	loopback bool
	ttl      time.Duration
	refetch  time.Duration
	leeway   time.Duration

	mu      sync.Mutex
	issuers map[string]*issuerKeys
}

// issuerKeys is the cache for one issuer. mu is held across fetches so that
// concurrent verifications wait for one fetch instead of each making one.
type issuerKeys struct {
	mu          sync.Mutex
	keys        []verificationKey
	fetched     time.Time // last successful fetch
	lastAttempt time.Time // last fetch attempt, successful or not
	lastErr     error     // of the last attempt
}

// failureBackoff is the least time between fetch attempts after a failure.
const failureBackoff = 5 * time.Second

// NewVerifier returns a Verifier for cfg.
func NewVerifier(cfg Config) *Verifier {
	v := &Verifier{
		trusted:  map[string]bool{},
		client:   cfg.HTTPClient,
		now:      cfg.Now,
		loopback: cfg.AllowLoopbackHTTP,
		ttl:      cfg.CacheTTL,
		refetch:  cfg.RefetchInterval,
		leeway:   cfg.Leeway,
		issuers:  map[string]*issuerKeys{},
	}
	if !cfg.NoDefaultIssuers {
		for _, iss := range DefaultTrustedIssuers {
			v.trusted[iss] = true
		}
	}
	for _, iss := range cfg.TrustedIssuers {
		v.trusted[iss] = true
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: 10 * time.Second, CheckRedirect: httpsRedirectsOnly}
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.ttl <= 0 {
		v.ttl = time.Hour
	}
	if v.refetch <= 0 {
		v.refetch = time.Minute
	}
	if v.leeway <= 0 {
		v.leeway = time.Minute
	}
	return v
}

func httpsRedirectsOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 5 {
		return errors.New("too many redirects")
	}
	if req.URL.Scheme != "https" && via[0].URL.Scheme == "https" {
		return errors.New("redirect away from https")
	}
	return nil
}

// Trusts reports whether iss is on the allowlist.
func (v *Verifier) Trusts(iss string) bool { return v.trusted[iss] }

// NonceFor is Turnkey's OIDC nonce for a client key: the lowercase hex
// SHA-256 of the UTF-8 public key hex, exactly as the client sends it.
func NonceFor(publicKeyHex string) string {
	h := sha256.Sum256([]byte(publicKeyHex))
	return hex.EncodeToString(h[:])
}

// Prefetch makes sure the keys that would verify rawIDToken are cached, fetching the issuer's
// discovery document and JWKS as Verify would. It runs before a store transaction, so that
// Verify inside it needs no network (an activity with an id_token: sign-up, OAuth login).
// Errors are left for Verify to report.
func (v *Verifier) Prefetch(ctx context.Context, rawIDToken string) {
	tok, err := parseJWS(rawIDToken)
	if err != nil {
		return
	}
	iss, _ := tok.payload["iss"].(string)
	if iss == "" || !v.trusted[iss] || v.checkURL(iss) != nil {
		return
	}
	_, _ = v.keysFor(ctx, iss, tok.header.Kid, tok.header.Alg)
}

// Verify checks rawIDToken and returns its claims.
func (v *Verifier) Verify(ctx context.Context, rawIDToken string, expect Expect) (*Claims, error) {
	tok, err := parseJWS(rawIDToken)
	if err != nil {
		return nil, err
	}
	switch tok.header.Alg {
	case AlgRS256, AlgES256, AlgEdDSA:
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedAlg, clip(tok.header.Alg, 20))
	}
	iss, ok := tok.payload["iss"].(string)
	if !ok || iss == "" {
		return nil, fmt.Errorf("%w: no iss", ErrClaims)
	}
	if !v.trusted[iss] {
		return nil, fmt.Errorf("%w: %q", ErrUnknownIssuer, clip(iss, 200))
	}
	if err := v.checkURL(iss); err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrUnknownIssuer, iss, err)
	}
	keys, err := v.keysFor(ctx, iss, tok.header.Kid, tok.header.Alg)
	if err != nil {
		return nil, err
	}
	verified := false
	for _, k := range keys {
		if verifySignature(tok.header.Alg, k.key, tok.signingInput, tok.signature) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, ErrBadSignature
	}
	return v.checkClaims(tok.payload, iss, expect)
}

func (v *Verifier) checkClaims(p map[string]any, iss string, expect Expect) (*Claims, error) {
	c := &Claims{Issuer: iss, Raw: p}
	var ok bool
	if c.Subject, ok = p["sub"].(string); !ok || c.Subject == "" {
		return nil, fmt.Errorf("%w: no sub", ErrClaims)
	}
	auds, err := audiences(p["aud"])
	if err != nil {
		return nil, err
	}
	c.Audience = auds[0]
	if len(expect.Audiences) > 0 {
		match := ""
	outer:
		for _, a := range auds {
			for _, want := range expect.Audiences {
				if a == want {
					match = a
					break outer
				}
			}
		}
		if match == "" {
			return nil, fmt.Errorf("%w: %q", ErrAudience, clip(strings.Join(auds, ","), 200))
		}
		c.Audience = match
	}
	now := v.now()
	exp, err := numericDate(p, "exp", true)
	if err != nil {
		return nil, err
	}
	c.Expiry = exp
	if now.After(exp.Add(v.leeway)) {
		return nil, fmt.Errorf("%w at %s", ErrExpired, exp.UTC().Format(time.RFC3339))
	}
	iat, err := numericDate(p, "iat", true)
	if err != nil {
		return nil, err
	}
	c.IssuedAt = iat
	if iat.After(now.Add(v.leeway)) {
		return nil, fmt.Errorf("%w: issued in the future", ErrNotYetValid)
	}
	if iat.After(exp) {
		return nil, fmt.Errorf("%w: issued after it expires", ErrClaims)
	}
	nbf, err := numericDate(p, "nbf", false)
	if err != nil {
		return nil, err
	}
	if !nbf.IsZero() && nbf.After(now.Add(v.leeway)) {
		return nil, ErrNotYetValid
	}
	if n, present := p["nonce"]; present {
		if c.Nonce, ok = n.(string); !ok {
			return nil, fmt.Errorf("%w: nonce is not a string", ErrClaims)
		}
	}
	if expect.Nonce != "" && subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(expect.Nonce)) != 1 {
		return nil, ErrNonce
	}
	if e, present := p["email"]; present {
		if c.Email, ok = e.(string); !ok {
			return nil, fmt.Errorf("%w: email is not a string", ErrClaims)
		}
	}
	// Apple sends email_verified as the string "true".
	switch ev := p["email_verified"].(type) {
	case bool:
		c.EmailVerified = ev
	case string:
		c.EmailVerified = ev == "true"
	}
	return c, nil
}

func audiences(v any) ([]string, error) {
	switch a := v.(type) {
	case string:
		if a != "" {
			return []string{a}, nil
		}
	case []any:
		out := make([]string, 0, len(a))
		for _, x := range a {
			s, ok := x.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("%w: aud has a non-string member", ErrClaims)
			}
			out = append(out, s)
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%w: no aud", ErrClaims)
}

// numericDate reads a NumericDate claim (seconds, possibly fractional).
func numericDate(p map[string]any, name string, required bool) (time.Time, error) {
	v, present := p[name]
	if !present {
		if required {
			return time.Time{}, fmt.Errorf("%w: no %s", ErrClaims, name)
		}
		return time.Time{}, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, fmt.Errorf("%w: %s is not a number", ErrClaims, name)
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return time.Time{}, fmt.Errorf("%w: %s is out of range", ErrClaims, name)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

// checkURL enforces https, or http on a loopback host when allowed.
func (v *Verifier) checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("not an absolute URL without query or fragment")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if v.loopback && isLoopback(u.Hostname()) {
			return nil
		}
		return errors.New("plain http is only allowed for loopback issuers")
	}
	return errors.New("scheme must be https")
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// keysFor returns the issuer's keys that may have signed a token with kid and
// alg, fetching or refetching as the cache rules allow.
func (v *Verifier) keysFor(ctx context.Context, iss, kid, alg string) ([]verificationKey, error) {
	v.mu.Lock()
	st := v.issuers[iss]
	if st == nil {
		st = &issuerKeys{}
		v.issuers[iss] = st
	}
	v.mu.Unlock()

	st.mu.Lock()
	defer st.mu.Unlock()
	now := v.now()
	fetchedNow := false
	if st.keys == nil || now.Sub(st.fetched) >= v.ttl {
		if err := v.refresh(ctx, st, iss, now); err != nil && st.keys == nil {
			return nil, err
		}
		fetchedNow = true
	}
	match := matching(st.keys, kid, alg)
	if len(match) == 0 && kid != "" && !fetchedNow && now.Sub(st.lastAttempt) >= v.refetch {
		if err := v.refresh(ctx, st, iss, now); err != nil {
			return nil, err
		}
		match = matching(st.keys, kid, alg)
	}
	if len(match) == 0 {
		return nil, fmt.Errorf("%w (kid %q, alg %s)", ErrUnknownKey, clip(kid, 100), alg)
	}
	return match, nil
}

func matching(keys []verificationKey, kid, alg string) []verificationKey {
	var out []verificationKey
	for _, k := range keys {
		if (kid == "" || k.kid == kid) && k.algFits(alg) {
			out = append(out, k)
		}
	}
	return out
}

// refresh fetches discovery and keys; st.mu is held. After a failure it
// waits failureBackoff before trying the network again.
func (v *Verifier) refresh(ctx context.Context, st *issuerKeys, iss string, now time.Time) error {
	if st.lastErr != nil && now.Sub(st.lastAttempt) < failureBackoff {
		return st.lastErr
	}
	keys, err := v.fetch(ctx, iss)
	if err != nil {
		if errors.Is(err, outbound.ErrInTransaction) {
			return err // says nothing about the issuer either
		}
		if ctx.Err() != nil {
			// The caller gave up; that says nothing about the issuer, so
			// the next caller may try at once.
			return fmt.Errorf("%w: %s: %v", ErrDiscovery, iss, ctx.Err())
		}
		st.lastAttempt, st.lastErr = now, err
		return err
	}
	st.lastAttempt = now
	st.keys, st.fetched, st.lastErr = keys, now, nil
	return nil
}

func (v *Verifier) fetch(ctx context.Context, iss string) ([]verificationKey, error) {
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	body, err := v.get(ctx, strings.TrimSuffix(iss, "/")+"/.well-known/openid-configuration")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: discovery: %w", ErrDiscovery, iss, err)
	}
	if err := json.Unmarshal(body, &disc); err != nil {
		return nil, fmt.Errorf("%w: %s: discovery document is not valid JSON", ErrDiscovery, iss)
	}
	if disc.Issuer != iss {
		return nil, fmt.Errorf("%w: %s: discovery document names issuer %q", ErrDiscovery, iss, clip(disc.Issuer, 200))
	}
	if err := v.checkURL(disc.JWKSURI); err != nil {
		return nil, fmt.Errorf("%w: %s: jwks_uri: %v", ErrDiscovery, iss, err)
	}
	body, err = v.get(ctx, disc.JWKSURI)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: JWKS: %v", ErrDiscovery, iss, err)
	}
	keys, err := parseJWKS(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDiscovery, iss, err)
	}
	return keys, nil
}

// MaxDocumentBytes bounds a discovery document, a JWKS and an OAuth 2.0 answer read from a
// provider (docs/limits.md §3); real ones are 1 to 6 KiB.
const MaxDocumentBytes = 1 << 20

func (v *Verifier) get(ctx context.Context, u string) ([]byte, error) {
	if err := outbound.Check(ctx, "OIDC discovery"); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, errors.New("bad URL")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxDocumentBytes {
		return nil, errors.New("document too large")
	}
	return body, nil
}
