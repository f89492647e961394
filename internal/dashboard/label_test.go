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
