package dashboard

import (
	"bytes"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"sync"

	"github.com/latchkey/latchkey/internal/apierr"
)

// SealStatus is what the sealed sign-in page shows of a --seal shamir server.
type SealStatus struct {
	Sealed                      bool
	Threshold, Shares, Progress int
}

var (
	sealedOnce sync.Once
	sealedTmpl *template.Template
)

// SealedPage answers the dashboard's requests while the server is sealed: the sign-in page
// shows "sealed" with a share form, whose POST /unseal gives unseal one share (unauthenticated,
// as on the API: the share is the credential; only a same-origin form is taken). It reports
// false for any other request (the caller answers the sealed 503).
func SealedPage(
	w http.ResponseWriter,
	r *http.Request,
	st SealStatus,
	unseal func(*http.Request, []byte) (SealStatus, error),
) bool {
	sealedOnce.Do(func() {
		sealedTmpl = template.Must(template.New("").Funcs(funcs).ParseFS(assetsFS, "assets/*.html"))
	})
	h := w.Header()
	setPageHeaders(h)
	data := map[string]any{"Title": "Sealed", "Threshold": st.Threshold, "Shares": st.Shares, "Progress": st.Progress}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/assets/style.css":
		static, _ := fs.Sub(assetsFS, "assets")
		http.ServeFileFS(w, r, static, "style.css")
		return true
	case r.Method == http.MethodGet && (r.URL.Path == "/" || r.URL.Path == "/login"):
	case r.Method == http.MethodPost && r.URL.Path == "/unseal":
		if !sameOrigin(r) {
			data["Error"] = "The form must be sent from this page."
			break
		}
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<10))
		share := formValue(body, "share")
		next, err := unseal(r, share)
		clear(share)
		clear(body)
		data["Progress"] = next.Progress
		if err != nil {
			data["Error"] = apierr.From(err).Message
			break
		}
		if !next.Sealed {
			// Unsealed: the dashboard itself answers from now on.
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return true
		}
		data["Notice"] = "Share accepted."
	default:
		return false
	}
	var buf bytes.Buffer
	if err := sealedTmpl.ExecuteTemplate(&buf, "sealed", data); err != nil {
		return false
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(buf.Bytes())
	return true
}

// setPageHeaders are the headers of every dashboard page: no framing, no sniffing, no
// referrer, no caching, and resources from the dashboard itself only.
func setPageHeaders(h http.Header) {
	h.Set(
		"Content-Security-Policy",
		"default-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
	)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// sameOrigin accepts a form whose Origin (or, without one, Sec-Fetch-Site) says it came from
// this host.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && u.Host == r.Host
	}
	s := r.Header.Get("Sec-Fetch-Site")
	return s == "" || s == "same-origin"
}

// formValue is the value of name in a form-encoded body, in a new buffer the caller wipes
// ('+' is a space; a share has no other escapes, so a %-escape is left for the share parser to
// refuse).
func formValue(body []byte, name string) []byte {
	for part := range bytes.SplitSeq(body, []byte("&")) {
		k, v, ok := bytes.Cut(part, []byte("="))
		if ok && string(k) == name {
			out := bytes.ReplaceAll(v, []byte("+"), []byte(" "))
			return out
		}
	}
	return nil
}
