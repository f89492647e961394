package tempo

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/latchkey/latchkey/internal/costtest"
)

type vectors struct {
	PrivateKey   string `json:"privateKey"`
	Address      string `json:"address"`
	Transactions []struct {
		Name        string `json:"name"`
		Unsigned    string `json:"unsigned"`
		SigningHash string `json:"signingHash"`
		Signed      string `json:"signed"`
	} `json:"transactions"`
}

func loadVectors(t testing.TB, file string) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testSigner(t testing.TB, keyHex string) RecoverableSigner {
	priv := secp256k1.PrivKeyFromBytes(unhex(t, keyHex))
	return func(d [32]byte) (r, s [32]byte, v byte, err error) {
		sig := ecdsa.SignCompact(priv, d[:], false)
		copy(r[:], sig[1:33])
		copy(s[:], sig[33:])
		return r, s, sig[0] - 27, nil
	}
}

func TestSignMatchesOx(t *testing.T) {
	for _, file := range []string{"ox-tests.json", "tempo.json"} {
		v := loadVectors(t, file)
		sign := testSigner(t, v.PrivateKey)
		for _, c := range v.Transactions {
			t.Run(c.Name, func(t *testing.T) {
				tx, err := ParseUnsigned(unhex(t, c.Unsigned))
				if err != nil {
					t.Fatal(err)
				}
				if c.SigningHash != "" {
					h := tx.SigningHash()
					if got := "0x" + hex.EncodeToString(h[:]); got != c.SigningHash {
						t.Fatalf("signing hash %s, want %s", got, c.SigningHash)
					}
				}
				signed, err := tx.Sign(sign)
				if err != nil {
					t.Fatal(err)
				}
				if got := "0x" + hex.EncodeToString(signed); got != c.Signed {
					t.Fatalf("signed\n got %s\nwant %s", got, c.Signed)
				}
			})
		}
	}
}

