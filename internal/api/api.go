package api

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/admission"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/clientaddr"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/metrics"
	"github.com/latchkey/latchkey/internal/session"
	"github.com/latchkey/latchkey/internal/stamp"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/tracing"
	"github.com/latchkey/latchkey/internal/wire"
)

// DefaultMaxBody is the default request body limit.
const DefaultMaxBody = 2 << 20

// Server serves the activity API.
type Server struct {
	Engine   *activity.Engine
	Store    store.Store
	WebAuthn stamp.WebAuthnPolicy
	// WebhookJWKS is the webhook signing key set, served at /public/v1/discovery/webhooks/jwks.
	WebhookJWKS []byte
	// WellKnown returns the JSON served at /.well-known/latchkey.json (it changes when a server
	// key rotation is pending or takes over).
	WellKnown func() []byte
	MaxBody   int64
	Log       *slog.Logger
	Now       func() time.Time
	// Version is reported by /healthz.
	Version string
	// TrustedProxies are the peers whose X-Forwarded-For names the client (IP allowlists judge
	// the client's address). Empty: the connection's peer is the client.
	TrustedProxies []netip.Prefix
	// Notarizers returns the keys that verify the X-Session tokens of read-only sessions (the
	// notarizer key in use first; more while a rotation of it overlaps).
	Notarizers func() []*ecdsa.PublicKey
	// Attested resolves the caller of an X-Stamp-Attested request (its signature over the body
	// already verified) whose attestation names a user of orgID or of one of its
	// sub-organizations; nil refuses attested stamps as not supported.
	Attested func(ctx context.Context, r store.Reader, orgID string, p stamp.AttestedProof) (*directory.Caller, error)
	// OIDC serves Latchkey's own OIDC issuer documents under /oidc/ (discovery and JWKS).
	OIDC http.Handler
	// Callers, when set, keeps API-key resolutions in memory (directory.CallerCache); the
	// Store's writes must then go through hot.Wrap with the same Versions.
	Callers  *directory.CallerCache
	started  time.Time
	served   atomic.Int64
	draining atomic.Bool
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler {
	if s.MaxBody <= 0 {
		s.MaxBody = DefaultMaxBody
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.Now == nil {
		s.Now = func() time.Time { return time.Now().UTC() }
	}
	s.started = time.Now()
	return http.HandlerFunc(s.serveHTTP)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := id.New()
	w.Header().Set("X-Request-Id", reqID)
	setCORS(w.Header())
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			s.Log.Error(
				"panic serving request",
				"request_id",
				reqID,
				"path",
				r.URL.Path,
				"panic",
				fmt.Sprint(p),
				"stack",
				string(debug.Stack()),
			)
			apierr.Render(w, apierr.Internalf(nil, "internal error (request %s)", reqID))
		}
	}()
	path := cleanPath(r.URL.Path)
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	switch {
	case path == "/public/v1/discovery/webhooks/jwks" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(s.WebhookJWKS)
		return
	case path == "/.well-known/latchkey.json" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.WellKnown())
		return
	case path == "/healthz" && r.Method == http.MethodGet:
		s.health(w, r)
		return
	case path == "/livez" && r.Method == http.MethodGet:
		// The process serves: nothing else is checked (a failing store is readiness's
		// business, and restarting the process would not mend it).
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
		return
	case path == "/readyz" && r.Method == http.MethodGet:
		s.ready(w, r)
		return
	case strings.HasPrefix(path, "/oidc/") && s.OIDC != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		s.OIDC.ServeHTTP(w, r)
		return
	}
	kind, op, ok := splitRoute(path)
	if !ok {
		apierr.Render(w, apierr.NotFoundf("unknown path %s", path))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		apierr.Render(
			w,
			&apierr.Error{
				Code:        apierr.InvalidArgument,
				TurnkeyCode: "INVALID_REQUEST",
				Message:     "method " + r.Method + " not allowed: the API takes POST",
			},
		)
		return
	}
	span := tracing.NoSpan()
	if tracing.Enabled() {
		// Named by the route the API knows ("unknown" otherwise), so clients cannot make names.
		operation := Operation(path)
		var ctx context.Context
		ctx, span = tracing.StartServer(r.Context(), propagation.HeaderCarrier(r.Header), "POST /public/v1/"+operation)
		r = r.WithContext(ctx) // even unsampled: the children follow the sampling decision
		if span.IsRecording() {
			span.SetAttributes(
				attribute.String("http.request.method", r.Method),
				attribute.String("http.route", "/public/v1/"+operation),
				attribute.String("latchkey.operation", operation),
			)
		}
	}
	defer span.End()
	status, err := s.handle(r, w, kind, op)
	if err != nil {
		e := apierr.From(err)
		status = e.Code.HTTPStatus()
		if span.IsRecording() {
			// The code, never the message: messages can quote the request.
			span.SetStatus(codes.Error, e.TurnkeyCode)
			span.SetAttributes(
				attribute.Int("latchkey.error.code", int(e.Code)),
				attribute.String("latchkey.error.turnkey_code", e.TurnkeyCode),
			)
		}
		switch {
		case (e.Code == apierr.Internal || e.Code == apierr.Unavailable) && r.Context().Err() != nil:
			// The client went away mid-request (its context ended): not the server's failure.
			s.Log.Info("request abandoned by the client", "request_id", reqID, "path", path)
		case e.Code == apierr.Internal || e.Code == apierr.Unavailable:
			s.Log.Error("request failed", "request_id", reqID, "path", path, "err", err)
		}
		apierr.Render(w, e)
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	s.served.Add(1)
	s.Log.Debug("request", "request_id", reqID, "path", path, "status", status, "duration", time.Since(start))
}

