package tron

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
		Name       string `json:"name"`
		RawDataHex string `json:"rawDataHex"`
		TxID       string `json:"txID"`
		Signature  string `json:"signature"`
		SignedHex  string `json:"signedHex"`
	} `json:"transactions"`
}

func loadVectors(t testing.TB) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/tron.json")
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
	b, err := hex.DecodeString(s)
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

func TestSignMatchesTronWeb(t *testing.T) {
	v := loadVectors(t)
	sign := testSigner(t, v.PrivateKey)
	for _, c := range v.Transactions {
		t.Run(c.Name, func(t *testing.T) {
			tx, err := ParseRaw(unhex(t, c.RawDataHex))
			if err != nil {
				t.Fatal(err)
			}
			h := tx.SigningHash()
			if hex.EncodeToString(h[:]) != c.TxID {
				t.Fatalf("signing hash %x, want txID %s", h, c.TxID)
			}
			signed, err := tx.Sign(sign)
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(signed); got != c.SignedHex {
				t.Fatalf("signed\n got %s\nwant %s", got, c.SignedHex)
			}
			// The signature TronWeb's ecRecover accepted is the one we embed.
			if !strings.Contains(hex.EncodeToString(signed), strings.ToLower(c.Signature)) {
				t.Fatal("signature differs from TronWeb's")
			}
		})
	}
}