func TestPolicyView(t *testing.T) {
	v := loadVectors(t, "tempo.json")
	views := map[string]map[string]any{}
	for _, c := range v.Transactions {
		tx, err := ParseUnsigned(unhex(t, c.Unsigned))
		if err != nil {
			t.Fatal(err)
		}
		views[c.Name] = tx.PolicyView(v.Address)
	}
	call := func(tx string, i int) map[string]any { return views[tx]["calls"].([]any)[i].(map[string]any) }
	gwei := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e9)) }
	tests := []struct {
		name      string
		got, want any
	}{
		{"from", views["single call with fee token"]["from"], strings.ToLower(v.Address)},
		{"chain_id", views["single call with fee token"]["chain_id"], big.NewInt(4217)},
		{"nonce", views["single call with fee token"]["nonce"], big.NewInt(7)},
		{"gas_limit", views["single call with fee token"]["gas_limit"], big.NewInt(100000)},
		{"max_fee_per_gas", views["single call with fee token"]["max_fee_per_gas"], gwei(20)},
		{"max_priority_fee_per_gas", views["single call with fee token"]["max_priority_fee_per_gas"], gwei(1)},
		{"fee_token", views["single call with fee token"]["fee_token"], "0x20c0000000000000000000000000000000000001"},
		{"valid_before unset", views["single call with fee token"]["valid_before"], big.NewInt(0)},
		{"call to", call("single call with fee token", 0)["to"], "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48"},
		{"call selector", call("single call with fee token", 0)["function_signature"], "0xa9059cbb"},
		{"call input", call("single call with fee token", 0)["input"].(string)[:10], "0xa9059cbb"},
		{"native fee token", views["batch with validity window"]["fee_token"], ""},
		{"valid_after", views["batch with validity window"]["valid_after"], big.NewInt(1700000000)},
		{"valid_before", views["batch with validity window"]["valid_before"], big.NewInt(1900000000)},
		{"value call", call("batch with validity window", 0)["value"], big.NewInt(5)},
		{"no input selector", call("batch with validity window", 0)["function_signature"], ""},
		{"no input", call("batch with validity window", 0)["input"], "0x"},
		{"creation to", call("batch with validity window", 2)["to"], ""},
		{"short input selector", call("batch with validity window", 2)["function_signature"], ""},
		{"calls count", len(views["batch with validity window"]["calls"].([]any)), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if w, ok := tc.want.(*big.Int); ok {
				if g, _ := tc.got.(*big.Int); g == nil || g.Cmp(w) != 0 {
					t.Fatalf("got %v, want %v", tc.got, w)
				}
				return
			}
			if tc.got != tc.want {
				t.Fatalf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestParseUnsignedRejects(t *testing.T) {
	v := loadVectors(t, "ox-tests.json")
	unsigned := strings.TrimPrefix(v.Transactions[0].Unsigned, "0x")
	signed := strings.TrimPrefix(v.Transactions[0].Signed, "0x")
	tests := []struct{ name, in, want string }{
		{"empty", "", "empty transaction"},
		{"ethereum type", "02c0", "want 0x76"},
		{"fee payer envelope", "78c0", "fee payer's envelope"},
		{"signed", signed, "carries a signature"},
		{"trailing", unsigned + "00", "trailing bytes"},
		{"too few fields", "76c3010203", "has 3 fields"},
		{"not a list", "7680", "not an RLP list"},
		{"empty calls", tempoHex(base(4, "c0")...), "calls is empty"},
		{"bad call to", tempoHex(base(4, "c5c481808080")...), "calls[0].to is 1 bytes"},
		{"short fee token", tempoHex(base(10, "821234")...), "fee_token is 2 bytes"},
		{"sender hint", tempoHex(base(11, "94"+strings.Repeat("11", 20))...), "sender address"},
		{"bad fee payer", tempoHex(base(11, "01")...), "neither empty"},
		{"authorization list not a list", tempoHex(base(12, "80")...), "authorization_list is not a list"},
		{"signature after fields", tempoHex(append(base(-1, ""), "8401020304")...), "carries a signature"},
		{"non-canonical chain id", tempoHex(base(0, "00")...), "non-canonical"},
		{"gas over 64 bits", tempoHex(base(3, "89010000000000000000")...), "uint64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseUnsigned(unhex(t, tc.in))
			if err == nil || !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// base returns the items of a minimal valid transaction (ox's vector) with item i replaced.
func base(i int, item string) []string {
	items := []string{
		"01",
		"80",
		"80",
		"80",
		"d8d79470997970c51812dc3a010c7d01b50e0d17dc79c88080",
		"c0",
		"80",
		"80",
		"80",
		"80",
		"80",
		"80",
		"c0",
	}
	if i >= 0 {
		items[i] = item
	}
	return items
}

// tempoHex joins RLP items into 0x76 ‖ list.
func tempoHex(items ...string) string {
	content := strings.Join(items, "")
	n := len(content) / 2
	if n < 56 {
		return "76" + hex.EncodeToString([]byte{0xc0 + byte(n)}) + content
	}
	return "76f8" + hex.EncodeToString([]byte{byte(n)}) + content
}

func TestBaseIsValid(t *testing.T) {
	if got := "0x" + tempoHex(base(-1, "")...); got != loadVectors(t, "ox-tests.json").Transactions[0].Unsigned {
		t.Fatalf("base() = %s", got)
	}
}

func FuzzParseUnsigned(f *testing.F) {
	v := loadVectors(f, "tempo.json")
	for _, c := range v.Transactions {
		f.Add(unhex(f, c.Unsigned))
		f.Add(unhex(f, c.Signed))
	}
	sign := testSigner(f, v.PrivateKey)
	if tx, err := ParseUnsigned(unhex(f, v.Transactions[0].Unsigned)); err == nil {
		_, _ = tx.Sign(sign) // secp256k1's tables are built on first use
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tx *Tx
		var err, signErr error
		// Parse, view and sign cost a few times the transaction (TestParseUnsignedCost).
		costtest.Budget(t, b, 64, 64<<10, func() {
			if tx, err = ParseUnsigned(b); err == nil {
				_ = tx.PolicyView("0x0000000000000000000000000000000000000000")
				_, signErr = tx.Sign(sign)
			}
		})
		if err == nil && signErr != nil {
			t.Fatal(signErr)
		}
	})
}