func (s *Server) handle(r *http.Request, w http.ResponseWriter, kind, op string) (int, error) {
	raw, err := admission.ReadBody(w, r, s.MaxBody)
	if err != nil {
		return 0, err
	}
	// The signed body must mean one thing: no invalid UTF-8 (the decoder would replace it), no
	// member named twice (the decoder would keep the last).
	// The same pass says whether the body is valid JSON, so the readers after it need not check.
	valid, fe := wire.CheckBody(raw)
	if fe != nil {
		return 0, apierr.New(apierr.InvalidArgument, "INVALID_REQUEST", "%s", fe.Error())
	}
	ctx := r.Context()
	auth, err := s.verifyStamp(r.Header, raw)
	if err != nil {
		return 0, err
	}
	auth.client, auth.clientKnown = s.clientAddr(r)
	switch kind {
	case "submit":
		if auth.session != nil {
			return 0, apierr.Denied("request not authorized: a read-only session can only run queries")
		}
		env, err := activity.ParseEnvelopeOf(raw, valid)
		if err != nil {
			return 0, err
		}
		metrics.SetOrganization(ctx, env.OrganizationId)
		if span := tracing.SpanFrom(ctx); span.IsRecording() {
			span.SetAttributes(
				attribute.String("latchkey.organization_id", env.OrganizationId),
				attribute.String("latchkey.activity_type", env.Type),
			)
		}
		login := op == "stamp_login"
		if auth.attested != nil && !login {
			return 0, apierr.Denied("request not authorized: an X-Stamp-Attested stamp only logs in (stamp_login)")
		}
		caller, err := s.resolve(ctx, auth, env.OrganizationId, raw)
		if login && err != nil {
			caller, err = s.resolveInSubOrg(ctx, auth, env.OrganizationId, raw, err)
		}
		if err != nil {
			return 0, err
		}
		if login && caller.Target.ID != env.OrganizationId {
			// A login naming the parent runs in the sub-organization holding the credential.
			env.OrganizationId = caller.Target.ID
		}
		data, err := s.Engine.Submit(ctx, activity.SubmitRequest{Path: op, Raw: raw, Env: env, Caller: caller})
		if err != nil {
			return 0, err
		}
		writeActivity(w, data)
		return http.StatusOK, nil
	default:
		orgID, err := queryOrganization(raw, valid)
		if err != nil {
			return 0, apierr.Invalid("body", "malformed JSON: %v", err)
		}
		metrics.SetOrganization(ctx, orgID)
		if span := tracing.SpanFrom(ctx); span.IsRecording() {
			span.SetAttributes(attribute.String("latchkey.organization_id", orgID))
		}
		if auth.attested != nil {
			return 0, apierr.Denied("request not authorized: an X-Stamp-Attested stamp only logs in (stamp_login)")
		}
		caller, err := s.resolve(ctx, auth, orgID, raw)
		if op == "whoami" && err != nil {
			// whoami maps a credential to its sub-organization: asked of the parent with a
			// sub-organization's key or passkey, it answers who that is (docs/wire.md §2).
			caller, err = s.resolveInSubOrg(ctx, auth, orgID, raw, err)
		}
		if err != nil {
			return 0, err
		}
		out, err := s.Engine.Query(ctx, activity.QueryRequest{Path: op, Raw: raw, Caller: caller})
		if err != nil {
			return 0, err
		}
		body, err := json.Marshal(out)
		if err != nil {
			return 0, apierr.Internalf(err, "encoding response")
		}
		writeJSON(w, body)
		return http.StatusOK, nil
	}
}

