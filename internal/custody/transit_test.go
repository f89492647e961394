package custody

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// What a transit server answers is untrusted: anything but 32 bytes of plaintext, or an answer
// that is not the documented JSON, is refused without a panic; errors name the status and the
// server's errors, never the request.
func TestTransitUnwrapRefusesBadAnswers(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"64 bytes", `{"data":{"plaintext":"` + base64.StdEncoding.EncodeToString(make([]byte, 64)) + `"}}`, "not a master key"},
		{"31 bytes", `{"data":{"plaintext":"` + base64.StdEncoding.EncodeToString(make([]byte, 31)) + `"}}`, "not a master key"},
		{"not base64", `{"data":{"plaintext":"%%%"}}`, "unreadable answer"},
		{"no data", `{}`, "not a master key"},
		{"not JSON", `<html>`, "unreadable answer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(c.body)) }),
			)
			defer srv.Close()
			_, err := Transit{Addr: srv.URL, Key: "k", Token: "t"}.Unwrap(context.Background(), "vault:v1:x")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want %q", err, c.want)
			}
		})
	}
	good := base64.StdEncoding.EncodeToString(make([]byte, 32))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/transit/decrypt/k" || r.Header.Get("X-Vault-Token") != "t" {
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`{"errors":["permission denied"]}`))
			return
		}
		w.Write([]byte(`{"data":{"plaintext":"` + good + `"}}`))
	}))
	defer srv.Close()
	if _, err := (Transit{Addr: srv.URL + "/", Key: "k", Token: "t"}).Unwrap(context.Background(), "vault:v1:x"); err != nil {
		t.Fatal(err)
	}
	_, err := (Transit{Addr: srv.URL, Key: "k", Token: "wrong"}).Unwrap(context.Background(), "vault:v1:x")
	if err == nil || !strings.Contains(err.Error(), "HTTP 403 permission denied") ||
		strings.Contains(err.Error(), "wrong") {
		t.Fatalf("refused token: %v", err)
	}
}
