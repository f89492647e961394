package otp

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TokenClaims are an OTP verification token's claims, in Turnkey's order (docs/wire.md §4.2).
type TokenClaims struct {
	Exp              string `json:"exp"` // milliseconds, as a string
	ID               string `json:"id"`
	OrganizationID   string `json:"organization_id"`
	VerificationType string `json:"verification_type"`
	Contact          string `json:"contact"`
	PublicKey        string `json:"public_key"`
}

var tokenHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`))

// EncodeToken makes a verification token: a standard ES256 JWT, sign returning r‖s over
// SHA-256("header.payload").
func EncodeToken(c TokenClaims, sign func(digest []byte) ([]byte, error)) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	input := tokenHeader + "." + base64.RawURLEncoding.EncodeToString(SafeJSON(payload))
	d := sha256.Sum256([]byte(input))
	sig, err := sign(d[:])
	if err != nil {
		return "", err
	}
	if len(sig) != 64 {
		return "", errors.New("otp: signature must be 64 bytes")
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// SafeJSON rewrites JSON so that it is ASCII without '>', '?' or '~': those characters and
// every non-ASCII character are written as \u escapes (which can only occur inside strings of
// valid JSON, and decode to the same string). base64url of such bytes has no '-' or '_',
// which core's atob would silently drop (docs/wire.md §4.1).
func SafeJSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '>' || c == '?' || c == '~' || c == 0x7f:
			out = fmt.Appendf(out, `\u%04x`, c)
			i++
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			i += n
			if r > 0xffff {
				r -= 0x10000
				out = fmt.Appendf(out, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		}
	}
	return out
}

// ErrInvalidToken is returned for a verification token that is malformed or forged.
var ErrInvalidToken = errors.New("invalid verification token")

// MaxTokenBytes bounds a verification token, checked before it is decoded (docs/limits.md §3).
// EncodeToken makes tokens of about 500 bytes; an e-mail address of non-ASCII characters,
// which SafeJSON writes as \u escapes, makes one a few KiB.
const MaxTokenBytes = 8 << 10

// ParseToken checks a verification token's header, its signature with one of keys (the OTP key
// in use, and others while a rotation overlaps) and its expiry at now, and returns its claims.
func ParseToken(token string, keys []*ecdsa.PublicKey, now time.Time) (*TokenClaims, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidToken, MaxTokenBytes)
	}
	// Cut, not split: a token of dots would otherwise allocate a string per dot.
	hdr, rest, ok1 := strings.Cut(token, ".")
	body, sigB64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sigB64, ".") {
		return nil, ErrInvalidToken
	}
	parts := [3]string{hdr, body, sigB64}
	hb, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[0], "="))
	if err != nil {
		return nil, ErrInvalidToken
	}
	var h struct{ Alg, Typ string }
	if json.Unmarshal(hb, &h) != nil || h.Alg != "ES256" || h.Typ != "JWT" {
		return nil, ErrInvalidToken
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[2], "="))
	if err != nil || len(sig) != 64 {
		return nil, ErrInvalidToken
	}
	d := sha256.Sum256([]byte(token[:len(hdr)+1+len(body)]))
	r, sv := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !slices.ContainsFunc(keys, func(k *ecdsa.PublicKey) bool { return ecdsa.Verify(k, d[:], r, sv) }) {
		return nil, ErrInvalidToken
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, ErrInvalidToken
	}
	var c TokenClaims
	if err := json.Unmarshal(payload, &c); err != nil || c.ID == "" || c.OrganizationID == "" ||
		c.VerificationType == "" ||
		c.Contact == "" {
		return nil, ErrInvalidToken
	}
	ms, err := strconv.ParseInt(c.Exp, 10, 64)
	if err != nil {
		return nil, ErrInvalidToken
	}
	if now.UnixMilli() > ms {
		return nil, errors.New("the verification token has expired")
	}
	return &c, nil
}
