package oidc

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// maxTokenBytes bounds what we parse; real id_tokens are 1-2 KB.
const maxTokenBytes = 16 << 10

// Algorithms the Verifier accepts.
const (
	AlgRS256 = "RS256"
	AlgES256 = "ES256"
	AlgEdDSA = "EdDSA"
)

type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

type jws struct {
	header       jwsHeader
	payload      map[string]any
	signingInput string
	signature    []byte
}

var b64 = base64.RawURLEncoding.Strict()

// parseJWS parses a compact JWS strictly. Errors wrap ErrMalformed and never
// quote the token.
func parseJWS(raw string) (*jws, error) {
	if len(raw) > maxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxTokenBytes)
	}
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: want three dot-separated segments, got %d", ErrMalformed, len(parts))
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: header is not unpadded base64url", ErrMalformed)
	}
	pb, err := b64.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("%w: payload is not unpadded base64url", ErrMalformed)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || len(sig) == 0 {
		return nil, fmt.Errorf("%w: signature is not unpadded base64url", ErrMalformed)
	}
	var hdrMap map[string]any
	if err := decodeObject(hb, &hdrMap); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	if _, ok := hdrMap["crit"]; ok {
		return nil, fmt.Errorf("%w: header has critical extensions", ErrMalformed)
	}
	var h jwsHeader
	if s, ok := hdrMap["alg"].(string); ok {
		h.Alg = s
	} else {
		return nil, fmt.Errorf("%w: header has no alg", ErrMalformed)
	}
	if v, ok := hdrMap["kid"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, fmt.Errorf("%w: header kid is not a string", ErrMalformed)
		}
		h.Kid = s
	}
	if v, ok := hdrMap["typ"]; ok {
		s, _ := v.(string)
		h.Typ = s
	}
	var payload map[string]any
	if err := decodeObject(pb, &payload); err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	return &jws{header: h, payload: payload, signingInput: parts[0] + "." + parts[1], signature: sig}, nil
}

// decodeObject decodes exactly one JSON object, numbers as json.Number.
func decodeObject(b []byte, v *map[string]any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return errors.New("not valid JSON")
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	if _, err := dec.Token(); err == nil {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// verifySignature checks sig over input with key under alg; the algorithm
// must match the key's type.
func verifySignature(alg string, key crypto.PublicKey, input string, sig []byte) error {
	switch alg {
	case AlgRS256:
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return fmt.Errorf("%w: RS256 token, key is not RSA", ErrBadSignature)
		}
		h := sha256.Sum256([]byte(input))
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, h[:], sig) != nil {
			return ErrBadSignature
		}
	case AlgES256:
		k, ok := key.(*ecdsa.PublicKey)
		if !ok || k.Curve.Params().Name != "P-256" {
			return fmt.Errorf("%w: ES256 token, key is not P-256", ErrBadSignature)
		}
		if len(sig) != 64 {
			return fmt.Errorf("%w: ES256 signature must be 64 bytes", ErrBadSignature)
		}
		h := sha256.Sum256([]byte(input))
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		if !ecdsa.Verify(k, h[:], r, s) {
			return ErrBadSignature
		}
	case AlgEdDSA:
		k, ok := key.(ed25519.PublicKey)
		if !ok {
			return fmt.Errorf("%w: EdDSA token, key is not Ed25519", ErrBadSignature)
		}
		if len(sig) != ed25519.SignatureSize || !ed25519.Verify(k, []byte(input), sig) {
			return ErrBadSignature
		}
	default:
		return fmt.Errorf("%w: %q", ErrUnsupportedAlg, clip(alg, 20))
	}
	return nil
}

func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
