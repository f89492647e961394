package clientaddr

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestFrom(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name, remote, xff, want string
		known                   bool
	}{
		{"direct peer", "203.0.113.7:5000", "", "203.0.113.7", true},
		{"untrusted peer's forwarded header is ignored", "203.0.113.7:5000", "198.51.100.1", "203.0.113.7", true},
		{"trusted proxy names the client", "10.1.2.3:5000", "198.51.100.1", "198.51.100.1", true},
		{"chain of trusted proxies", "10.1.2.3:5000", "198.51.100.1, 10.9.9.9", "198.51.100.1", true},
		{
			"client cannot spoof past the first untrusted hop",
			"10.1.2.3:5000",
			"1.1.1.1, 198.51.100.1",
			"198.51.100.1",
			true,
		},
		{"all hops trusted: the peer", "10.1.2.3:5000", "10.4.4.4", "10.1.2.3", true},
		{"IPv4-mapped IPv6 is unmapped", "[::ffff:203.0.113.7]:5000", "", "203.0.113.7", true},
		{"garbage hop", "10.1.2.3:5000", "not-an-ip", "", false},
		{"garbage peer", "nonsense", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", nil)
			r.RemoteAddr = tc.remote
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", tc.xff)
			}
			got, known := From(r, trusted)
			if known != tc.known || (known && got.String() != tc.want) {
				t.Fatalf("From = %v, %v; want %s, %v", got, known, tc.want, tc.known)
			}
		})
	}
}
