package dashboard

import "testing"

func TestLabel(t *testing.T) {
	for in, want := range map[string]string{
		"signerPublicKey":        "Signer public key",
		"otpPublicKey":           "OTP public key",
		"appProofPublicKey":      "App proof public key",
		"clientSecretsPublicKey": "Client secrets public key",
		"webhookJWKSUrl":         "Webhook JWKS URL",
		"key":                    "Key",
	} {
		if got := label(in); got != want {
			t.Errorf("label(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOperation(t *testing.T) {
	for path, want := range map[string]string{"/": "overview", "/charts": "charts", "/failed": "failed", "/audit/export": "audit",
		"/health": "health", "/x/y": "unknown", "/activities/abc": "activities"} {
		if got := Operation(path); got != want {
			t.Errorf("Operation(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestAxisTops(t *testing.T) {
	for _, tt := range []struct{ v, nice, count float64 }{
		{0, 1, 4}, {0.07, 0.1, 4}, {3, 5, 8}, {5, 5, 8}, {12, 20, 20}, {140, 200, 200}, {16, 20, 20},
	} {
		if got := niceMax(tt.v); got != tt.nice {
			t.Errorf("niceMax(%v) = %v, want %v", tt.v, got, tt.nice)
		}
		if got := countMax(tt.v); got != tt.count {
			t.Errorf("countMax(%v) = %v, want %v", tt.v, got, tt.count)
		}
	}
}
