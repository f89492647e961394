package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/oidc"
)

// OAuth2Endpoints override an OAuth 2.0 provider's token and user-info URLs (tests, proxies).
type OAuth2Endpoints struct{ TokenURL, UserInfoURL string }

// oidcIssuerPath is where the API listener serves Latchkey's own issuer documents.
const oidcIssuerPath = "/oidc"

// defaultIssuerURL is http(s)://<api host:port>/oidc (https when the API serves TLS), with a
// wildcard host read as loopback.
func defaultIssuerURL(apiAddr string, tls bool) string {
	scheme := "http://"
	if tls {
		scheme = "https://"
	}
	host, port, err := net.SplitHostPort(apiAddr)
	if err != nil || port == "" || port == "0" {
		return scheme + "127.0.0.1:8080" + oidcIssuerPath
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return scheme + net.JoinHostPort(host, port) + oidcIssuerPath
}

// setUpOIDC makes Latchkey's issuer (signing with the OIDC server key) and the verifier of
// id_tokens: the configured trusted issuers, the well-known public ones, and Latchkey's own,
// whose documents it reads in process rather than over the network.
func (s *Server) setUpOIDC(now func() time.Time) error {
	url := s.cfg.OIDCIssuerURL
	if url == "" {
		url = defaultIssuerURL(s.cfg.APIAddr, s.cfg.APITLS.CertFile != "")
	}
	iss, err := oidc.NewIssuer(oidc.IssuerConfig{URL: url, Signer: s.Keys.Signer(custody.OIDC), Now: now})
	if err != nil {
		return err
	}
	s.OIDCIssuer = iss
	client := &http.Client{Timeout: 10 * time.Second, Transport: selfIssuer{iss: iss, next: http.DefaultTransport},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if req.URL.Scheme != "https" {
				return http.ErrUseLastResponse
			}
			return nil
		}}
	s.OIDCVerifier = oidc.NewVerifier(
		oidc.Config{TrustedIssuers: append(append([]string{}, s.cfg.OIDCTrustedIssuers...), url),
			HTTPClient: client, Now: now, AllowLoopbackHTTP: true},
	)
	return nil
}

// verifyOIDC is the directory.VerifyOIDC of the server's verifier.
func (s *Server) verifyOIDC(ctx context.Context, token, nonce string) (*directory.OIDCIdentity, error) {
	c, err := s.OIDCVerifier.Verify(ctx, token, oidc.Expect{Nonce: nonce})
	if err != nil {
		return nil, err
	}
	return &directory.OIDCIdentity{
		Issuer:        c.Issuer,
		Subject:       c.Subject,
		Audience:      c.Audience,
		Email:         c.Email,
		EmailVerified: c.EmailVerified,
	}, nil
}

// selfIssuer answers requests for Latchkey's own issuer documents from the issuer itself, so
// Latchkey verifies its tokens whatever address it is reached at, and passes the rest on.
type selfIssuer struct {
	iss  *oidc.Issuer
	next http.RoundTripper
}

func (t selfIssuer) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.String(), t.iss.URL()+"/") {
		return t.next.RoundTrip(req)
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	t.iss.ServeHTTP(rec, req)
	return &http.Response{StatusCode: rec.status, Status: http.StatusText(rec.status), Header: rec.header, Request: req,
		Body: io.NopCloser(
			bytes.NewReader(rec.body.Bytes()),
		), ContentLength: int64(rec.body.Len()), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
}

// recorder is the minimal http.ResponseWriter selfIssuer needs.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.status = code }

// oauth2Provider is the OAuth 2.0 provider of an OAUTH2_PROVIDER_* value, with the configured
// endpoint overrides.
func (s *Server) oauth2Provider(provider string) oidc.OAuth2Provider {
	var p oidc.OAuth2Provider
	name := "x"
	if provider == "OAUTH2_PROVIDER_DISCORD" {
		p, name = oidc.Discord("", ""), "discord"
	} else {
		p = oidc.X("", "")
	}
	if e, ok := s.cfg.OAuth2[name]; ok {
		if e.TokenURL != "" {
			p.TokenURL = e.TokenURL
		}
		if e.UserInfoURL != "" {
			p.UserInfoURL = e.UserInfoURL
		}
	}
	return p
}
