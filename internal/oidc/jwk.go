package oidc

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// JWK is one JSON Web Key as published in a JWKS (RFC 7517), public members
// only.
type JWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid,omitempty"`
	Use string `json:"use,omitempty"`
	Alg string `json:"alg,omitempty"`
	// RSA
	N string `json:"n,omitempty"`
	E string `json:"e,omitempty"`
	// EC and OKP
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
}

// JWKS is a JSON Web Key Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// verificationKey is a parsed key from an issuer's JWKS.
type verificationKey struct {
	kid string
	alg string // the JWK's alg, "" when unrestricted
	key crypto.PublicKey
}

// algFits reports whether a token signed with alg may be checked with k.
func (k verificationKey) algFits(alg string) bool {
	// RFC 9864 names the Ed25519 instance of EdDSA "Ed25519".
	if k.alg != "" && k.alg != alg && !(k.alg == "Ed25519" && alg == AlgEdDSA) {
		return false
	}
	switch k.key.(type) {
	case *rsa.PublicKey:
		return alg == AlgRS256
	case *ecdsa.PublicKey:
		return alg == AlgES256
	case ed25519.PublicKey:
		return alg == AlgEdDSA
	}
	return false
}

// parseJWK turns a JWK into a public key. Keys meant for encryption, unknown
// types, RSA keys under 2048 bits and points off the curve are refused.
func parseJWK(j JWK) (crypto.PublicKey, error) {
	if j.Use != "" && j.Use != "sig" {
		return nil, fmt.Errorf("use %q", j.Use)
	}
	switch j.Kty {
	case "RSA":
		nb, err := b64.DecodeString(j.N)
		if err != nil || len(nb) == 0 {
			return nil, errors.New("bad RSA modulus")
		}
		eb, err := b64.DecodeString(j.E)
		if err != nil || len(eb) == 0 || len(eb) > 4 {
			return nil, errors.New("bad RSA exponent")
		}
		n := new(big.Int).SetBytes(nb)
		if n.BitLen() < 2048 || n.BitLen() > 8192 {
			return nil, fmt.Errorf("RSA modulus of %d bits", n.BitLen())
		}
		e := int(new(big.Int).SetBytes(eb).Int64())
		if e < 3 || e%2 == 0 {
			return nil, errors.New("bad RSA exponent")
		}
		return &rsa.PublicKey{N: n, E: e}, nil
	case "EC":
		if j.Crv != "P-256" {
			return nil, fmt.Errorf("curve %q", j.Crv)
		}
		x, err1 := b64.DecodeString(j.X)
		y, err2 := b64.DecodeString(j.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return nil, errors.New("bad EC coordinates")
		}
		k, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, errors.New("EC point not on P-256")
		}
		return k, nil
	case "OKP":
		if j.Crv != "Ed25519" {
			return nil, fmt.Errorf("curve %q", j.Crv)
		}
		x, err := b64.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, errors.New("bad Ed25519 key")
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, fmt.Errorf("key type %q", j.Kty)
}

// MaxJWKSKeys bounds the keys of an issuer's JWKS, counted before any is decoded
// (docs/limits.md §3). Issuers publish a handful (Google 2 or 3, Apple 3 to 5,
// Microsoft's common endpoint about 10); a token without a kid is checked against
// every key of its algorithm, so the bound is also the most signature checks one
// token costs.
const MaxJWKSKeys = 64

// parseJWKS keeps the usable keys of a JWKS and skips the rest (issuers
// publish encryption keys and key types we do not speak beside theirs).
func parseJWKS(body []byte) ([]verificationKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, errors.New("JWKS is not valid JSON")
	}
	if len(set.Keys) > MaxJWKSKeys {
		return nil, fmt.Errorf("JWKS has %d keys, more than %d", len(set.Keys), MaxJWKSKeys)
	}
	var keys []verificationKey
	for _, raw := range set.Keys {
		var j JWK
		if json.Unmarshal(raw, &j) != nil {
			continue // not a JSON object: skipped like a key of an unknown type
		}
		k, err := parseJWK(j)
		if err != nil {
			continue
		}
		keys = append(keys, verificationKey{kid: j.Kid, alg: j.Alg, key: k})
	}
	if len(keys) == 0 {
		return nil, errors.New("JWKS has no usable signing key")
	}
	return keys, nil
}

// ECJWK returns the JWK of a P-256 public key, with its RFC 7638 thumbprint
// as kid when kid is empty.
func ECJWK(pub *ecdsa.PublicKey, kid string) (JWK, error) {
	raw, err := pub.Bytes()
	if err != nil || pub.Curve != elliptic.P256() {
		return JWK{}, errors.New("oidc: key is not a P-256 public key")
	}
	j := JWK{
		Kty: "EC",
		Crv: "P-256",
		X:   b64.EncodeToString(raw[1:33]),
		Y:   b64.EncodeToString(raw[33:]),
		Use: "sig",
		Alg: AlgES256,
	}
	if kid == "" {
		// RFC 7638: the required members in lexicographic order.
		th := sha256.Sum256([]byte(`{"crv":"P-256","kty":"EC","x":"` + j.X + `","y":"` + j.Y + `"}`))
		kid = b64.EncodeToString(th[:])
	}
	j.Kid = kid
	return j, nil
}
