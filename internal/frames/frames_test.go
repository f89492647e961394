package frames_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/frames"
)

var (
	keyA = "04" + strings.Repeat("a1", 64)
	keyB = "04" + strings.Repeat("b2", 64)
)

const wantBaseCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'none'; base-uri 'none'; form-action 'none'; require-trusted-types-for 'script'; " +
	"trusted-types 'none'; frame-ancestors "

func get(t *testing.T, h http.Handler, method, target string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// The three pages are served at their paths, with and without a trailing slash and with a
// query, directly (no redirect), with the headers a framed page needs and no X-Frame-Options.
func TestPagesAndHeaders(t *testing.T) {
	h := &frames.Handler{SignerKeys: func() []string { return []string{keyA} }}
	for _, p := range []string{"/export", "/import", "/auth", "/export/", "/import/", "/auth/", "/export?x=1"} {
		res, body := get(t, h, http.MethodGet, p)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, res.StatusCode, body)
		}
		hd := res.Header
		for k, v := range map[string]string{
			"Content-Type":            "text/html; charset=utf-8",
			"Cache-Control":           "no-store",
			"Referrer-Policy":         "no-referrer",
			"X-Content-Type-Options":  "nosniff",
			"Content-Security-Policy": wantBaseCSP + "'none'",
		} {
			if hd.Get(k) != v {
				t.Fatalf("GET %s: %s = %q, want %q", p, k, hd.Get(k), v)
			}
		}
		if hd.Get("X-Frame-Options") != "" || hd.Get("Location") != "" {
			t.Fatalf("GET %s: X-Frame-Options %q, Location %q", p, hd.Get("X-Frame-Options"), hd.Get("Location"))
		}
		name := strings.Trim(strings.Split(p, "?")[0], "/")
		if !strings.Contains(body, `<script type="module" src="/assets/`+name+`-page.mjs"></script>`) {
			t.Fatalf("GET %s: the page's script is missing:\n%s", p, body)
		}
		if !strings.Contains(body, `<meta name="latchkey-signer-keys" content="`+keyA+`">`) {
			t.Fatalf("GET %s: the signer key is not in the page:\n%s", p, body)
		}
		if got := frames.Operation(strings.Split(p, "?")[0]); got != name {
			t.Fatalf("Operation(%s) = %q", p, got)
		}
	}
	res, body := get(t, h, http.MethodHead, "/export")
	if res.StatusCode != http.StatusOK || body != "" || res.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("HEAD: %d %q", res.StatusCode, body)
	}
}

