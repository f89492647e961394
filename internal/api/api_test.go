package api

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestRoutes(t *testing.T) {
	for _, tc := range []struct {
		path, kind, op string
		ok             bool
	}{
		{"/public/v1/submit/create_wallet", "submit", "create_wallet", true},
		{"/public/v1/query/whoami/", "query", "whoami", true},
		{"/public/v1/other/x", "", "", false},
		{"/public/v1/submit/", "", "", false},
		{"/public/v1/submit/a/b", "", "", false},
		{"/v1/otp_init", "", "", false},
	} {
		kind, op, ok := splitRoute(cleanPath(tc.path))
		if kind != tc.kind || op != tc.op || ok != tc.ok {
			t.Errorf("splitRoute(%q) = %q, %q, %v", tc.path, kind, op, ok)
		}
	}
	if got := cleanPath("//public//v1/query/whoami"); got != "/public/v1/query/whoami" {
		t.Errorf("cleanPath = %q", got)
	}
}

func TestClientAddr(t *testing.T) {
	s := &Server{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	for _, tc := range []struct {
		remote, xff, want string
		known             bool
	}{
		{"192.0.2.1:5000", "198.51.100.7", "192.0.2.1", true},             // untrusted peer: XFF ignored
		{"10.0.0.2:5000", "198.51.100.7", "198.51.100.7", true},           // trusted proxy
		{"10.0.0.2:5000", "198.51.100.7, 10.1.1.1", "198.51.100.7", true}, // chain of trusted proxies
		{"10.0.0.2:5000", "not-an-ip", "", false},
		{"[::ffff:192.0.2.9]:80", "", "192.0.2.9", true},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		a, known := s.clientAddr(r)
		if known != tc.known || (known && a.String() != tc.want) {
			t.Errorf("clientAddr(%s, %q) = %v, %v", tc.remote, tc.xff, a, known)
		}
	}
}
