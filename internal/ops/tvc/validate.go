package tvc

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/latchkey/latchkey/internal/apierr"
)

// Limits on what a record may hold.
const (
	MaxOperatorsPerSet   = 32
	MaxAppsPerOrg        = 100
	MaxDeploymentsPerApp = 1000
	MaxApprovalsPerCall  = MaxOperatorsPerSet
	MaxPivotArgs         = 256
	MaxPivotArgLen       = 4096
	MaxPivotPathLen      = 1024
	MaxImageRefLen       = 1024
	MaxPullSecretLen     = 64 << 10
	MaxReplicas          = 100
	// MaxDeploymentSpecBytesPerApp bounds the stored specs (pivot container and manifest) of
	// an app's deployments together: list_tvc_app_deployments takes no pagination and answers
	// every deployment with its spec. A deployment's arguments may reach 1 MiB (MaxPivotArgs
	// of MaxPivotArgLen), and its spec about 2.4 MiB with them; ordinary specs are 2 to 8 KB
	// (a few short arguments, sets of a few operators), so 1,000 of them fit.
	MaxDeploymentSpecBytesPerApp = 16 << 20
	maxQOSVersionLen             = 64
)

func idx(f string, i int) string { return f + "[" + strconv.Itoa(i) + "]" }

// PublicKey is a parsed operator or quorum public key. Three forms are accepted, as hex (an
// optional 0x prefix, any case): a P-256 point compressed (33 bytes) or uncompressed (65 bytes),
// or a QuorumOS key pair's public half (130 bytes: the uncompressed encryption point followed by
// the uncompressed signing point).
type PublicKey struct {
	Hex     string // lowercase hex of the bytes as given
	signing []byte // the uncompressed P-256 point that signs
}

// ParsePublicKey parses a public key in one of PublicKey's forms.
func ParsePublicKey(s string) (PublicKey, error) {
	b, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	if err != nil {
		return PublicKey{}, errors.New("must be hex")
	}
	switch len(b) {
	case 33:
		x, y := elliptic.UnmarshalCompressed(elliptic.P256(), b)
		if x == nil {
			return PublicKey{}, errors.New("not a compressed point on P-256")
		}
		var u [65]byte
		u[0] = 4
		x.FillBytes(u[1:33])
		y.FillBytes(u[33:])
		return PublicKey{Hex: hex.EncodeToString(b), signing: u[:]}, nil
	case 65:
		if err := onCurve(b); err != nil {
			return PublicKey{}, err
		}
		return PublicKey{Hex: hex.EncodeToString(b), signing: b}, nil
	case 130:
		if err := onCurve(b[:65]); err != nil {
			return PublicKey{}, errors.New("encryption half: " + err.Error())
		}
		if err := onCurve(b[65:]); err != nil {
			return PublicKey{}, errors.New("signing half: " + err.Error())
		}
		return PublicKey{Hex: hex.EncodeToString(b), signing: b[65:]}, nil
	}
	return PublicKey{}, errors.New("must be a P-256 public key: 33 or 65 bytes, or a 130-byte QuorumOS public key pair")
}

func onCurve(b []byte) error {
	if b[0] != 4 {
		return errors.New("not an uncompressed point (0x04 prefix)")
	}
	if _, err := ecdh.P256().NewPublicKey(b); err != nil {
		return errors.New("not a point on P-256")
	}
	return nil
}

// Verify reports whether sigHex (hex of a 64-byte r||s or of an ASN.1 DER signature) is the
// key's ECDSA P-256 signature over SHA-256(msg).
func (k PublicKey) Verify(msg []byte, sigHex string) error {
	sig, err := hex.DecodeString(strings.TrimPrefix(strings.TrimPrefix(sigHex, "0x"), "0X"))
	if err != nil {
		return errors.New("must be hex")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), k.signing)
	if err != nil {
		return errors.New("operator public key is unusable")
	}
	digest := sha256.Sum256(msg)
	var ok bool
	if len(sig) == 64 {
		ok = ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:]))
	} else {
		ok = ecdsa.VerifyASN1(pub, digest[:], sig)
	}
	if !ok {
		return errors.New("is not the operator's ECDSA P-256 signature over SHA-256 of the manifest")
	}
	return nil
}