// No inline script, no inline style, no script or style from elsewhere: what CSP 'self' needs.
func TestPagesHaveNothingInline(t *testing.T) {
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>[^<]|\sstyle\s*=|<style|\son[a-z]+\s*=|javascript:`)
	external := regexp.MustCompile(`(?i)(?:src|href)\s*=\s*"(?:https?:)?//`)
	h := &frames.Handler{}
	for _, p := range []string{"/export", "/import", "/auth"} {
		_, body := get(t, h, http.MethodGet, p)
		if m := inline.FindString(body); m != "" {
			t.Fatalf("%s has inline script or style: %q", p, m)
		}
		if m := external.FindString(body); m != "" {
			t.Fatalf("%s loads from elsewhere: %q", p, m)
		}
	}
	// The scripts never write HTML (Trusted Types would refuse it anyway) nor navigate.
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|` +
		`location\.(?:href|assign|replace|reload)|\.submit\(|setAttribute\(\s*["']style|fetch\(|XMLHttpRequest`)
	entries, _ := os.ReadDir("assets")
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join("assets", e.Name()))
		if m := sinks.FindString(string(b)); m != "" {
			t.Fatalf("assets/%s uses %q", e.Name(), m)
		}
	}
}

// Every asset is served with its type and a validator; every page's script and every module a
// script imports is an asset (a missing one would break the page in the browser only).
func TestAssets(t *testing.T) {
	h := &frames.Handler{}
	entries, err := os.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	importRE := regexp.MustCompile(`(?m)^\s*(?:import|export)\s[^;]*?from\s+"\./([^"]+)"`)
	for _, e := range entries {
		served[e.Name()] = true
	}
	for _, e := range entries {
		res, body := get(t, h, http.MethodGet, "/assets/"+e.Name())
		want := "text/javascript; charset=utf-8"
		if strings.HasSuffix(e.Name(), ".css") {
			want = "text/css; charset=utf-8"
		}
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != want || body == "" ||
			res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("ETag") == "" {
			t.Fatalf("GET /assets/%s: %d %v", e.Name(), res.StatusCode, res.Header)
		}
		if frames.Operation("/assets/"+e.Name()) != "asset" {
			t.Fatalf("Operation of /assets/%s", e.Name())
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/assets/"+e.Name(), nil)
		req.Header.Set("If-None-Match", res.Header.Get("ETag"))
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified {
			t.Fatalf("a revalidation of %s: %d", e.Name(), rec.Code)
		}
		for _, m := range importRE.FindAllStringSubmatch(body, -1) {
			if !served[m[1]] {
				t.Fatalf("assets/%s imports %s, which is not served", e.Name(), m[1])
			}
		}
	}
	for _, p := range []string{"/export", "/import", "/auth"} {
		_, body := get(t, h, http.MethodGet, p)
		for _, m := range regexp.MustCompile(`(?:src|href)="/assets/([^"]+)"`).FindAllStringSubmatch(body, -1) {
			if !served[m[1]] {
				t.Fatalf("%s refers to /assets/%s, which is not served", p, m[1])
			}
		}
	}
}

// Only GET and HEAD; unknown paths are 404 and nothing redirects, even a path net/http's mux
// would clean.
func TestMethodsPathsAndNoRedirects(t *testing.T) {
	h := &frames.Handler{}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
		res, _ := get(t, h, m, "/export")
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
			t.Fatalf("%s /export: %d, Allow %q", m, res.StatusCode, res.Header.Get("Allow"))
		}
	}
	for _, p := range []string{"/", "/exports", "/assets/", "/assets/../export", "//export", "/export//",
		"/assets/nope.mjs", "/pages/export.html", "/assets/./export.mjs", "/EXPORT", "/export/index.html"} {
		res, _ := get(t, h, http.MethodGet, p)
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Location") != "" {
			t.Fatalf("GET %s: %d (Location %q), want 404", p, res.StatusCode, res.Header.Get("Location"))
		}
		if frames.Operation(p) != "unknown" {
			t.Fatalf("Operation(%s) = %q", p, frames.Operation(p))
		}
	}
}

