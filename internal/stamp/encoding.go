package stamp

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// MaxStampHeaderBytes bounds each stamp header (X-Stamp, X-Stamp-WebAuthn,
// X-Stamp-Attested), checked before it is decoded (docs/limits.md §3). Real
// headers are under 4 KiB: an X-Stamp is about 300 bytes, an X-Stamp-WebAuthn
// about 1 KiB (more with a long credential id), an X-Stamp-Attested carrying an
// OIDC id_token 2 to 3 KiB. The limit holds the longest id_token Latchkey
// accepts (oidc.MaxTokenBytes, 16 KiB) base64url-wrapped with the rest of the
// stamp.
const MaxStampHeaderBytes = 32 << 10

// decodeBase64 decodes base64url with or without padding, and tolerates the
// standard alphabet, because clients disagree (docs/wire.md §9.7).
func decodeBase64(s string) ([]byte, bool) {
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "+/") {
		if strings.ContainsAny(s, "-_") {
			return nil, false // mixed alphabets
		}
		b, err := base64.RawStdEncoding.DecodeString(s)
		return b, err == nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	return b, err == nil
}

// decodeHex decodes upper- or lowercase hex.
func decodeHex(s string) ([]byte, bool) {
	b, err := hex.DecodeString(s)
	return b, err == nil
}

// parseDER checks that sig is a strict ASN.1 DER ECDSA signature
// SEQUENCE { INTEGER r, INTEGER s } for a curve with 256-bit order and returns
// r and s as 32-byte big-endian values. Long-form lengths, negative or
// non-minimal integers, zero values and trailing bytes are rejected.
func parseDER(sig []byte) (r, s [32]byte, msg string) {
	if len(sig) < 8 || len(sig) > 72 {
		return r, s, "signature is not DER: wrong length"
	}
	if sig[0] != 0x30 {
		return r, s, "signature is not DER: no SEQUENCE"
	}
	if int(sig[1]) != len(sig)-2 || sig[1] >= 0x80 {
		return r, s, "signature is not DER: bad SEQUENCE length"
	}
	rest := sig[2:]
	var m string
	if r, rest, m = derInt(rest); m != "" {
		return r, s, m
	}
	if s, rest, m = derInt(rest); m != "" {
		return r, s, m
	}
	if len(rest) != 0 {
		return r, s, "signature is not DER: trailing bytes"
	}
	return r, s, ""
}

func derInt(b []byte) (v [32]byte, rest []byte, msg string) {
	if len(b) < 3 || b[0] != 0x02 {
		return v, nil, "signature is not DER: expected INTEGER"
	}
	n := int(b[1])
	if n == 0 || n >= 0x80 || n > len(b)-2 {
		return v, nil, "signature is not DER: bad INTEGER length"
	}
	x := b[2 : 2+n]
	if x[0]&0x80 != 0 {
		return v, nil, "signature is not DER: negative INTEGER"
	}
	if n > 1 && x[0] == 0 && x[1]&0x80 == 0 {
		return v, nil, "signature is not DER: non-minimal INTEGER"
	}
	if n > 1 && x[0] == 0 {
		x = x[1:]
	}
	if len(x) > 32 {
		return v, nil, "signature is not DER: INTEGER too large"
	}
	copy(v[32-len(x):], x)
	if v == ([32]byte{}) {
		return v, nil, "signature has a zero component"
	}
	return v, b[2+n:], ""
}
