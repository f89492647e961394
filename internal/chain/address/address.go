package address

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// Documented Turnkey error texts.
var (
	ErrInvalidAddressFormat = errors.New("invalid address format")
	ErrInvalidCurve         = errors.New("invalid curve")
	ErrCurveRequired        = errors.New("curve required")
	// ErrInvalidPublicKey is returned for public key bytes that are not a key of the curve.
	ErrInvalidPublicKey = errors.New("invalid public key")
)

// Curves by wire value.
const (
	CurveSecp256k1 = "CURVE_SECP256K1"
	CurveEd25519   = "CURVE_ED25519"
	CurveP256      = "CURVE_P256"
)

// SparkIdentityPath is the Spark identity key path for account 0. Turnkey documents that it
// "will be set automatically" for SPARK_* accounts whatever path the client sends.
const SparkIdentityPath = "m/8797555'/0'/0'"

type format struct {
	curves      []string
	defaultPath string
	derive      func(k key) (string, error)
}

// key is a parsed public key in the forms the encoders need.
type key struct {
	curve        string
	compressed   []byte // 33 bytes (secp256k1, P-256) or 32 bytes (Ed25519)
	uncompressed []byte // 65 bytes (secp256k1, P-256)
}

var (
	secp    = []string{CurveSecp256k1}
	ed      = []string{CurveEd25519}
	formats = map[string]format{
		"ADDRESS_FORMAT_UNCOMPRESSED": {[]string{CurveSecp256k1, CurveP256}, "m/0'/0", func(k key) (string, error) {
			return hex.EncodeToString(k.uncompressed), nil
		}},
		"ADDRESS_FORMAT_COMPRESSED": {
			[]string{CurveSecp256k1, CurveEd25519, CurveP256},
			"m/0'/0",
			func(k key) (string, error) {
				return hex.EncodeToString(k.compressed), nil
			},
		},
		"ADDRESS_FORMAT_ETHEREUM": {secp, "m/44'/60'/0'/0/0", ethereum},
		"ADDRESS_FORMAT_SOLANA":   {ed, "m/44'/501'/0'/0'", solana},
		"ADDRESS_FORMAT_COSMOS":   {secp, "m/44'/118'/0'/0/0", cosmos("cosmos")},
		"ADDRESS_FORMAT_TRON":     {secp, "m/44'/195'/0'", tron},
		"ADDRESS_FORMAT_SUI":      {ed, "m/44'/784'/0'/0'/0'", sui},
		"ADDRESS_FORMAT_APTOS":    {ed, "m/44'/637'/0'/0'/0'", aptos},
		"ADDRESS_FORMAT_SEI":      {secp, "m/44'/118'/0'/0'/0'", cosmos("sei")},
		"ADDRESS_FORMAT_XLM":      {ed, "m/44'/148'/0'", stellar},
		"ADDRESS_FORMAT_XRP":      {secp, "m/44'/144'/0'/0'/0'", xrp},
		"ADDRESS_FORMAT_DOGE_MAINNET": {secp, "m/44'/3'/0'/0/0", func(k key) (string, error) {
			return base58Check(0x1e, hash160(k.compressed)), nil
		}},
		"ADDRESS_FORMAT_DOGE_TESTNET": {secp, "m/44'/3'/0'/0/0", func(k key) (string, error) {
			return base58Check(0x71, hash160(k.compressed)), nil
		}},
		"ADDRESS_FORMAT_TON_V3R2": {ed, "m/44'/607'/0'/0'/0'", tonAddress(tonV3R2)},
		"ADDRESS_FORMAT_TON_V4R2": {ed, "m/44'/607'/0'/0'/0'", tonAddress(tonV4R2)},
		// V5R1 is in no SDK helper; the path follows V3R2/V4R2.
		"ADDRESS_FORMAT_TON_V5R1":      {ed, "m/44'/607'/0'/0'/0'", tonAddress(tonV5R1)},
		"ADDRESS_FORMAT_SPARK_MAINNET": {secp, "m/86'/0'/0'/0/0", spark("spark")},
		"ADDRESS_FORMAT_SPARK_REGTEST": {secp, "m/86'/1'/0'/0/0", spark("sparkrt")},
	}
)

func init() {
	for _, n := range bitcoinNetworks {
		coin := "1"
		if n.name == "MAINNET" {
			coin = "0"
		}
		n := n
		prefix := "ADDRESS_FORMAT_BITCOIN_" + n.name + "_"
		formats[prefix+"P2PKH"] = format{
			secp,
			"m/44'/" + coin + "'/0'/0/0",
			func(k key) (string, error) { return p2pkh(n, k) },
		}
		formats[prefix+"P2SH"] = format{
			secp,
			"m/44'/" + coin + "'/0'/0/0",
			func(k key) (string, error) { return p2sh(n, k) },
		}
		formats[prefix+"P2WPKH"] = format{
			secp,
			"m/84'/" + coin + "'/0'/0/0",
			func(k key) (string, error) { return p2wpkh(n, k) },
		}
		formats[prefix+"P2WSH"] = format{
			secp,
			"m/48'/" + coin + "'/0'/2'/0/0",
			func(k key) (string, error) { return p2wsh(n, k) },
		}
		formats[prefix+"P2TR"] = format{
			secp,
			"m/86'/" + coin + "'/0'/0/0",
			func(k key) (string, error) { return p2tr(n, k) },
		}
	}
}