// frame-ancestors: --frames-ancestors, plus the auth proxy's origins of the organization the URL
// names; nothing configured is 'none', or * in development mode.
func TestFrameAncestors(t *testing.T) {
	const org = "3f1b7a52-9c1e-4d0a-8f7e-2a6c5b4d3e21"
	looked := []string{}
	orgOrigins := func(_ context.Context, id string) ([]string, error) {
		looked = append(looked, id)
		switch id {
		case org:
			return []string{"https://shop.example", "http://localhost:3000", "http://[::1]:3000"}, nil
		case "open":
			return []string{"*"}, nil
		case "broken":
			return nil, errors.New("the store is down")
		}
		return nil, nil
	}
	cases := []struct {
		name      string
		ancestors []string
		dev       bool
		target    string
		want      string // frame-ancestors
		parents   string // the page's meta
	}{
		{"nothing configured", nil, false, "/export", "'none'", "&#39;none&#39;"},
		{"development mode", nil, true, "/export", "*", "*"},
		{"configured", []string{"https://a.example", "https://b.example:8443"}, false, "/export",
			"https://a.example https://b.example:8443", "https://a.example https://b.example:8443"},
		{"configured, in development mode too", []string{"https://a.example"}, true, "/auth", "https://a.example",
			"https://a.example"},
		{"default ports as browsers write origins", []string{"https://a.example:443", "http://b.example:80"}, false,
			"/export", "https://a.example:443 http://b.example:80", "https://a.example http://b.example"},
		{"the organization's origins", []string{"https://a.example"}, false, "/import?organizationId=" + org,
			"https://a.example https://shop.example http://localhost:3000",
			"https://a.example https://shop.example http://localhost:3000"},
		{"the organization allows any", nil, false, "/import?organizationId=open", "*", "*"},
		{"an organization without a proxy", nil, false, "/export?organizationId=unknown", "'none'", "&#39;none&#39;"},
		{"a store error fails closed", []string{"https://a.example"}, false, "/export?organizationId=broken",
			"https://a.example", "https://a.example"},
		{"two organizations are none", nil, false, "/export?organizationId=open&organizationId=" + org, "'none'",
			"&#39;none&#39;"},
		{"not an id", nil, false, "/export?organizationId=" + strings.Repeat("x", 65), "'none'", "&#39;none&#39;"},
		{"not an id either", nil, false, "/export?organizationId=a%3Bb", "'none'", "&#39;none&#39;"},
		{"flag *", []string{"*"}, false, "/export", "*", "*"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			looked = looked[:0]
			h := &frames.Handler{Ancestors: c.ancestors, Dev: c.dev, OrgOrigins: orgOrigins}
			res, body := get(t, h, http.MethodGet, c.target)
			if got := res.Header.Get("Content-Security-Policy"); got != wantBaseCSP+c.want {
				t.Fatalf("CSP %q, want frame-ancestors %s", got, c.want)
			}
			if !strings.Contains(body, `<meta name="latchkey-frame-ancestors" content="`+c.parents+`">`) {
				t.Fatalf("the page's parent origins, want %q:\n%s", c.parents, body)
			}
			if strings.Contains(c.name, "not an id") || strings.Contains(c.name, "two") {
				if len(looked) != 0 {
					t.Fatalf("looked up %v", looked)
				}
			}
		})
	}
}

// The page carries every key the server trusts now (a rotation's next or previous key too), and
// nothing that is not a signer key.
func TestSignerKeysTemplated(t *testing.T) {
	keys := []string{keyA}
	h := &frames.Handler{SignerKeys: func() []string { return keys }}
	_, body := get(t, h, http.MethodGet, "/import")
	if !strings.Contains(body, `content="`+keyA+`"`) {
		t.Fatal(body)
	}
	keys = []string{keyA, keyB, `"><script>alert(1)</script>`, strings.ToUpper(keyA)}
	_, body = get(t, h, http.MethodGet, "/import")
	if !strings.Contains(body, `<meta name="latchkey-signer-keys" content="`+keyA+" "+keyB+`">`) {
		t.Fatal(body)
	}
	if strings.Contains(body, "alert") {
		t.Fatal("a malformed key reached the page")
	}
}

func TestCheckAncestors(t *testing.T) {
	got, err := frames.CheckAncestors([]string{"https://App.Example/", "http://localhost:3000", "https://app.example"})
	if err != nil || !slices.Equal(got, []string{"https://app.example", "http://localhost:3000"}) {
		t.Fatalf("%v %v", got, err)
	}
	if got, err := frames.CheckAncestors([]string{"*"}); err != nil || !slices.Equal(got, []string{"*"}) {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range [][]string{
		{"*", "https://a.example"}, {"https://a.example/path"}, {"ftp://a.example"}, {"a.example"},
		{"https://*.example.com"}, {"https://a.example;script-src *"}, {"https://a.example:99999"},
		{"https://a.example https://b.example"}, {"'self'"}, {"https://[::1]:3000"},
	} {
		if _, err := frames.CheckAncestors(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	many := make([]string, frames.MaxAncestors+1)
	for i := range many {
		many[i] = "https://a.example"
	}
	if _, err := frames.CheckAncestors(many); err == nil {
		t.Fatal("too many accepted")
	}
}
