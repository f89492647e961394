package authproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/admission"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/clientaddr"
	"github.com/latchkey/latchkey/internal/id"
)

// ConfigHeader names the organization's proxy configuration. Header names are case-blind; the
// SDKs send X-Auth-Proxy-Config-ID (the docs write -Id).
const ConfigHeader = "X-Auth-Proxy-Config-ID"

// DefaultMaxBody bounds a proxy request body.
const DefaultMaxBody = 1 << 20

// allowHeaders are the request headers browsers may send (docs/wire.md §9.11).
const allowHeaders = "Content-Type, X-Auth-Proxy-Config-ID, X-Captcha-Token, X-Client-Version, X-Stamp, X-Stamp-WebAuthn, X-Stamp-Attested"

// The proxy's own refusals, each with its own code (docs/auth-proxy.md lists them).
var (
	errConfigIDMissing = apierr.New(
		apierr.InvalidArgument,
		"AUTH_PROXY_CONFIG_ID_MISSING",
		"the %s header is required: send the configId `latchkey proxy enable` printed",
		ConfigHeader,
	)
	errOriginMissing = apierr.New(
		apierr.PermissionDenied,
		"ORIGIN_NOT_ALLOWED",
		"this auth proxy configuration only allows listed origins and the request has no Origin header",
	)
)

func errConfigNotFound(cfgID string) error {
	shown := cfgID
	if len(shown) > 64 {
		shown = shown[:64] + "…"
	}
	return apierr.New(
		apierr.NotFound,
		"AUTH_PROXY_CONFIG_NOT_FOUND",
		"unknown auth proxy configuration %q (%s)",
		shown,
		ConfigHeader,
	)
}

func errOriginNotAllowed(origin string) error {
	if len(origin) > 256 {
		origin = origin[:256] + "…"
	}
	return apierr.New(
		apierr.PermissionDenied,
		"ORIGIN_NOT_ALLOWED",
		"origin %q is not allowed by this auth proxy configuration (allowed origins are set with latchkey proxy update --allowed-origins)",
		origin,
	)
}

// Server is the auth proxy's HTTP service (/v1/*).
type Server struct {
	Configs     *Manager
	Coordinator Coordinator
	Log         *slog.Logger
	Now         func() time.Time
	MaxBody     int64
	// SignupRate and OTPRate limit sign-ups (signup, signup_v2) and code sends (otp_init,
	// otp_init_v2) per client address; nil means the defaults, a zero Rate no limit.
	SignupRate, OTPRate *Rate
	// TrustedProxies are the peers whose X-Forwarded-For names the client (package clientaddr).
	TrustedProxies []netip.Prefix

	limits map[string]*limiter // by operation
}

type handlerFunc func(ctx context.Context, c *call, body []byte) (any, error)

// routes are the swagger's operations (spec/auth_proxy.swagger.json), all POST.
func (s *Server) routes() map[string]handlerFunc {
	return map[string]handlerFunc{
		"signup":                   s.signup,
		"signup_v2":                s.signup,
		"otp_init":                 s.otpInit(false),
		"otp_init_v2":              s.otpInit(true),
		"otp_verify":               s.otpVerify,
		"otp_verify_v2":            s.otpVerifyV2,
		"otp_login":                s.otpLogin(false),
		"otp_login_v2":             s.otpLogin(true),
		"oauth2_authenticate":      s.oauth2Authenticate,
		"oauth_login":              s.oauthLogin,
		"account":                  s.account,
		"wallet_kit_config":        s.walletKitConfig,
		"wallet_kit_client_params": s.walletKitClientParams,
	}
}

// Handler returns the proxy's HTTP handler.
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
	routes := s.routes()
	signup, otp := DefaultSignupRate, DefaultOTPRate
	if s.SignupRate != nil {
		signup = *s.SignupRate
	}
	if s.OTPRate != nil {
		otp = *s.OTPRate
	}
	signups, sends := newLimiter(signup, "sign-ups"), newLimiter(otp, "one-time codes")
	s.limits = map[string]*limiter{"signup": signups, "signup_v2": signups, "otp_init": sends, "otp_init_v2": sends}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serveHTTP(w, r, routes) })
}

// upstream is an answer of the coordinator passed to the client as it came: the proxy returns
// either the coordinator's success payload or its error.
type upstream struct {
	status int
	body   []byte
}

