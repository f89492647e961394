package frames

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed pages/*.html assets/*
var files embed.FS

// Paths of the pages. Each is also served with a trailing slash; neither form redirects.
const (
	ExportPath = "/export"
	ImportPath = "/import"
	AuthPath   = "/auth"
	assetsDir  = "/assets/"
)

// OrgParam is the query parameter naming the organization whose auth proxy's allowed origins
// may frame the page (docs/frames.md, "Who may frame the pages").
const OrgParam = "organizationId"

// MaxAncestors bounds --frames-ancestors (the auth proxy allows as many origins).
const MaxAncestors = 64

// Handler serves the frame pages and their assets.
type Handler struct {
	// SignerKeys returns the signer public keys the pages trust now, uncompressed lowercase hex
	// (custody.ServerKeys.VerifyKeys of the signer key).
	SignerKeys func() []string
	// Ancestors are the origins that may always frame the pages (--frames-ancestors, as
	// CheckAncestors returns it): exact origins, or "*" alone.
	Ancestors []string
	// OrgOrigins returns the allowed origins of an organization's auth proxy ("*" for any), or
	// none when it has no enabled proxy. Nil: ?organizationId= adds nothing.
	OrgOrigins func(ctx context.Context, orgID string) ([]string, error)
	// Dev frames the pages from anywhere when no origin is configured (serve --dev).
	Dev bool
	Log *slog.Logger
}

type page struct {
	name string
	tmpl *template.Template
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

var (
	pages  = map[string]*page{}
	assets = map[string]*asset{}
)

func init() {
	for _, name := range []string{"export", "import", "auth"} {
		t := template.Must(template.ParseFS(files, "pages/"+name+".html"))
		p := &page{name: name, tmpl: t}
		pages["/"+name], pages["/"+name+"/"] = p, p
	}
	entries, err := fs.ReadDir(files, "assets")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := files.ReadFile("assets/" + e.Name())
		if err != nil {
			panic(err)
		}
		var ctype string
		switch path.Ext(e.Name()) {
		case ".mjs", ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		default:
			panic("frames: an asset of unknown type: " + e.Name())
		}
		sum := sha256.Sum256(b)
		assets[e.Name()] = &asset{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	}
}

// Operation names a request's path for metrics and the access log: export, import, auth,
// asset, or unknown.
func Operation(p string) string {
	if pg, ok := pages[p]; ok {
		return pg.name
	}
	if name, ok := strings.CutPrefix(p, assetsDir); ok && assets[name] != nil {
		return "asset"
	}
	return "unknown"
}

// baseCSP is the policy of every answer but its frame-ancestors: the pages load their own
// scripts and styles only, connect nowhere, and inject no HTML (Trusted Types, no policy).
const baseCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'none'; base-uri 'none'; form-action 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'; frame-ancestors "

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "the frames answer GET and HEAD only")
		return
	}
	if pg, ok := pages[r.URL.Path]; ok {
		h.page(w, r, pg)
		return
	}
	if name, ok := strings.CutPrefix(r.URL.Path, assetsDir); ok {
		if a := assets[name]; a != nil {
			hd.Set("Content-Security-Policy", baseCSP+"'none'")
			hd.Set("Content-Type", a.ctype)
			hd.Set("Cache-Control", "no-cache")
			hd.Set("Cross-Origin-Resource-Policy", "same-origin")
			hd.Set("ETag", a.etag)
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
			return
		}
	}
	plain(w, http.StatusNotFound, "not found: the frames are "+ExportPath+", "+ImportPath+" and "+AuthPath)
}

func plain(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Security-Policy", baseCSP+"'none'")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request, pg *page) {
	ancestors := h.ancestors(r)
	var keys []string
	if h.SignerKeys != nil {
		for _, k := range h.SignerKeys() {
			if signerKeyRE.MatchString(k) {
				keys = append(keys, k)
			}
		}
	}
	var buf bytes.Buffer
	err := pg.tmpl.Execute(&buf, struct{ SignerKeys, Ancestors string }{
		SignerKeys: strings.Join(keys, " "),
		Ancestors:  strings.Join(parentOrigins(ancestors), " "),
	})
	if err != nil {
		h.log().Error("frames: rendering a page failed", "page", pg.name, "err", err)
		plain(w, http.StatusInternalServerError, "the page could not be rendered")
		return
	}
	fa := "'none'"
	if len(ancestors) > 0 {
		fa = strings.Join(ancestors, " ")
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", baseCSP+fa)
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

// ancestors is the frame-ancestors list of a page request: the configured origins, those of
// the organization the URL names, "*" alone when either allows any, and in development mode
// "*" when nothing is configured. Empty means 'none'.
func (h *Handler) ancestors(r *http.Request) []string {
	out := slices.Clone(h.Ancestors)
	if ids := r.URL.Query()[OrgParam]; len(ids) == 1 && orgIDRE.MatchString(ids[0]) && h.OrgOrigins != nil {
		origins, err := h.OrgOrigins(r.Context(), ids[0])
		if err != nil {
			// Fail closed: the organization's origins are left out.
			h.log().Warn("frames: reading the organization's allowed origins failed", "err", err)
		}
		for _, o := range origins {
			if o == "*" {
				out = append(out, o)
			} else if c, err := canonicalOrigin(o); err == nil && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	if slices.Contains(out, "*") || (len(out) == 0 && h.Dev) {
		return []string{"*"}
	}
	return out
}

var (
	signerKeyRE = regexp.MustCompile(`^04[0-9a-f]{128}$`)
	// Organization ids are UUIDs; anything not shaped like an id is not looked up.
	orgIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	// An origin a Content-Security-Policy can name: scheme, DNS name or IPv4 address, port.
	originRE = regexp.MustCompile(`^(https?)://([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}` +
		`[a-z0-9])?)*)(?::([0-9]{1,5}))?$`)
)

// canonicalOrigin checks an origin and returns it in lower case without a trailing slash.
func canonicalOrigin(o string) (string, error) {
	c := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/"))
	m := originRE.FindStringSubmatch(c)
	if m == nil {
		return "", fmt.Errorf("%q is not an origin (http(s)://host[:port], a DNS name or IPv4 address, no path)", o)
	}
	if m[3] != "" {
		if n, err := strconv.Atoi(m[3]); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: the port is out of range", o)
		}
	}
	return c, nil
}

// parentOrigins are the origins a page accepts the init message from, as a browser writes
// MessageEvent.origin (without the scheme's default port); "*" for any, 'none' for none.
func parentOrigins(ancestors []string) []string {
	if len(ancestors) == 0 {
		return []string{"'none'"}
	}
	out := make([]string, 0, len(ancestors))
	for _, a := range ancestors {
		if strings.HasPrefix(a, "https://") {
			a = strings.TrimSuffix(a, ":443")
		} else if strings.HasPrefix(a, "http://") {
			a = strings.TrimSuffix(a, ":80")
		}
		out = append(out, a)
	}
	return out
}

// CheckAncestors checks --frames-ancestors and returns it canonical: exact origins, or "*"
// alone (any origin may frame the pages).
func CheckAncestors(list []string) ([]string, error) {
	if len(list) > MaxAncestors {
		return nil, fmt.Errorf("at most %d origins", MaxAncestors)
	}
	var out []string
	for _, o := range list {
		if strings.TrimSpace(o) == "*" {
			if len(list) > 1 {
				return nil, errors.New(`"*" allows every origin and cannot be combined with others`)
			}
			return []string{"*"}, nil
		}
		c, err := canonicalOrigin(o)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}
