package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/clientaddr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/store"
)

//go:embed assets
var assetsFS embed.FS

// ProxyConfigs is what the proxy settings page needs of authproxy.Manager.
type ProxyConfigs interface {
	Get(ctx context.Context, orgID string) (*authproxy.Config, error)
	Enable(ctx context.Context, orgID string, s authproxy.Settings) (*authproxy.Config, error)
	Update(ctx context.Context, orgID string, s authproxy.Settings) (*authproxy.Config, error)
	Disable(ctx context.Context, orgID string) (*authproxy.Config, error)
}

// Server serves the dashboard.
type Server struct {
	Store store.Store
	Proxy ProxyConfigs
	Keys  func() any // the server's public keys now (what /.well-known/latchkey.json shows)
	// Keyring reports the keyring: master key id, seal, data key versions and the sealed values
	// each still seals (the keys page; a scan of the store).
	Keyring func(ctx context.Context) (custody.KeyringStatus, error)
	Version string
	Log     *slog.Logger
	Now     func() time.Time
	// SessionTTL defaults to 12 hours.
	SessionTTL time.Duration
	// MaxFailuresPerEmail and MaxFailuresPerAddress bound failed sign-ins per e-mail address
	// and per client address in 15 minutes; MaxChecks bounds the password checks running at
	// once in this process (an excess sign-in is answered 429 at once). Zero: the defaults.
	MaxFailuresPerEmail, MaxFailuresPerAddress, MaxChecks int
	// TrustedProxies are the peers whose X-Forwarded-For names the client (package clientaddr).
	TrustedProxies []netip.Prefix
	// Requests counts the requests of the listeners wrapped with Observe (the API's, under
	// latchkey serve) for the request charts and the health page.
	Requests Requests
	// OrgRequests counts the same requests per organization (the last hour of the most
	// recently served organizations).
	OrgRequests OrgRequests
	// Health is what the health page shows of the process (latchkey serve fills it in).
	Health Health

	started time.Time
	tmpl    *template.Template
	checks  chan struct{} // password checks running (a semaphore of MaxChecks)
	// checked counts the password checks made (PasswordChecks).
	checked atomic.Int64
	// beforeCheck, when set (tests), runs before each password hash.
	beforeCheck func()
}

// PasswordChecks is how many argon2id password checks this process has made.
func (s *Server) PasswordChecks() int64 { return s.checked.Load() }

type opSession struct {
	operator string
	csrf     string
	expires  time.Time
}

const (
	cookieName    = "latchkey_dash"
	failureWindow = 15 * time.Minute
	pageSize      = 50
	// maxPageBytes bounds the stored JSON the failed feed reads for one page, beside pageSize:
	// it shows each failure's message, which only the activity's JSON holds. A page ends
	// before the activity that would take it over (it always shows one), and "Older" goes on
	// from there. Fifty ordinary failed activities (2 to 5 KB) are far below it.
	maxPageBytes = 4 << 20
	// maxTableBytes bounds the stored JSON each table of an organization's page reads (its
	// users, wallets, accounts, private keys, policies, tags), beside its count.
	maxTableBytes  = 1 << 20
	maxFormBytes   = 64 << 10
	defaultSession = 12 * time.Hour
)

// Handler returns the dashboard's HTTP handler.
func (s *Server) Handler() http.Handler {
	if s.Now == nil {
		s.Now = func() time.Time { return time.Now().UTC() }
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
	if s.SessionTTL <= 0 {
		s.SessionTTL = defaultSession
	}
	if s.MaxFailuresPerEmail <= 0 {
		s.MaxFailuresPerEmail = DefaultMaxFailuresPerEmail
	}
	if s.MaxFailuresPerAddress <= 0 {
		s.MaxFailuresPerAddress = DefaultMaxFailuresPerAddress
	}
	if s.MaxChecks <= 0 {
		s.MaxChecks = DefaultMaxChecks
	}
	s.checks = make(chan struct{}, s.MaxChecks)
	s.started = s.Now()
	s.tmpl = template.Must(template.New("").Funcs(funcs).ParseFS(assetsFS, "assets/*.html"))
	mux := http.NewServeMux()
	static, _ := fs.Sub(assetsFS, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.auth(s.logout))
	mux.HandleFunc("GET /{$}", s.auth(s.overview))
	mux.HandleFunc("GET /orgs", s.auth(s.orgs))
	mux.HandleFunc("GET /orgs/{id}", s.auth(s.org))
	mux.HandleFunc("GET /orgs/{id}/activities", s.auth(s.activities))
	mux.HandleFunc("GET /activities/{id}", s.auth(s.activity))
	mux.HandleFunc("GET /orgs/{id}/proxy", s.auth(s.proxyPage))
	mux.HandleFunc("POST /orgs/{id}/proxy", s.auth(s.proxySave))
	mux.HandleFunc("GET /charts", s.auth(s.charts))
	mux.HandleFunc("GET /failed", s.auth(s.failed))
	mux.HandleFunc("GET /keys", s.auth(s.keys))
	mux.HandleFunc("GET /health", s.auth(s.health))
	// Anything else is the dashboard's own 404 page (with the menu when signed in).
	mux.HandleFunc("/", s.notFound)
	mux.HandleFunc("GET /audit", s.auth(s.audit))
	mux.HandleFunc("GET /audit/export", s.auth(s.auditExport))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setPageHeaders(w.Header())
		mux.ServeHTTP(w, r)
	})
}

type ctxKey struct{}

// auth requires a live session; for POSTs, also the session's CSRF token.
func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.session(r)
		if sess == nil {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil ||
				subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(sess.csrf)) != 1 {
				s.fail(
					w,
					r,
					http.StatusForbidden,
					"The form's security token is missing or wrong. Reload the page and try again.",
				)
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, sess)))
	}
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if sess := s.session(r); sess != nil {
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, sess))
	}
	s.fail(w, r, http.StatusNotFound, "There is no page at this address.")
}

