// Package session encodes and checks Turnkey session tokens: compact JWTs with header
// {"alg":"ES256","typ":"JWT"} whose signature is r‖s by the notarizer key over
// SHA-256(SHA-256("header.payload")) — Turnkey's double hash, which @turnkey/crypto's
// verifySessionJwtSignature checks (docs/wire.md §4.1). Payloads are kept ASCII and free of
// the characters core's decoder mishandles. No keys live here: signing and verifying take the
// key's operations as arguments.
package session

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Session types.
const (
	ReadWrite = "SESSION_TYPE_READ_WRITE"
	ReadOnly  = "SESSION_TYPE_READ_ONLY"
)

// Claims are a session token's payload.
type Claims struct {
	Exp              int64  `json:"exp"` // seconds
	PublicKey        string `json:"public_key"`
	SessionType      string `json:"session_type"`
	UserID           string `json:"user_id"`
	OrganizationID   string `json:"organization_id"`
	SessionProfileID string `json:"session_profile_id,omitempty"`
}

var header = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","typ":"JWT"}`))

// Digest is what the notarizer signs for a signing input "header.payload".
func Digest(signingInput string) []byte {
	h := sha256.Sum256([]byte(signingInput))
	d := sha256.Sum256(h[:])
	return d[:]
}

// Encode makes a token; sign returns r‖s (64 bytes) over a 32-byte digest.
func Encode(c Claims, sign func(digest []byte) ([]byte, error)) (string, error) {
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(string(payload), ">?~") {
		return "", errors.New("session: claims must not contain '>', '?' or '~'")
	}
	for _, b := range payload {
		if b >= 0x80 {
			return "", errors.New("session: claims must be ASCII")
		}
	}
	input := header + "." + base64.RawURLEncoding.EncodeToString(payload)
	sig, err := sign(Digest(input))
	if err != nil {
		return "", err
	}
	if len(sig) != 64 {
		return "", errors.New("session: signature must be 64 bytes")
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// ErrInvalid is returned for any token that is malformed, forged or expired.
var ErrInvalid = errors.New("invalid session token")

// MaxTokenBytes bounds a session token, checked before anything else (docs/limits.md §3): an
// X-Session header is read before anyone is known. Tokens Encode makes are about 500 bytes
// (the claims are five ids and a public key); the limit leaves room for an uncompressed key
// and long ids.
const MaxTokenBytes = 4 << 10

// sigLen is the base64url length of a 64-byte r‖s signature.
var sigLen = base64.RawURLEncoding.EncodedLen(64)

// Parse checks a token's signature with the notarizer's public key and its expiry at now.
func Parse(token string, notarizer *ecdsa.PublicKey, now time.Time) (*Claims, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalid, MaxTokenBytes)
	}
	// The header is fixed: compare it and cut the rest without splitting the whole token, which
	// would allocate a string per dot.
	rest, ok := strings.CutPrefix(token, header+".")
	if !ok {
		return nil, ErrInvalid
	}
	payloadB64, sigB64, ok := strings.Cut(rest, ".")
	if !ok || len(sigB64) != sigLen {
		return nil, ErrInvalid
	}
	sig, err := base64.RawURLEncoding.DecodeString(sigB64)
	if err != nil {
		return nil, ErrInvalid
	}
	if !ecdsa.Verify(
		notarizer,
		Digest(token[:len(token)-len(sigB64)-1]),
		new(big.Int).SetBytes(sig[:32]),
		new(big.Int).SetBytes(sig[32:]),
	) {
		return nil, ErrInvalid
	}
	payload, err := base64.RawURLEncoding.DecodeString(payloadB64)
	if err != nil {
		return nil, ErrInvalid
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil || c.UserID == "" || c.OrganizationID == "" ||
		c.SessionType == "" {
		return nil, ErrInvalid
	}
	if now.Unix() >= c.Exp {
		return nil, errors.New("session token expired")
	}
	return &c, nil
}