func TestPolicyView(t *testing.T) {
	v := loadVectors(t)
	views := map[string]map[string]any{}
	for _, c := range v.Transactions {
		tx, err := ParseRaw(unhex(t, c.RawDataHex))
		if err != nil {
			t.Fatal(err)
		}
		views[c.Name] = tx.PolicyView()
	}
	tests := []struct {
		tx, path string
		want     any
	}{
		{"trx transfer", "ref_block_bytes", "8a3c"},
		{"trx transfer", "ref_block_hash", "b7a1f3a0c1d2e3f4"},
		{"trx transfer", "expiration", big.NewInt(1763800000000)},
		{"trx transfer", "timestamp", big.NewInt(1763799940000)},
		{"trx transfer", "fee_limit", big.NewInt(0)},
		{"trx transfer", "data", ""},
		{"trx transfer", "contract.type", "TransferContract"},
		{"trx transfer", "contract.owner_address", v.Address},
		{"trx transfer", "contract.to_address", "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy"},
		{"trx transfer", "contract.amount", big.NewInt(1500000)},
		{"trx transfer", "contract.permission_id", big.NewInt(0)},
		{"trc20 transfer", "data", "invoice 42"},
		{"trc20 transfer", "fee_limit", big.NewInt(100000000)},
		{"trc20 transfer", "contract.type", "TriggerSmartContract"},
		{"trc20 transfer", "contract.contract_address", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"},
		{"trc20 transfer", "contract.call_value", big.NewInt(0)},
		{
			"trc20 transfer",
			"contract.data",
			"a9059cbb00000000000000000000000077944d19c052b73ee2286823aa83f8138cb7032f00000000000000000000000000000000000000000000000000000000000f4240",
		},
		{"freeze balance v2", "contract.type", "FreezeBalanceV2Contract"},
		{"freeze balance v2", "contract.frozen_balance", big.NewInt(10000000)},
		{"freeze balance v2", "contract.resource", "ENERGY"},
	}
	for _, tc := range tests {
		t.Run(tc.tx+"/"+tc.path, func(t *testing.T) {
			var got any
			if k, ok := strings.CutPrefix(tc.path, "contract."); ok {
				got = views[tc.tx]["contract"].([]any)[0].(map[string]any)[k]
			} else {
				got = views[tc.tx][tc.path]
			}
			if w, ok := tc.want.(*big.Int); ok {
				if g, _ := got.(*big.Int); g == nil || g.Cmp(w) != 0 {
					t.Fatalf("got %v, want %v", got, w)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOtherContractTypes builds parameters by hand for the remaining policy contract types.
func TestOtherContractTypes(t *testing.T) {
	owner, _ := hex.DecodeString("412c7536e3605d9c16a7a3d7b1898e529396a65c23")
	recv, _ := hex.DecodeString("4177944d19c052b73ee2286823aa83f8138cb7032f")
	varint := func(num, v uint64) []byte { return appendVarint(appendVarint(nil, num<<3), v) }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	build := func(code uint64, name string, param []byte) []byte {
		anyMsg := cat(
			appendBytesField(nil, 1, []byte("type.googleapis.com/protocol."+name)),
			appendBytesField(nil, 2, param),
		)
		contract := cat(varint(1, code), appendBytesField(nil, 2, anyMsg), varint(5, 2))
		return cat(appendBytesField(nil, 1, []byte{1, 2}), appendBytesField(nil, 4, []byte{1, 2, 3, 4, 5, 6, 7, 8}),
			varint(8, 1000), appendBytesField(nil, 11, contract), varint(14, 900))
	}
	key := cat(appendBytesField(nil, 1, recv), varint(2, 1))
	perm := cat(varint(1, 2), varint(2, 2), appendBytesField(nil, 3, []byte("active0")), varint(4, 1),
		appendBytesField(nil, 6, []byte{0x7f, 0xff}), appendBytesField(nil, 7, key))
	ownerPerm := cat(
		varint(1, 0),
		appendBytesField(nil, 3, []byte("owner")),
		varint(4, 1),
		appendBytesField(nil, 7, key),
	)
	tests := []struct {
		name  string
		raw   []byte
		check map[string]any
	}{
		{
			"delegate",
			build(57, "DelegateResourceContract", cat(appendBytesField(nil, 1, owner), varint(2, 1), varint(3, 5000000),
				appendBytesField(nil, 4, recv), varint(5, 1), varint(6, 86400))),
			map[string]any{
				"resource":         "ENERGY",
				"balance":          big.NewInt(5000000),
				"receiver_address": "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy",
				"lock":             true,
				"lock_period":      big.NewInt(86400),
				"permission_id":    big.NewInt(2),
			},
		},
		{
			"undelegate",
			build(
				58,
				"UnDelegateResourceContract",
				cat(appendBytesField(nil, 1, owner), varint(3, 7), appendBytesField(nil, 4, recv)),
			),
			map[string]any{"resource": "BANDWIDTH", "balance": big.NewInt(7)},
		},
		{
			"unfreeze v2",
			build(55, "UnfreezeBalanceV2Contract", cat(appendBytesField(nil, 1, owner), varint(2, 9), varint(3, 1))),
			map[string]any{"unfreeze_balance": big.NewInt(9), "resource": "ENERGY"},
		},
		{
			"permission update",
			build(
				46,
				"AccountPermissionUpdateContract",
				cat(
					appendBytesField(nil, 1, owner),
					appendBytesField(nil, 2, ownerPerm),
					appendBytesField(nil, 4, perm),
				),
			),
			map[string]any{"owner_address": "TE2H9hWjzYdwzDFRJfx9BFhr4MmjH1CHaz"},
		},
		{"withdraw expire unfreeze", build(56, "WithdrawExpireUnfreezeContract", appendBytesField(nil, 1, owner)),
			map[string]any{
				"type":          "WithdrawExpireUnfreezeContract",
				"owner_address": "TE2H9hWjzYdwzDFRJfx9BFhr4MmjH1CHaz",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := ParseRaw(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			c := tx.PolicyView()["contract"].([]any)[0].(map[string]any)
			for k, want := range tc.check {
				got := c[k]
				if w, ok := want.(*big.Int); ok {
					if g, _ := got.(*big.Int); g == nil || g.Cmp(w) != 0 {
						t.Errorf("%s = %v, want %v", k, got, w)
					}
				} else if got != want {
					t.Errorf("%s = %v, want %v", k, got, want)
				}
			}
			if tc.name == "permission update" {
				actives := c["actives"].([]any)
				p := actives[0].(map[string]any)
				if p["type"] != "Active" || p["permission_name"] != "active0" || p["operations"] != "7fff" ||
					p["keys"].([]any)[0].(map[string]any)["address"] != "TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy" {
					t.Errorf("actives %v", actives)
				}
				if c["owner"].(map[string]any)["type"] != "Owner" {
					t.Errorf("owner %v", c["owner"])
				}
			}
		})
	}
}

func TestParseRawRejects(t *testing.T) {
	v := loadVectors(t)
	transfer := unhex(t, v.Transactions[0].RawDataHex)
	twoContracts := append(append([]byte{}, transfer...), transfer[21:21+2+0x67]...)
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"empty", nil, "empty"},
		{"truncated", transfer[:len(transfer)-3], "truncated"},
		{"no contract", transfer[:21], "0 contracts"},
		{"two contracts", twoContracts, "2 contracts"},
		{"duplicate field", append(append([]byte{}, transfer...), 0x0a, 0x01, 0x00), "appears twice"},
		{"wrong wire type", append([]byte{0x08, 0x01}, transfer[4:]...), "wire type"},
		{"group", []byte{0x0b}, "wire type 3"},
		{"long varint", []byte{0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRaw(tc.raw)
			if err == nil || !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseRawRejectsMismatchedParameter(t *testing.T) {
	v := loadVectors(t)
	raw := string(unhex(t, v.Transactions[0].RawDataHex))
	// Claim TriggerSmartContract (31) over a TransferContract parameter.
	bad := strings.Replace(raw, "\x08\x01\x12\x63", "\x08\x1f\x12\x63", 1)
	if bad == raw {
		t.Fatal("fixture changed")
	}
	if _, err := ParseRaw([]byte(bad)); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("err = %v", err)
	}
}

func TestSignRejectsBadSigner(t *testing.T) {
	vec := loadVectors(t)
	good := testSigner(t, vec.PrivateKey)
	tx, _ := ParseRaw(unhex(t, vec.Transactions[0].RawDataHex))
	for name, s := range map[string]RecoverableSigner{
		"error":  func([32]byte) (r, s [32]byte, v byte, err error) { return r, s, 0, errors.New("down") },
		"v 27":   func(d [32]byte) (r, s [32]byte, v byte, err error) { r, s, _, err = good(d); return r, s, 27, err },
		"zero r": func([32]byte) (r, s [32]byte, v byte, err error) { s[31] = 1; return r, s, 0, nil },
	} {
		if _, err := tx.Sign(s); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func FuzzParseRaw(f *testing.F) {
	v := loadVectors(f)
	for _, c := range v.Transactions {
		f.Add(unhex(f, c.RawDataHex))
	}
	f.Add(permissions(2, 3))
	f.Add(transfer(varintField(15, 0)))
	sign := testSigner(f, v.PrivateKey)
	if tx, err := ParseRaw(unhex(f, v.Transactions[0].RawDataHex)); err == nil {
		_, _ = tx.Sign(sign) // secp256k1's tables are built on first use
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tx *Tx
		var err, signErr error
		// Parse, view and sign: linear, a few dozen bytes per byte at most (TestParseRawCost).
		costtest.Budget(t, b, 64, 64<<10, func() {
			if tx, err = ParseRaw(b); err == nil {
				_ = tx.PolicyView()
				_, signErr = tx.Sign(sign)
			}
		})
		if err == nil && signErr != nil {
			t.Fatal(signErr)
		}
	})
}