// Formats returns every supported ADDRESS_FORMAT_* value.
func Formats() []string {
	out := make([]string, 0, len(formats))
	for f := range formats {
		out = append(out, f)
	}
	return out
}

// CheckCurve reports whether format exists and accepts curve. Errors wrap
// ErrInvalidAddressFormat, ErrCurveRequired or ErrInvalidCurve.
func CheckCurve(formatName, curve string) error {
	f, ok := formats[formatName]
	if !ok {
		return fmt.Errorf("%w: %q", ErrInvalidAddressFormat, formatName)
	}
	if curve == "" {
		return ErrCurveRequired
	}
	switch curve {
	case CurveSecp256k1, CurveEd25519, CurveP256:
	default:
		return fmt.Errorf("%w: %q", ErrInvalidCurve, curve)
	}
	for _, c := range f.curves {
		if c == curve {
			return nil
		}
	}
	return fmt.Errorf("%w: %s does not support %s", ErrInvalidCurve, formatName, curve)
}

// DefaultPath returns the path Turnkey's SDK sends for format at account index 0 (the
// `default<Chain>AccountAtIndex(0)` helpers), or the documented path where the SDK has none
// (UNCOMPRESSED, COMPRESSED, TON_V5R1). For SPARK_* it is the SDK's value, which Turnkey
// replaces by the identity path (SparkIdentityPath). It returns "" for an unknown format.
func DefaultPath(formatName string) string {
	return formats[formatName].defaultPath
}

// Derive returns the address of publicKey in format. publicKey is compressed SEC1 (33 bytes)
// for secp256k1 and P-256 (65-byte uncompressed SEC1 is accepted too) and 32 bytes for Ed25519.
func Derive(formatName, curve string, publicKey []byte) (string, error) {
	if err := CheckCurve(formatName, curve); err != nil {
		return "", err
	}
	k, err := parseKey(curve, publicKey)
	if err != nil {
		return "", err
	}
	return formats[formatName].derive(k)
}

func parseKey(curve string, pk []byte) (key, error) {
	switch curve {
	case CurveSecp256k1:
		if len(pk) != 33 && len(pk) != 65 {
			return key{}, fmt.Errorf("%w: secp256k1 key must be 33 or 65 bytes, got %d", ErrInvalidPublicKey, len(pk))
		}
		p, err := secp256k1.ParsePubKey(pk)
		if err != nil {
			return key{}, fmt.Errorf("%w: not a secp256k1 point", ErrInvalidPublicKey)
		}
		return key{curve: curve, compressed: p.SerializeCompressed(), uncompressed: p.SerializeUncompressed()}, nil
	case CurveP256:
		var unc []byte
		switch {
		case len(pk) == 33 && (pk[0] == 2 || pk[0] == 3):
			x, y := elliptic.UnmarshalCompressed(elliptic.P256(), pk)
			if x == nil {
				return key{}, fmt.Errorf("%w: not a P-256 point", ErrInvalidPublicKey)
			}
			unc = make([]byte, 65)
			unc[0] = 4
			x.FillBytes(unc[1:33])
			y.FillBytes(unc[33:])
		case len(pk) == 65:
			if _, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pk); err != nil {
				return key{}, fmt.Errorf("%w: not a P-256 point", ErrInvalidPublicKey)
			}
			unc = append([]byte(nil), pk...)
		default:
			return key{}, fmt.Errorf("%w: P-256 key must be 33 or 65 bytes", ErrInvalidPublicKey)
		}
		comp := make([]byte, 33)
		comp[0] = 2 | unc[64]&1
		copy(comp[1:], unc[1:33])
		return key{curve: curve, compressed: comp, uncompressed: unc}, nil
	case CurveEd25519:
		if len(pk) != 32 {
			return key{}, fmt.Errorf("%w: Ed25519 key must be 32 bytes, got %d", ErrInvalidPublicKey, len(pk))
		}
		c := append([]byte(nil), pk...)
		return key{curve: curve, compressed: c, uncompressed: c}, nil
	}
	return key{}, fmt.Errorf("%w: %q", ErrInvalidCurve, curve)
}

// Normalize is the form an address is stored and looked up in: EVM-style hex addresses (0x…)
// in lowercase, whatever their checksum casing; every other format as given (base58 and bech32
// are case-sensitive or already lowercase).
func Normalize(a string) string {
	if strings.HasPrefix(a, "0x") || strings.HasPrefix(a, "0X") {
		return strings.ToLower(a)
	}
	return a
}