// queryOrganization is a query body's organizationId as json.Unmarshal into
// struct{OrganizationID string `json:"organizationId"`} reads it. A body as the SDKs send it (valid
// JSON, organizationId once, a string without escapes) is read without the decoder's reflection;
// valid says wire.CheckBody found raw valid JSON (it is not checked again).
func queryOrganization(raw []byte, valid bool) (string, error) {
	var v [1][]byte
	if valid && wire.MembersValid(raw, queryMembers, v[:], true) ||
		!valid && wire.Members(raw, queryMembers, v[:], true) {
		if v[0] == nil {
			return "", nil
		}
		if org, ok := wire.PlainString(v[0]); ok {
			return org, nil
		}
	}
	var head struct {
		OrganizationID string `json:"organizationId"`
	}
	err := json.Unmarshal(raw, &head)
	return head.OrganizationID, err
}

var queryMembers = []string{"organizationId"}

// writeActivity answers {"activity": data}, in three writes rather than a copy of data (the
// response writer buffers them).
func writeActivity(w http.ResponseWriter, data []byte) {
	setJSON(w.Header(), len(activityPrefix)+len(data)+len(activitySuffix))
	_, _ = w.Write(activityPrefix)
	_, _ = w.Write(data)
	_, _ = w.Write(activitySuffix)
}

var activityPrefix, activitySuffix = []byte(`{"activity":`), []byte(`}`)

func writeJSON(w http.ResponseWriter, body []byte) {
	setJSON(w.Header(), len(body))
	_, _ = w.Write(body)
}

// setJSON sets the headers of a 200 JSON answer of n bytes. Its length is given: net/http sends
// an answer larger than its 2 KiB buffer (a signing activity is just over) chunked otherwise.
func setJSON(h http.Header, n int) {
	h["Content-Type"] = contentJSON
	h.Set("Content-Length", strconv.Itoa(n))
}

// authProof is a verified stamp before the caller is known.
type authProof struct {
	session     *session.Claims // a read-only session: queries only
	apiKey      *stamp.APIKeyProof
	assertion   *stamp.Assertion
	attested    *stamp.AttestedProof
	client      netip.Addr
	clientKnown bool
}

// clientAddr is the address IP allowlists judge (package clientaddr).
func (s *Server) clientAddr(r *http.Request) (netip.Addr, bool) {
	return clientaddr.From(r, s.TrustedProxies)
}

// checkAllowlists refuses a request from an address the caller's organization or API key does
// not allow.
func checkAllowlists(c *directory.Caller, p authProof) error {
	for _, l := range []*directory.IPAllowlist{c.Org.IPAllowlist, c.KeyAllowlist} {
		if !l.Allows(p.client, p.clientKnown) {
			return apierr.New(
				apierr.PermissionDenied,
				"IP_NOT_ALLOWED",
				"request from %s is not allowed by the IP allowlist",
				p.client,
			)
		}
	}
	return nil
}

func (s *Server) verifyStamp(h http.Header, raw []byte) (authProof, error) {
	if v := h.Get("X-Stamp"); v != "" {
		p, err := stamp.VerifyAPIKey(v, raw)
		if err != nil {
			return authProof{}, stampError(err)
		}
		return authProof{apiKey: &p}, nil
	}
	if v := h.Get("X-Stamp-Webauthn"); v != "" {
		a, err := stamp.ParseWebAuthn(v)
		if err != nil {
			return authProof{}, stampError(err)
		}
		return authProof{assertion: &a}, nil
	}
	if v := h.Get("X-Session"); v != "" {
		c, err := parseSession(v, s.Notarizers(), s.Now())
		if err != nil {
			return authProof{}, apierr.Unauth("INVALID_SESSION", "invalid X-Session: %v", err)
		}
		if c.SessionType != session.ReadOnly {
			return authProof{}, apierr.Unauth(
				"INVALID_SESSION",
				"X-Session carries read-only sessions; stamp requests with the session's key instead",
			)
		}
		return authProof{session: c}, nil
	}
	if v := h.Get("X-Stamp-Attested"); v != "" {
		a, err := stamp.VerifyAttested(v, raw)
		if err != nil {
			return authProof{}, stampError(err)
		}
		return authProof{attested: &a}, nil
	}
	return authProof{}, apierr.Unauth(
		"MISSING_STAMP",
		"request is not stamped: send an X-Stamp, X-Stamp-WebAuthn or X-Stamp-Attested header",
	)
}