// ParseImageRef checks a container image reference as an OCI distribution client reads it:
// [host[:port]/]path[:tag][@sha256:<64 hex>], path components lowercase alphanumerics joined by
// '.', '_', '__' or '-' runs, a tag of at most 128 word characters, dots and dashes.
func ParseImageRef(s string) error {
	if s == "" {
		return errors.New("is required")
	}
	if len(s) > MaxImageRefLen {
		return errors.New("is too long")
	}
	rest := s
	if i := strings.Index(rest, "@"); i >= 0 {
		d := rest[i+1:]
		rest = rest[:i]
		alg, h, ok := strings.Cut(d, ":")
		if !ok || alg != "sha256" || !isHex(h, 64) {
			return errors.New("digest must be sha256:<64 hex characters>")
		}
	}
	// A tag follows the last ':' after the last '/'.
	if c := strings.LastIndex(rest, ":"); c > strings.LastIndex(rest, "/") {
		tag := rest[c+1:]
		rest = rest[:c]
		if !validTag(tag) {
			return errors.New("tag must be 1-128 characters [A-Za-z0-9_.-], not starting with '.' or '-'")
		}
	}
	parts := strings.Split(rest, "/")
	if len(parts) > 1 && isHost(parts[0]) {
		parts = parts[1:]
	}
	for _, p := range parts {
		if !validPathComponent(p) {
			return errors.New(
				"repository path components must be lowercase letters and digits joined by '.', '_', '__' or '-'",
			)
		}
	}
	return nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func validTag(t string) bool {
	if t == "" || len(t) > 128 || t[0] == '.' || t[0] == '-' {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(isAlnum(c) || 'A' <= c && c <= 'Z' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// isHost reports whether the first component names a registry: it holds a '.' or a ':' (a
// port), or is localhost.
func isHost(p string) bool {
	if p == "localhost" {
		return true
	}
	if !strings.ContainsAny(p, ".:") {
		return false
	}
	host, port, hasPort := strings.Cut(p, ":")
	if hasPort {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return false
		}
	}
	if host == "" {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(isAlnum(c) || 'A' <= c && c <= 'Z' || c == '-') {
				return false
			}
		}
	}
	return true
}

func validPathComponent(p string) bool {
	if p == "" || !isAlnum(p[0]) || !isAlnum(p[len(p)-1]) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if isAlnum(c) {
			continue
		}
		switch c {
		case '.', '_', '-':
			// Separators may not follow each other, except "__" and runs of '-'.
			prev := p[i-1]
			if !isAlnum(prev) && !(c == '_' && prev == '_' && (i < 2 || p[i-2] != '_')) && !(c == '-' && prev == '-') {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// checkDigest normalises the expected pivot digest: 64 hex characters (SHA-256), with an
// optional "sha256:" prefix, any case.
func checkDigest(field, s string) (string, error) {
	h := strings.ToLower(strings.TrimPrefix(s, "sha256:"))
	if !isHex(h, 64) {
		return "", apierr.Invalid(field, "must be a SHA-256 digest: 64 hex characters, optionally prefixed sha256:")
	}
	return h, nil
}

// checkPivotPath requires an absolute, clean-enough path inside the container.
func checkPivotPath(field, s string) error {
	switch {
	case !strings.HasPrefix(s, "/"):
		return apierr.Invalid(field, "must be an absolute path inside the container")
	case len(s) > MaxPivotPathLen:
		return apierr.Invalid(field, "at most %d bytes", MaxPivotPathLen)
	case strings.HasSuffix(s, "/"):
		return apierr.Invalid(field, "must name a file, not a directory")
	case !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl):
		return apierr.Invalid(field, "must be printable UTF-8")
	}
	for _, seg := range strings.Split(s[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return apierr.Invalid(field, "must not contain empty, '.' or '..' segments")
		}
	}
	return nil
}

func checkPivotArgs(field string, args []string) error {
	if len(args) > MaxPivotArgs {
		return apierr.Invalid(field, "at most %d arguments", MaxPivotArgs)
	}
	for i, a := range args {
		if len(a) > MaxPivotArgLen {
			return apierr.Invalid(idx(field, i), "at most %d bytes", MaxPivotArgLen)
		}
		if !utf8.ValidString(a) || strings.ContainsRune(a, 0) {
			return apierr.Invalid(idx(field, i), "must be UTF-8 without NUL")
		}
	}
	return nil
}

func checkPort(field string, p int64) error {
	if p < 1 || p > 65535 {
		return apierr.Invalid(field, "must be a port between 1 and 65535, got %d", p)
	}
	return nil
}

// checkQOSVersion accepts one of the configured versions or, when none are configured, any
// version label of at most 64 characters [A-Za-z0-9._+-].
func checkQOSVersion(field, v string, allowed []string) error {
	if len(allowed) > 0 {
		for _, a := range allowed {
			if a == v {
				return nil
			}
		}
		return apierr.Invalid(
			field,
			"%q is not one of the QOS versions this server accepts (%s; see get_tvc_qos_versions)",
			v,
			strings.Join(allowed, ", "),
		)
	}
	if !ValidQOSVersion(v) {
		return apierr.Invalid(field, "must be a version label of 1-%d characters [A-Za-z0-9._+-]", maxQOSVersionLen)
	}
	return nil
}

// ValidQOSVersion reports whether v can be a QOS version label.
func ValidQOSVersion(v string) bool {
	if v == "" || len(v) > maxQOSVersionLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(isAlnum(c) || 'A' <= c && c <= 'Z' || c == '.' || c == '_' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}
