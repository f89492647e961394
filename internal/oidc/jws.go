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

// Limits of a compact JWS, checked before it is decoded (docs/limits.md §3).
const (
	// MaxTokenBytes bounds a token. Real id_tokens are 1 to 2 KiB (Google's about 1.2 KiB,
	// Microsoft's with group claims a few KiB).
	MaxTokenBytes = 16 << 10
	// MaxJSONDepth bounds the nesting of a token's header and claims. Real claims nest two or
	// three deep (an address object, a list of groups, a namespaced custom claim).
	MaxJSONDepth = 32
)

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
	if len(raw) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenBytes)
	}
	// Counted, then cut: splitting would allocate a string per dot.
	if n := strings.Count(raw, ".") + 1; n != 3 {
		return nil, fmt.Errorf("%w: want three dot-separated segments, got %d", ErrMalformed, n)
	}
	hdr, rest, _ := strings.Cut(raw, ".")
	body, sigPart, _ := strings.Cut(rest, ".")
	hb, err := b64.DecodeString(hdr)
	if err != nil {
		return nil, fmt.Errorf("%w: header is not unpadded base64url", ErrMalformed)
	}
	pb, err := b64.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: payload is not unpadded base64url", ErrMalformed)
	}
	sig, err := b64.DecodeString(sigPart)
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
	return &jws{header: h, payload: payload, signingInput: raw[:len(hdr)+1+len(body)], signature: sig}, nil
}

// decodeObject decodes exactly one JSON object, numbers as json.Number, nested at most
// MaxJSONDepth deep.
func decodeObject(b []byte, v *map[string]any) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	if jsonDepth(b) > MaxJSONDepth {
		return fmt.Errorf("nested deeper than %d levels", MaxJSONDepth)
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

// jsonDepth is the deepest nesting of arrays and objects in b, read in one pass without
// decoding (brackets inside strings do not count). It is only a bound to refuse by: b may still
// be invalid JSON, which the decoder then refuses.
func jsonDepth(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++ // the escaped byte cannot end the string
		case c == '"':
			inString = !inString
		case inString:
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
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