func current(r *http.Request) *opSession {
	sess, _ := r.Context().Value(ctxKey{}).(*opSession)
	return sess
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) clientIP(r *http.Request) string {
	addr, ok := clientaddr.From(r, s.TrustedProxies)
	if !ok {
		return "unknown"
	}
	return addr.String()
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", map[string]any{"Title": "Sign in"})
}

// login checks an operator's password. In order, each refusal before the hash costs nothing:
// a process already running MaxChecks password checks answers 429 at once; the attempt is then
// reserved in the store for the e-mail and the client address (429 when either has used up
// its failures in the window); only then is the argon2id hash computed. A success takes both
// reservations back: only failures count.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.render(
			w,
			r,
			http.StatusBadRequest,
			"login",
			map[string]any{"Title": "Sign in", "Error": "The form could not be read."},
		)
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	ip := s.clientIP(r)
	busy := func(msg string) {
		w.Header().Set("Retry-After", "60")
		s.render(
			w,
			r,
			http.StatusTooManyRequests,
			"login",
			map[string]any{"Title": "Sign in", "Email": email, "Error": msg},
		)
	}
	select {
	case s.checks <- struct{}{}:
		defer func() { <-s.checks }()
	default:
		busy("Too many sign-ins at once. Try again in a minute.")
		return
	}
	emailKey := "email:" + email
	if err := s.reserve(r.Context(), []limit{{emailKey, s.MaxFailuresPerEmail}, {"ip:" + ip, s.MaxFailuresPerAddress}}); err != nil {
		if errors.Is(err, errLocked) {
			s.record(r, Audit{Operator: email, Action: "sign-in locked out", Target: ip, At: s.Now()})
			busy("Too many failed sign-ins. Wait 15 minutes and try again.")
			return
		}
		s.Log.Error("dashboard: reserving a sign-in attempt", "err", err)
		s.render(
			w,
			r,
			http.StatusServiceUnavailable,
			"login",
			map[string]any{"Title": "Sign in", "Email": email, "Error": "Sign-in is unavailable; try again."},
		)
		return
	}
	o, err := findOperator(r.Context(), s.Store, email)
	hash := dummyHash
	if err == nil {
		hash = o.Hash
	}
	s.checked.Add(1)
	if s.beforeCheck != nil {
		s.beforeCheck()
	}
	if !checkPassword(hash, r.PostFormValue("password")) || err != nil {
		s.record(r, Audit{Operator: email, Action: "sign-in failed", Target: ip, At: s.Now()})
		s.render(
			w,
			r,
			http.StatusUnauthorized,
			"login",
			map[string]any{"Title": "Sign in", "Email": email, "Error": "Wrong e-mail or password."},
		)
		return
	}
	s.release(r.Context(), emailKey)
	s.release(r.Context(), "ip:"+ip)
	token, err := s.newSession(r.Context(), o.Email)
	if err != nil {
		s.Log.Error("dashboard: storing a session", "err", err)
		s.render(
			w,
			r,
			http.StatusServiceUnavailable,
			"login",
			map[string]any{"Title": "Sign in", "Email": email, "Error": "Sign-in is unavailable; try again."},
		)
		return
	}
	http.SetCookie(
		w,
		&http.Cookie{Name: cookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
			Secure: r.TLS != nil, MaxAge: int(s.SessionTTL.Seconds())},
	)
	s.record(r, Audit{Operator: o.Email, Action: "sign-in", Target: ip, At: s.Now()})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	s.endSession(r)
	s.record(r, Audit{Operator: current(r).operator, Action: "sign-out", Target: s.clientIP(r), At: s.Now()})
	http.SetCookie(
		w,
		&http.Cookie{
			Name:     cookieName,
			Value:    "",
			Path:     "/",
			HttpOnly: true,
			SameSite: http.SameSiteStrictMode,
			MaxAge:   -1,
		},
	)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// record writes the audit record of a sign-in or sign-out; failing to is logged, not shown (the operator's action
// already happened). Changes to settings are audited before they are answered (proxySave).
func (s *Server) record(r *http.Request, a Audit) {
	if err := writeAudit(r.Context(), s.Store, a); err != nil {
		s.Log.Error("dashboard: writing the audit record", "action", a.Action, "err", err)
	}
}

// render executes a page inside the layout.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page string, data map[string]any) {
	if sess := current(r); sess != nil {
		data["Operator"], data["CSRF"] = sess.operator, sess.csrf
	}
	data["Page"], data["Version"] = page, s.Version
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, page, data); err != nil {
		s.Log.Error("dashboard: rendering", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", map[string]any{"Title": http.StatusText(status), "Message": msg})
}

// failErr renders a store or API error: not found as 404, invalid input as 400, the rest 500.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	e := apierr.From(err)
	switch {
	case errors.Is(err, store.ErrNotFound) || e.Code == apierr.NotFound:
		s.fail(w, r, http.StatusNotFound, "Not found.")
	case e.Code == apierr.InvalidArgument:
		s.fail(w, r, http.StatusBadRequest, e.Message)
	default:
		s.Log.Error("dashboard", "path", r.URL.Path, "err", err)
		s.fail(w, r, http.StatusInternalServerError, "Something went wrong; the server log has the details.")
	}
}

// Operation names a dashboard request path's page for metrics and the access log: the first
// path segment when it is one of the dashboard's pages, "unknown" otherwise.
func Operation(path string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	switch first {
	case "":
		return "overview"
	case "assets", "login", "logout", "orgs", "activities", "keys", "health", "audit", "charts", "failed":
		return first
	}
	return "unknown"
}