// resolveInSubOrg retries a login or a whoami whose credential is not in the organization it
// names (nor that organization's parent) in the one sub-organization that holds it: core stamps
// passkey and wallet logins with the parent's id, and apps ask whoami of the parent to learn
// the user's sub-organization (docs/wire.md §2). notFound is returned otherwise.
func (s *Server) resolveInSubOrg(
	ctx context.Context,
	p authProof,
	orgID string,
	raw []byte,
	notFound error,
) (*directory.Caller, error) {
	var key, value, kind string
	switch {
	case p.apiKey != nil:
		key, value, kind = directory.KeyAPIKeyPublicKey, p.apiKey.PublicKey, directory.KindAPIKey
	case p.assertion != nil:
		id, err := p.assertion.CanonicalCredentialID()
		if err != nil {
			return nil, notFound
		}
		key, value, kind = directory.KeyAuthCredentialID, id, directory.KindAuthenticator
	default:
		return nil, notFound
	}
	if c := apierr.From(notFound).TurnkeyCode; c != "PUBLIC_KEY_NOT_FOUND" && c != "CREDENTIAL_NOT_FOUND" {
		return nil, notFound
	}
	var sub string
	if err := s.Store.View(ctx, func(r store.Reader) error {
		var err error
		sub, err = directory.SubOrgHolding(ctx, r, orgID, key, value, kind)
		return err
	}); err != nil {
		return nil, err
	}
	if sub == "" {
		return nil, notFound
	}
	return s.resolve(ctx, p, sub, raw)
}

func stampError(err error) error {
	return apierr.Unauth("INVALID_STAMP", "invalid stamp: %v", err)
}