func (u *upstream) Error() string { return fmt.Sprintf("coordinator answered %d", u.status) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request, routes map[string]handlerFunc) {
	reqID := id.New()
	h := w.Header()
	h.Set("X-Request-Id", reqID)
	setCORS(h, r.Header.Get("Origin"))
	defer func() {
		if p := recover(); p != nil {
			s.Log.Error(
				"panic serving auth proxy request",
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
	if r.Method == http.MethodOptions {
		// A preflight carries no config id: it is answered for every origin, and the request
		// that follows is checked against the configuration's allowed origins.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	path := strings.TrimSuffix(cleanPath(r.URL.Path), "/")
	op, ok := strings.CutPrefix(path, "/v1/")
	handle := routes[op]
	if !ok || handle == nil {
		apierr.Render(w, apierr.NotFoundf("unknown auth proxy path %s (the auth proxy serves /v1/<operation>)", path))
		return
	}
	if r.Method != http.MethodPost {
		h.Set("Allow", "POST, OPTIONS")
		apierr.Render(
			w,
			apierr.New(
				apierr.InvalidArgument,
				"INVALID_REQUEST",
				"method %s not allowed: the auth proxy takes POST",
				r.Method,
			),
		)
		return
	}
	start := time.Now()
	status, err := s.serve(w, r, op, handle)
	if err != nil {
		var up *upstream
		if errors.As(err, &up) {
			status = up.status
			h.Set("Content-Type", "application/json")
			w.WriteHeader(up.status)
			_, _ = w.Write(up.body)
		} else {
			var rl *rateLimited
			if errors.As(err, &rl) {
				h.Set("Retry-After", strconv.Itoa(int(rl.wait/time.Second)))
			}
			e := apierr.From(err)
			status = e.Code.HTTPStatus()
			if e.Code == apierr.Internal || e.Code == apierr.Unavailable {
				s.Log.Error("auth proxy request failed", "request_id", reqID, "path", path, "err", err)
			}
			apierr.Render(w, e)
		}
	}
	s.Log.Debug(
		"auth proxy request",
		"request_id",
		reqID,
		"path",
		path,
		"status",
		status,
		"duration",
		time.Since(start),
	)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, op string, handle handlerFunc) (int, error) {
	ctx := r.Context()
	cfgID := strings.TrimSpace(r.Header.Get(ConfigHeader))
	if cfgID == "" {
		return 0, errConfigIDMissing
	}
	if !id.Valid(strings.ToLower(cfgID)) {
		return 0, errConfigNotFound(cfgID)
	}
	cfg, err := s.Configs.ByConfigID(ctx, strings.ToLower(cfgID))
	if err != nil {
		if apierr.From(err).Code == apierr.NotFound {
			return 0, errConfigNotFound(cfgID)
		}
		return 0, err
	}
	if !cfg.Settings.Enabled {
		return 0, ErrDisabled
	}
	if origin := r.Header.Get("Origin"); !cfg.Settings.AllowsOrigin(origin) {
		if origin == "" {
			return 0, errOriginMissing
		}
		return 0, errOriginNotAllowed(origin)
	}
	if l := s.limits[op]; l != nil {
		// An address that cannot be read (a garbled X-Forwarded-For from a trusted proxy)
		// shares one bucket with every other such request.
		addr, _ := clientaddr.From(r, s.TrustedProxies)
		if err := l.allow(addr, s.Now()); err != nil {
			return 0, err
		}
	}
	raw, err := admission.ReadBody(w, r, s.MaxBody)
	if err != nil {
		return 0, err
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = []byte("{}") // wallet_kit_config and wallet_kit_client_params arrive without a body
	}
	out, err := handle(ctx, &call{s: s, cfg: cfg}, raw)
	if err != nil {
		return 0, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return 0, apierr.Internalf(err, "encoding the %s answer", op)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
	return http.StatusOK, nil
}

// setCORS answers browsers: the origin is echoed (the allowed-origins check is made by the
// server on every request, not left to the browser), with the SDK's headers allowed. No
// credentials (cookies) are involved.
func setCORS(h http.Header, origin string) {
	if origin == "" {
		origin = "*"
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", allowHeaders)
	h.Set("Access-Control-Expose-Headers", "X-Request-Id")
	h.Set("Access-Control-Max-Age", "600")
}

// cleanPath collapses repeated slashes (a base URL ending in "/" yields "//v1/...").
func cleanPath(p string) string {
	for strings.Contains(p, "//") {
		p = strings.ReplaceAll(p, "//", "/")
	}
	return p
}

// Operation names a proxy request path's operation for metrics and the access log: the
// operation under /v1/ when the proxy serves it, "unknown" otherwise.
func Operation(path string) string {
	op, ok := strings.CutPrefix(strings.TrimSuffix(cleanPath(path), "/"), "/v1/")
	if !ok {
		return "unknown"
	}
	if _, served := (&Server{}).routes()[op]; !served {
		return "unknown"
	}
	return op
}
