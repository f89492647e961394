package stamp

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/json"
	"strings"
)

// Schemes of an X-Stamp-Attested (docs/wire.md §2b).
const (
	SchemeAttestedVerificationToken = "STAMP_ATTESTED_SCHEME_P256_VERIFICATION_TOKEN"
	SchemeAttestedOIDC              = "STAMP_ATTESTED_SCHEME_P256_OIDC"
)

// AttestedProof is what a valid X-Stamp-Attested proves: the holder of
// PublicKey (compressed P-256 hex) signed the body. Attestation (an OTP
// verification token or an OIDC id_token, per Scheme) is returned unchecked;
// the caller verifies it and binds it to PublicKey.
type AttestedProof struct {
	PublicKey   string
	Scheme      string
	Attestation string
	Signature   string
}

type attestedStampJSON struct {
	PublicKeyAttestation *string `json:"publicKeyAttestation"`
	Scheme               *string `json:"scheme"`
	PublicKey            *string `json:"publicKey"`
	Signature            *string `json:"signature"`
}

// VerifyAttested parses an X-Stamp-Attested header (base64url JSON; raw JSON
// is accepted too) and verifies its P-256 signature over body.
func VerifyAttested(header string, body []byte) (AttestedProof, error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return AttestedProof{}, malformed("X-Stamp-Attested is empty")
	}
	if len(header) > MaxStampHeaderBytes {
		return AttestedProof{}, malformed("X-Stamp-Attested is longer than %d bytes", MaxStampHeaderBytes)
	}
	raw := []byte(header)
	if header[0] != '{' {
		b, ok := decodeBase64(header)
		if !ok {
			return AttestedProof{}, malformed("X-Stamp-Attested is neither base64url JSON nor JSON")
		}
		raw = b
	}
	var st attestedStampJSON
	if err := json.Unmarshal(raw, &st); err != nil {
		return AttestedProof{}, malformed(
			"X-Stamp-Attested is not a JSON object {publicKeyAttestation, scheme, publicKey, signature}",
		)
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"publicKeyAttestation", st.PublicKeyAttestation}, {"scheme", st.Scheme}, {"publicKey", st.PublicKey}, {"signature", st.Signature}} {
		if f.v == nil || *f.v == "" {
			return AttestedProof{}, malformed("X-Stamp-Attested has no %s", f.name)
		}
	}
	if *st.Scheme != SchemeAttestedVerificationToken && *st.Scheme != SchemeAttestedOIDC {
		return AttestedProof{}, malformed("X-Stamp-Attested scheme %q is not supported (want %s or %s)",
			truncate(*st.Scheme), SchemeAttestedVerificationToken, SchemeAttestedOIDC)
	}
	keyRaw, ok := decodeHex(*st.PublicKey)
	if !ok {
		return AttestedProof{}, malformed("X-Stamp-Attested publicKey is not hex")
	}
	sig, ok := decodeHex(*st.Signature)
	if !ok {
		return AttestedProof{}, malformed("X-Stamp-Attested signature is not hex")
	}
	pk, cached, err := parsePublicKey(CurveP256, keyRaw)
	if err != nil {
		return AttestedProof{}, err
	}
	if _, _, m := parseDER(sig); m != "" {
		return AttestedProof{}, malformed("X-Stamp-Attested %s", m)
	}
	h := sha256.Sum256(body)
	if !ecdsa.VerifyASN1(pk.p256, h[:], sig) {
		return AttestedProof{}, unverified(
			"X-Stamp-Attested signature does not verify for P-256 public key %s over the request body",
			pk.hex,
		)
	}
	if !cached {
		rememberKey(keyRaw, pk)
	}
	return AttestedProof{
		PublicKey:   pk.hex,
		Scheme:      *st.Scheme,
		Attestation: *st.PublicKeyAttestation,
		Signature:   *st.Signature,
	}, nil
}
