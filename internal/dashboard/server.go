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
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/authproxy"
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
	Store   store.Store
	Proxy   ProxyConfigs
	Keys    any // the server's public keys (what /.well-known/latchkey.json shows)
	Version string
	Log     *slog.Logger
	Now     func() time.Time
	// SessionTTL defaults to 12 hours.
	SessionTTL time.Duration

	started  time.Time
	tmpl     *template.Template
	mu       sync.Mutex
	sessions map[string]*opSession
	failures map[string][]time.Time
}

type opSession struct {
	operator string
	csrf     string
	expires  time.Time
}

const (
	cookieName     = "latchkey_dash"
	maxFailures    = 5
	failureWindow  = 15 * time.Minute
	pageSize       = 50
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
	s.started = s.Now()
	s.sessions, s.failures = map[string]*opSession{}, map[string][]time.Time{}
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
	mux.HandleFunc("GET /keys", s.auth(s.keys))
	mux.HandleFunc("GET /health", s.auth(s.health))
	mux.HandleFunc("GET /audit", s.auth(s.audit))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
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
			if err := r.ParseForm(); err != nil || subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(sess.csrf)) != 1 {
				s.fail(w, r, http.StatusForbidden, "The form's security token is missing or wrong. Reload the page and try again.")
				return
			}
		}
		next(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, sess)))
	}
}

func (s *Server) session(r *http.Request) *opSession {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[c.Value]
	if sess == nil {
		return nil
	}
	if !s.Now().Before(sess.expires) {
		delete(s.sessions, c.Value)
		return nil
	}
	return sess
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

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limited reports whether key has used up its failed sign-ins.
func (s *Server) limited(keys ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cut := s.Now().Add(-failureWindow)
	for _, k := range keys {
		kept := s.failures[k][:0]
		for _, t := range s.failures[k] {
			if t.After(cut) {
				kept = append(kept, t)
			}
		}
		s.failures[k] = kept
		if len(kept) >= maxFailures {
			return true
		}
	}
	return false
}

func (s *Server) failed(keys ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.failures[k] = append(s.failures[k], s.Now())
	}
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", map[string]any{"Title": "Sign in"})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.render(w, r, http.StatusBadRequest, "login", map[string]any{"Title": "Sign in", "Error": "The form could not be read."})
		return
	}
	email := strings.ToLower(strings.TrimSpace(r.PostFormValue("email")))
	keys := []string{"email:" + email, "ip:" + clientIP(r)}
	if s.limited(keys...) {
		s.render(w, r, http.StatusTooManyRequests, "login", map[string]any{"Title": "Sign in", "Email": email,
			"Error": "Too many failed sign-ins. Wait 15 minutes and try again."})
		return
	}
	o, err := findOperator(r.Context(), s.Store, email)
	hash := dummyHash
	if err == nil {
		hash = o.Hash
	}
	if !checkPassword(hash, r.PostFormValue("password")) || err != nil {
		s.failed(keys...)
		s.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Title": "Sign in", "Email": email, "Error": "Wrong e-mail or password."})
		return
	}
	token := randomToken()
	s.mu.Lock()
	s.sessions[token] = &opSession{operator: o.Email, csrf: randomToken(), expires: s.Now().Add(s.SessionTTL)}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(s.SessionTTL.Seconds())})
	s.record(r, Audit{Operator: o.Email, Action: "sign-in", Target: clientIP(r), At: s.Now()})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
	}
	s.record(r, Audit{Operator: current(r).operator, Action: "sign-out", Target: clientIP(r), At: s.Now()})
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
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
