package address

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/costtest"
)

type vectorRow struct {
	Format, Curve, Key, PublicKey, Address, Library, Note string
}

func loadVectors(t testing.TB) []vectorRow {
	t.Helper()
	raw, err := os.ReadFile("testdata/addresses.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Rows []vectorRow }
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	return file.Rows
}

// Every row of testdata/addresses.json was computed by the chain's own reference library
// (named in the row) for a fixed key; see testdata/README.md.
func TestDeriveMatchesReferenceLibraries(t *testing.T) {
	rows := loadVectors(t)
	covered := map[string]bool{}
	for _, r := range rows {
		pub, err := hex.DecodeString(r.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Derive(r.Format, r.Curve, pub)
		if err != nil || got != r.Address {
			t.Errorf(
				"%s %s key %s…: got %q, %v; %s says %q",
				r.Format,
				r.Curve,
				r.Key[:8],
				got,
				err,
				r.Library,
				r.Address,
			)
		}
		covered[r.Format] = true
	}
	for _, f := range Formats() {
		if !covered[f] {
			t.Errorf("format %s has no reference vector", f)
		}
	}
}

// Every value of the swagger enum v1AddressFormat is supported.
func TestFormatsCoverSwaggerEnum(t *testing.T) {
	raw, err := os.ReadFile("../../../spec/public_api.swagger.json")
	if err != nil {
		t.Skip("swagger not found:", err)
	}
	var spec struct {
		Definitions map[string]struct{ Enum []string }
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	enum := spec.Definitions["v1AddressFormat"].Enum
	if len(enum) == 0 {
		t.Fatal("v1AddressFormat enum not found")
	}
	have := Formats()
	for _, f := range enum {
		if !slices.Contains(have, f) {
			t.Errorf("swagger format %s not supported", f)
		}
	}
	if len(have) != len(enum) {
		t.Errorf("%d formats, swagger has %d", len(have), len(enum))
	}
}

func TestCheckCurve(t *testing.T) {
	tests := []struct {
		format, curve string
		want          error
	}{
		{"ADDRESS_FORMAT_ETHEREUM", CurveSecp256k1, nil},
		{"ADDRESS_FORMAT_ETHEREUM", CurveEd25519, ErrInvalidCurve},
		{"ADDRESS_FORMAT_ETHEREUM", CurveP256, ErrInvalidCurve},
		{"ADDRESS_FORMAT_ETHEREUM", "", ErrCurveRequired},
		{"ADDRESS_FORMAT_ETHEREUM", "CURVE_BLS", ErrInvalidCurve},
		{"ADDRESS_FORMAT_SOLANA", CurveEd25519, nil},
		{"ADDRESS_FORMAT_SOLANA", CurveSecp256k1, ErrInvalidCurve},
		{"ADDRESS_FORMAT_COMPRESSED", CurveEd25519, nil},
		{"ADDRESS_FORMAT_COMPRESSED", CurveP256, nil},
		{"ADDRESS_FORMAT_UNCOMPRESSED", CurveP256, nil},
		{"ADDRESS_FORMAT_UNCOMPRESSED", CurveEd25519, ErrInvalidCurve},
		{"ADDRESS_FORMAT_SPARK_MAINNET", CurveEd25519, ErrInvalidCurve},
		{"ADDRESS_FORMAT_SEI", CurveSecp256k1, nil},
		{"ADDRESS_FORMAT_TON_V5R1", CurveEd25519, nil},
		{"ADDRESS_FORMAT_BITCOIN_SIGNET_P2TR", CurveSecp256k1, nil},
		{"ADDRESS_FORMAT_BITCOIN_SIGNET_P2TR", CurveP256, ErrInvalidCurve},
		{"ADDRESS_FORMAT_LITECOIN", CurveSecp256k1, ErrInvalidAddressFormat},
		{"", CurveSecp256k1, ErrInvalidAddressFormat},
		{"address_format_ethereum", CurveSecp256k1, ErrInvalidAddressFormat},
	}
	for _, tt := range tests {
		err := CheckCurve(tt.format, tt.curve)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("CheckCurve(%q, %q) = %v, want %v", tt.format, tt.curve, err, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), tt.want.Error()) {
			t.Errorf("error %q lacks documented text %q", err, tt.want)
		}
	}
}

// The SDK default paths at index 0, from docs/api-notes.md §6.
func TestDefaultPath(t *testing.T) {
	want := map[string]string{
		"ADDRESS_FORMAT_ETHEREUM":               "m/44'/60'/0'/0/0",
		"ADDRESS_FORMAT_SOLANA":                 "m/44'/501'/0'/0'",
		"ADDRESS_FORMAT_COSMOS":                 "m/44'/118'/0'/0/0",
		"ADDRESS_FORMAT_TRON":                   "m/44'/195'/0'",
		"ADDRESS_FORMAT_SUI":                    "m/44'/784'/0'/0'/0'",
		"ADDRESS_FORMAT_APTOS":                  "m/44'/637'/0'/0'/0'",
		"ADDRESS_FORMAT_BITCOIN_MAINNET_P2PKH":  "m/44'/0'/0'/0/0",
		"ADDRESS_FORMAT_BITCOIN_MAINNET_P2SH":   "m/44'/0'/0'/0/0",
		"ADDRESS_FORMAT_BITCOIN_MAINNET_P2WPKH": "m/84'/0'/0'/0/0",
		"ADDRESS_FORMAT_BITCOIN_MAINNET_P2WSH":  "m/48'/0'/0'/2'/0/0",
		"ADDRESS_FORMAT_BITCOIN_MAINNET_P2TR":   "m/86'/0'/0'/0/0",
		"ADDRESS_FORMAT_BITCOIN_TESTNET_P2SH":   "m/44'/1'/0'/0/0",
		"ADDRESS_FORMAT_BITCOIN_SIGNET_P2WSH":   "m/48'/1'/0'/2'/0/0",
		"ADDRESS_FORMAT_BITCOIN_REGTEST_P2TR":   "m/86'/1'/0'/0/0",
		"ADDRESS_FORMAT_SEI":                    "m/44'/118'/0'/0'/0'",
		"ADDRESS_FORMAT_XLM":                    "m/44'/148'/0'",
		"ADDRESS_FORMAT_DOGE_MAINNET":           "m/44'/3'/0'/0/0",
		"ADDRESS_FORMAT_DOGE_TESTNET":           "m/44'/3'/0'/0/0",
		"ADDRESS_FORMAT_TON_V3R2":               "m/44'/607'/0'/0'/0'",
		"ADDRESS_FORMAT_TON_V4R2":               "m/44'/607'/0'/0'/0'",
		"ADDRESS_FORMAT_XRP":                    "m/44'/144'/0'/0'/0'",
		"ADDRESS_FORMAT_SPARK_MAINNET":          "m/86'/0'/0'/0/0",
		"ADDRESS_FORMAT_SPARK_REGTEST":          "m/86'/1'/0'/0/0",
		"ADDRESS_FORMAT_COMPRESSED":             "m/0'/0",
		"ADDRESS_FORMAT_UNCOMPRESSED":           "m/0'/0",
		"ADDRESS_FORMAT_NOPE":                   "",
	}
	for f, p := range want {
		if got := DefaultPath(f); got != p {
			t.Errorf("DefaultPath(%s) = %q, want %q", f, got, p)
		}
	}
	for _, f := range Formats() {
		if DefaultPath(f) == "" {
			t.Errorf("%s has no default path", f)
		}
	}
}

func TestDeriveRejectsBadKeys(t *testing.T) {
	g, _ := hex.DecodeString("0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798")
	notOnCurve := append([]byte{0x02}, make([]byte, 32)...)
	notOnCurve[32] = 7 // x = 7 is on neither secp256k1 nor P-256
	tests := []struct {
		format, curve string
		pk            []byte
	}{
		{"ADDRESS_FORMAT_ETHEREUM", CurveSecp256k1, nil},
		{"ADDRESS_FORMAT_ETHEREUM", CurveSecp256k1, g[:32]},
		{"ADDRESS_FORMAT_ETHEREUM", CurveSecp256k1, notOnCurve},
		{"ADDRESS_FORMAT_ETHEREUM", CurveSecp256k1, append([]byte{0x05}, g[1:]...)},
		{"ADDRESS_FORMAT_COMPRESSED", CurveP256, notOnCurve},
		{"ADDRESS_FORMAT_COMPRESSED", CurveP256, g[:20]},
		{"ADDRESS_FORMAT_SOLANA", CurveEd25519, g},
		{"ADDRESS_FORMAT_SOLANA", CurveEd25519, g[:31]},
	}
	for _, tt := range tests {
		if _, err := Derive(tt.format, tt.curve, tt.pk); !errors.Is(err, ErrInvalidPublicKey) {
			t.Errorf("Derive(%s, %s, %x) = %v, want ErrInvalidPublicKey", tt.format, tt.curve, tt.pk, err)
		}
	}
	if _, err := Derive("ADDRESS_FORMAT_SOLANA", CurveSecp256k1, g); !errors.Is(err, ErrInvalidCurve) {
		t.Errorf("curve mismatch: %v", err)
	}
}

// Uncompressed SEC1 input gives the same address as compressed.
func TestDeriveAcceptsUncompressedInput(t *testing.T) {
	for _, r := range loadVectors(t) {
		if r.Format != "ADDRESS_FORMAT_UNCOMPRESSED" {
			continue
		}
		unc, _ := hex.DecodeString(r.Address)
		for _, f := range []string{"ADDRESS_FORMAT_COMPRESSED", "ADDRESS_FORMAT_UNCOMPRESSED"} {
			a, err1 := Derive(f, r.Curve, unc)
			comp, _ := hex.DecodeString(r.PublicKey)
			b, err2 := Derive(f, r.Curve, comp)
			if err1 != nil || err2 != nil || a != b {
				t.Errorf("%s %s: %q/%v vs %q/%v", f, r.Curve, a, err1, b, err2)
			}
		}
	}
}

func FuzzDerive(f *testing.F) {
	formats := Formats()
	slices.Sort(formats)
	curves := []string{CurveSecp256k1, CurveEd25519, CurveP256, ""}
	for _, r := range loadVectors(f) {
		pk, _ := hex.DecodeString(r.PublicKey)
		f.Add(uint8(slices.Index(formats, r.Format)), uint8(slices.Index(curves, r.Curve)), pk)
		_, _ = Derive(r.Format, r.Curve, pk) // libraries' tables are built on first use
	}
	f.Fuzz(func(t *testing.T, fi, ci uint8, pk []byte) {
		format := formats[int(fi)%len(formats)]
		curve := curves[int(ci)%len(curves)]
		var addr string
		var err error
		// A public key is at most 65 bytes (longer ones are refused first): a fixed cost.
		costtest.Budget(t, pk, 16, 64<<10, func() { addr, err = Derive(format, curve, pk) })
		if err == nil && addr == "" {
			t.Fatalf("%s %s %x: empty address without error", format, curve, pk)
		}
	})
}
