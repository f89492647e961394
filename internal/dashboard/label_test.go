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
