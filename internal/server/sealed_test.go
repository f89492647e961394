package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/store"
)

// newShamirDeployment makes a --seal shamir deployment (3 shares, any 2) and returns it sealed
// (not listening: its handlers are called directly) with its shares.
func newShamirDeployment(t *testing.T) (*Sealed, []string) {
	t.Helper()
	dir := t.TempDir()
	var shares []string
	s, err := Open(
		context.Background(),
		Config{
			DataDir:      dir,
			Seal:         custody.SealShamir,
			KeyShares:    3,
			KeyThreshold: 2,
			Log:          slog.New(slog.DiscardHandler),
			NewShares: func(sh *custody.Shares) error {
				for i := range sh.Len() {
					shares = append(shares, string(sh.Text(i)))
				}
				return nil
			},
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	z, err := OpenSealed(
		context.Background(),
		Config{DataDir: dir, MustExist: true, Seal: custody.SealShamir, Log: slog.New(slog.DiscardHandler)},
	)
	if err != nil {
		t.Fatal(err)
	}
	z.drain = 5 * time.Second
	t.Cleanup(func() { z.mu.Lock(); z.sealLocked(); z.mu.Unlock() })
	return z, shares
}

func sealedCall(h http.Handler, method, path, remote, body string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// Wrong shares are limited per client address: after unsealFailures in the window, even a good
// share from that address waits (429); another address is not held up. reset forgets the
// shares given.
func TestUnsealRateLimitAndReset(t *testing.T) {
	z, shares := newShamirDeployment(t)
	h := z.front("api")
	other, _ := custody.NewMasterKey()
	_, wrong, _ := custody.SplitMasterKey(other, 3, 2)
	for range unsealFailures {
		if w := sealedCall(h, "PUT", UnsealPath, "192.0.2.7:1000", `{"key":"`+string(wrong.Text(0))+`"}`); w.Code != http.StatusBadRequest ||
			!strings.Contains(w.Body.String(), "share 1: it belongs to another split") {
			t.Fatalf("a wrong share: %d %s", w.Code, w.Body)
		}
	}
	if w := sealedCall(h, "PUT", UnsealPath, "192.0.2.7:1000", `{"key":"`+shares[0]+`"}`); w.Code != http.StatusTooManyRequests ||
		!strings.Contains(w.Body.String(), "too many wrong unseal shares") {
		t.Fatalf("after %d wrong shares: %d %s", unsealFailures, w.Code, w.Body)
	}
	if w := sealedCall(h, "PUT", UnsealPath, "192.0.2.8:1000", `{"key":"`+shares[0]+`"}`); w.Code != http.StatusOK ||
		!strings.Contains(w.Body.String(), `"progress":1`) {
		t.Fatalf("another address: %d %s", w.Code, w.Body)
	}
	if w := sealedCall(h, "POST", "/public/v1/query/whoami", "192.0.2.8:1000", `{}`); w.Code != http.StatusServiceUnavailable ||
		w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("a sealed answer to a browser: %d %v", w.Code, w.Header())
	}
	if w := sealedCall(h, "OPTIONS", "/public/v1/query/whoami", "192.0.2.8:1000", ``); w.Code != http.StatusNoContent ||
		w.Header().Get("Access-Control-Allow-Headers") == "" {
		t.Fatalf("a sealed preflight: %d %v", w.Code, w.Header())
	}
	if w := sealedCall(h, "PUT", UnsealPath, "192.0.2.8:1000", `{"reset":true}`); w.Code != http.StatusOK ||
		!strings.Contains(w.Body.String(), `"progress":0`) {
		t.Fatalf("reset: %d %s", w.Code, w.Body)
	}
	for _, c := range []struct{ method, body, want string }{
		{"GET", "", "takes PUT or POST"},
		{"PUT", `{"key":1}`, "key is required"},
		{"PUT", `{`, "body:"},
		{"PUT", `{"key":"` + strings.Repeat("a", 5000) + `"}`, "body:"},
	} {
		if w := sealedCall(h, c.method, UnsealPath, "192.0.2.9:1", c.body); w.Code != http.StatusBadRequest ||
			!strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s %.20s: %d %s", c.method, c.body, w.Code, w.Body)
		}
	}
}

// The dashboard's sealed sign-in page takes shares from a same-origin form; once unsealed,
// the dashboard itself answers.
func TestDashboardUnsealForm(t *testing.T) {
	z, shares := newShamirDeployment(t)
	h := z.front("dashboard")
	form := func(share string, origin string) *httptest.ResponseRecorder {
		return sealedCall(
			h,
			"POST",
			"/unseal",
			"192.0.2.1:5",
			url.Values{"share": {share}}.Encode(),
			"Content-Type",
			"application/x-www-form-urlencoded",
			"Origin",
			origin,
		)
	}
	if w := form(shares[0], "https://evil.example"); w.Code != http.StatusServiceUnavailable ||
		!strings.Contains(w.Body.String(), "must be sent from this page") ||
		z.Status().Progress != 0 {
		t.Fatalf("a cross-origin form: %d %s", w.Code, w.Body)
	}
	if w := form(shares[0], "http://example.com"); w.Code != http.StatusServiceUnavailable ||
		!strings.Contains(w.Body.String(), "Share accepted") ||
		!strings.Contains(w.Body.String(), "Sealed: 1 of the 2") {
		t.Fatalf("the first share: %d %s", w.Code, w.Body)
	}
	if w := form("not a share", "http://example.com"); !strings.Contains(w.Body.String(), "not an unseal share") ||
		strings.Contains(w.Body.String(), "not a share") {
		t.Fatalf("garbage: %d %s", w.Code, w.Body)
	}
	form(shares[1], "http://example.com")
	if w := form(shares[2], "http://example.com"); w.Code != http.StatusSeeOther || z.Server() == nil {
		t.Fatalf("the last share: %d %s", w.Code, w.Body)
	}
	if w := sealedCall(h, "GET", "/login", "192.0.2.1:5", ""); w.Code != http.StatusOK ||
		!strings.Contains(w.Body.String(), "Operator sign-in") {
		t.Fatalf("the unsealed dashboard: %d %s", w.Code, w.Body)
	}
}

// Sealing waits for the requests in flight: the store stays open until they finish, new
// requests meanwhile answer sealed, and the master key is wiped after.
func TestSealDrainsInFlight(t *testing.T) {
	z, shares := newShamirDeployment(t)
	h := z.front("api")
	for _, s := range shares[:2] {
		sealedCall(h, "PUT", UnsealPath, "192.0.2.1:5", `{"key":"`+s+`"}`)
	}
	l := z.live.Load()
	if l == nil || !l.enter() {
		t.Fatal("not unsealed")
	}
	srv := l.srv
	done := make(chan struct{})
	go func() { z.Seal(context.Background(), "test", ""); close(done) }()
	for z.live.Load() != nil {
		time.Sleep(time.Millisecond)
	}
	if w := sealedCall(h, "POST", "/public/v1/query/whoami", "192.0.2.1:5", `{}`); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("a new request while sealing: %d", w.Code)
	}
	select {
	case <-done:
		t.Fatal("sealed with a request in flight")
	case <-time.After(50 * time.Millisecond):
	}
	if err := srv.Store.View(context.Background(), func(store.Reader) error { return nil }); err != nil {
		t.Fatalf("the store closed under a request in flight: %v", err)
	}
	l.leave()
	<-done
	if _, err := srv.Keyring.Seal([]byte("x"), custody.Binding{}); err == nil {
		t.Fatal("the keyring still seals after Seal")
	}
	if w := sealedCall(h, "GET", SealStatusPath, "192.0.2.1:5", ""); !strings.Contains(
		w.Body.String(),
		`"sealed":true`,
	) {
		t.Fatalf("status: %s", w.Body)
	}
}
