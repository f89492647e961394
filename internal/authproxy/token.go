package authproxy

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// verificationClaims are the claims of an OTP verification token the proxy reads to route a
// request (which sub-organization, which key signs): docs/wire.md §4.2. The proxy does not
// trust them: the activity that receives the token verifies its signature and expiry.
type verificationClaims struct {
	ID               string `json:"id"`
	OrganizationID   string `json:"organization_id"`
	VerificationType string `json:"verification_type"`
	Contact          string `json:"contact"`
	PublicKey        string `json:"public_key"`
}

// MaxTokenBytes bounds a verification token the proxy reads, before it is decoded
// (docs/limits.md §3). Tokens the server issues are about 500 bytes (six short claims); an
// e-mail address of non-ASCII characters, written as \u escapes, makes one a few KiB.
const MaxTokenBytes = 8 << 10

// tokenClaims decodes a verification token's payload without checking its signature.
func tokenClaims(token string) (*verificationClaims, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("a verification token is at most %d bytes", MaxTokenBytes)
	}
	// Cut, not split: a token of dots would otherwise allocate a string per dot.
	_, rest, ok1 := strings.Cut(token, ".")
	payloadB64, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sig, ".") {
		return nil, errors.New("not a verification token (a JWT of three dot-separated parts)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(payloadB64, "="))
	if err != nil {
		return nil, errors.New("the verification token's payload is not base64url")
	}
	var c verificationClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return nil, errors.New("the verification token's payload is not a JSON object of claims")
	}
	if c.ID == "" || c.Contact == "" || c.VerificationType == "" {
		return nil, errors.New("the verification token lacks its id, contact or verification_type")
	}
	return &c, nil
}