func (s *Server) resolve(ctx context.Context, p authProof, orgID string, raw []byte) (*directory.Caller, error) {
	if orgID == "" {
		return nil, apierr.Required("organizationId")
	}
	res := directory.Resolver{Now: s.Now, Cache: s.Callers}
	var caller *directory.Caller
	err := s.Store.View(ctx, func(r store.Reader) error {
		var err error
		if p.session != nil {
			caller, err = res.ResolveSession(ctx, r, orgID, p.session.OrganizationID, p.session.UserID)
			return err
		}
		if p.attested != nil {
			if s.Attested == nil {
				return apierr.Unsupported("X-Stamp-Attested")
			}
			caller, err = s.Attested(ctx, r, orgID, *p.attested)
			return err
		}
		if p.apiKey != nil {
			caller, err = res.ResolveAPIKey(ctx, r, orgID, p.apiKey.PublicKey, string(p.apiKey.Curve))
			if err == nil {
				caller.Scheme, caller.Signature = p.apiKey.Scheme, p.apiKey.Signature
				p.apiKey.Registered() // its later stamps may be verified with a per-key table
			}
			return err
		}
		credID, err := p.assertion.CanonicalCredentialID()
		if err != nil {
			return stampError(err)
		}
		var a *directory.Authenticator
		caller, a, err = res.ResolveAuthenticator(ctx, r, orgID, credID)
		if err != nil {
			return err
		}
		if _, err := p.assertion.Verify(raw, a.COSEPublicKey, s.WebAuthn); err != nil {
			return stampError(err)
		}
		caller.Scheme, caller.Signature = "SIGNATURE_SCHEME_TK_API_WEBAUTHN", fmt.Sprintf("%x", p.assertion.Signature)
		return nil
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, &apierr.Error{
			Code:        apierr.Unavailable,
			TurnkeyCode: "UNAVAILABLE",
			Message:     "the store is unavailable; try again",
			Cause:       err,
		}
	}
	if err := checkAllowlists(caller, p); err != nil {
		return nil, err
	}
	return caller, nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	status, code := "ok", http.StatusOK
	role, err := store.ReadRole(ctx, s.Store)
	if err != nil {
		status, code = "store unreachable", http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(map[string]any{
		"status": status, "store": s.Store.Dialect(), "version": s.Version,
		"uptimeSeconds": int64(time.Since(s.started).Seconds()), "requestsServed": s.served.Load(),
		"storeRole": role.Role, "storeWritable": err == nil && role.Ready(), "storeRefuses": role.Refused,
		"standbys": role.Standbys, "syncStandbys": role.SyncStandbys,
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// ready answers /readyz: 200 while the store takes writes and the server is not draining, 503
// otherwise, so a load balancer stops sending requests before shutdown, while the database is
// away, and to a process whose database is a standby, is read-only (a primary being demoted),
// or refuses writes (--require-sync-standby without a synchronous standby).
func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	status, code := "ok", http.StatusOK
	if s.draining.Load() {
		status, code = "draining", http.StatusServiceUnavailable
	} else {
		switch role, err := store.ReadRole(ctx, s.Store); {
		case err != nil:
			status, code = "store unreachable", http.StatusServiceUnavailable
		case !role.Writable:
			status, code = "store not writable: "+role.Role, http.StatusServiceUnavailable
		case role.Refused != "":
			status, code = "store refuses writes: "+role.Refused, http.StatusServiceUnavailable
		}
	}
	body, _ := json.Marshal(map[string]string{"status": status})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// Drain makes /readyz answer 503 from now on: the server is shutting down.
func (s *Server) Drain() { s.draining.Store(true) }

// Operation names a request path's operation for metrics and the access log: the swagger path
// ("submit/create_wallet", "query/whoami") when the path is one, a fixed name for the other
// endpoints, "unknown" for anything else (so clients cannot make new label values).
func Operation(path string) string {
	path = cleanPath(path)
	switch {
	case path == "/healthz", path == "/livez", path == "/readyz":
		return path[1:]
	case path == "/.well-known/latchkey.json":
		return "well-known"
	case path == "/public/v1/discovery/webhooks/jwks":
		return "webhook-jwks"
	case strings.HasPrefix(path, "/oidc/"):
		return "oidc"
	}
	kind, op, ok := splitRoute(path)
	if !ok {
		return "unknown"
	}
	k := wire.Submit
	if kind == "query" {
		k = wire.Query
	}
	if _, known := wire.Lookup(k, op); !known {
		return "unknown"
	}
	return kind + "/" + op
}

// cleanPath collapses repeated slashes (a base URL ending in "/" yields "//public/...") without
// redirecting.
func cleanPath(p string) string {
	if !strings.Contains(p, "//") {
		return p
	}
	var b strings.Builder
	prev := byte(0)
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && prev == '/' {
			continue
		}
		b.WriteByte(p[i])
		prev = p[i]
	}
	return b.String()
}

func splitRoute(path string) (kind, op string, ok bool) {
	rest, found := strings.CutPrefix(path, "/public/v1/")
	if !found {
		return "", "", false
	}
	kind, op, found = strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if !found || op == "" || strings.Contains(op, "/") || (kind != "submit" && kind != "query") {
		return "", "", false
	}
	return kind, op, true
}

// CORS: browsers call the API directly with stamps (no cookies), so any origin may.
// SetCORS sets the API's CORS headers (a sealed server's answers carry them too, so browser
// clients can read them).
func SetCORS(h http.Header) { setCORS(h) }

// setCORS sets the same four values on every answer: it shares one slice per header rather than
// allocating four (a header's values are replaced or appended to, never written in place, and an
// append to a full slice copies it).
func setCORS(h http.Header) {
	h["Access-Control-Allow-Origin"] = corsOrigin
	h["Access-Control-Allow-Methods"] = corsMethods
	h["Access-Control-Allow-Headers"] = corsHeaders
	h["Access-Control-Max-Age"] = corsMaxAge
}

var (
	corsOrigin  = []string{"*"}[:1:1]
	corsMethods = []string{"POST, GET, OPTIONS"}[:1:1]
	corsHeaders = []string{
		"Content-Type, X-Stamp, X-Stamp-WebAuthn, X-Stamp-Attested, X-Client-Version, X-Session",
	}[:1:1]
	corsMaxAge  = []string{"600"}[:1:1]
	contentJSON = []string{"application/json"}[:1:1]
)

// parseSession checks an X-Session token with each key that may have signed it; the error is
// the key in use's.
func parseSession(token string, keys []*ecdsa.PublicKey, now time.Time) (*session.Claims, error) {
	var first error
	for _, k := range keys {
		c, err := session.Parse(token, k, now)
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}
