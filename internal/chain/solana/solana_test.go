package solana

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/costtest"
)

type vectorFile struct {
	Generator     string   `json:"generator"`
	SignerSeedHex string   `json:"signer_seed_hex"`
	SignerPubkey  string   `json:"signer_pubkey"`
	Vectors       []vector `json:"vectors"`
}

type vector struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	UnsignedHex string `json:"unsigned_hex"`
	SignedHex   string `json:"signed_hex"`
	Verified    bool   `json:"verified"`
	Expect      struct {
		SignerIndex     int                 `json:"signer_index"`
		AddressTableKey string              `json:"address_table_key"`
		OtherSigner     string              `json:"other_signer"`
		Transfers       []map[string]string `json:"transfers"`
		SPLTransfers    []map[string]string `json:"spl_transfers"`
	} `json:"expect"`
}

func loadVectors(t testing.TB) vectorFile {
	t.Helper()
	b, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f vectorFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	return f
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSignsTheLatchkeySlotLikeWeb3js(t *testing.T) {
	f := loadVectors(t)
	key := ed25519.NewKeyFromSeed(mustHex(t, f.SignerSeedHex))
	pub := key.Public().(ed25519.PublicKey)
	if got := base58.Encode(pub); got != f.SignerPubkey {
		t.Fatalf("seed gives %s, vectors say %s", got, f.SignerPubkey)
	}
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			if !v.Verified {
				t.Fatal("the generator did not verify this vector")
			}
			tx, err := ParseTransaction(mustHex(t, v.UnsignedHex))
			if err != nil {
				t.Fatal(err)
			}
			if tx.Versioned() != (v.Version == "v0") {
				t.Fatalf("Versioned() = %v for a %s vector", tx.Versioned(), v.Version)
			}
			if err := CheckNoLookupProgramIDs(tx); err != nil {
				t.Fatal(err)
			}
			slot, err := tx.SignerIndex(pub)
			if err != nil {
				t.Fatal(err)
			}
			if slot != v.Expect.SignerIndex {
				t.Fatalf("slot %d, want %d", slot, v.Expect.SignerIndex)
			}
			signed, err := tx.WithSignature(slot, ed25519.Sign(key, tx.Message()))
			if err != nil {
				t.Fatal(err)
			}
			if want := mustHex(t, v.SignedHex); !bytes.Equal(signed, want) {
				t.Fatalf("signed transaction differs\n got %x\nwant %x", signed, want)
			}
			// The signed transaction parses again, and its message is unchanged.
			again, err := ParseTransaction(signed)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Message(), tx.Message()) {
				t.Fatal("message changed by signing")
			}
			if v.Expect.OtherSigner != "" {
				other, _ := base58.Decode(v.Expect.OtherSigner)
				if i, err := tx.SignerIndex(other); err != nil || i == slot {
					t.Fatalf("other signer: slot %d, %v", i, err)
				}
			}
		})
	}
}

func TestPolicyViewMatchesWhatTheGeneratorBuilt(t *testing.T) {
	f := loadVectors(t)
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			tx, err := ParseTransaction(mustHex(t, v.UnsignedHex))
			if err != nil {
				t.Fatal(err)
			}
			view := tx.PolicyView()
			checkTransfers(t, "transfers", view["transfers"].([]any), v.Expect.Transfers)
			checkTransfers(t, "spl_transfers", view["spl_transfers"].([]any), v.Expect.SPLTransfers)
			if view["recent_blockhash"] != base58.Encode(bytes.Repeat([]byte{0x42}, 32)) {
				t.Errorf("recent_blockhash = %v", view["recent_blockhash"])
			}
			keys := view["account_keys"].([]any)
			if keys[v.Expect.SignerIndex] != f.SignerPubkey {
				t.Errorf("account_keys[%d] = %v, want the signer", v.Expect.SignerIndex, keys[v.Expect.SignerIndex])
			}
			lookups := view["address_table_lookups"].([]any)
			if v.Expect.AddressTableKey == "" {
				if len(lookups) != 0 {
					t.Errorf("legacy transaction has lookups %v", lookups)
				}
				return
			}
			if len(lookups) != 1 || lookups[0].(map[string]any)["address_table_key"] != v.Expect.AddressTableKey {
				t.Fatalf("address_table_lookups = %v", lookups)
			}
			// The second instruction reads one account through the table.
			in := view["instructions"].([]any)[1].(map[string]any)
			il := in["address_table_lookups"].([]any)
			if len(il) != 1 || il[0].(map[string]any)["address_table_key"] != v.Expect.AddressTableKey {
				t.Errorf("instruction lookups = %v", il)
			}
			acc := in["accounts"].([]any)[0].(map[string]any)
			if acc["account_key"] != AddressTableLookupKey || acc["writable"] != false || acc["signer"] != false {
				t.Errorf("lookup account = %v", acc)
			}
			if in["instruction_data_hex"] != "deadbeef" {
				t.Errorf("instruction_data_hex = %v", in["instruction_data_hex"])
			}
		})
	}
}

func checkTransfers(t *testing.T, field string, got []any, want []map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d: %v", field, len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i].(map[string]any)
		for k, wv := range w {
			var gv string
			switch x := g[k].(type) {
			case *big.Int:
				gv = x.String()
			case string:
				gv = x
			default:
				t.Fatalf("%s[%d].%s has type %T", field, i, k, g[k])
			}
			if gv != wv {
				t.Errorf("%s[%d].%s = %s, want %s", field, i, k, gv, wv)
			}
		}
	}
}

func TestSignerIndexRejectsOtherKeys(t *testing.T) {
	f := loadVectors(t)
	tx, err := ParseTransaction(mustHex(t, f.Vectors[0].UnsignedHex))
	if err != nil {
		t.Fatal(err)
	}
	view := tx.PolicyView()
	recipient, _ := base58.Decode(view["account_keys"].([]any)[1].(string))
	for name, key := range map[string][]byte{
		"a non-signer account": recipient,
		"an unknown key":       bytes.Repeat([]byte{1}, 32),
	} {
		if _, err := tx.SignerIndex(key); !errors.Is(err, ErrNotSigner) {
			t.Errorf("%s: err = %v, want ErrNotSigner", name, err)
		}
	}
	if _, err := tx.SignerIndex(make([]byte, 31)); err == nil {
		t.Error("31-byte key accepted")
	}
	if _, err := tx.WithSignature(1, make([]byte, 64)); err == nil {
		t.Error("slot past the end accepted")
	}
	if _, err := tx.WithSignature(0, make([]byte, 63)); err == nil {
		t.Error("short signature accepted")
	}
}

// legacyTx builds a small legacy transaction for the structural tests.
func legacyTx(numSigs byte, header [3]byte, keys int, instr []byte) []byte {
	var b []byte
	b = append(b, numSigs)
	b = append(b, make([]byte, 64*int(numSigs))...)
	b = append(b, header[:]...)
	b = append(b, byte(keys))
	for i := 0; i < keys; i++ {
		b = append(b, bytes.Repeat([]byte{byte(i + 1)}, 32)...)
	}
	b = append(b, bytes.Repeat([]byte{0x42}, 32)...)
	return append(b, instr...)
}

func TestParseRejectsMalformedTransactions(t *testing.T) {
	good := legacyTx(1, [3]byte{1, 0, 1}, 3, []byte{1, 2, 2, 0, 1, 0})
	if _, err := ParseTransaction(good); err != nil {
		t.Fatalf("baseline: %v", err)
	}
	dup := legacyTx(1, [3]byte{1, 0, 1}, 3, []byte{1, 2, 2, 0, 1, 0})
	copy(dup[1+64+3+1+32:], bytes.Repeat([]byte{1}, 32))
	cases := []struct {
		name string
		tx   []byte
		want string
	}{
		{"empty", nil, "truncated"},
		{"no signature slots", append([]byte{0}, good[65:]...), "no signature slots"},
		{"truncated signatures", good[:40], "truncated"},
		{"trailing bytes", append(bytes.Clone(good), 0), "trailing"},
		{"truncated message", good[:len(good)-1], "truncated"},
		{"slot count differs from header", legacyTx(2, [3]byte{1, 0, 1}, 3, []byte{1, 2, 2, 0, 1, 0}), "requires 1"},
		{"read-only fee payer", legacyTx(1, [3]byte{1, 1, 1}, 3, []byte{1, 2, 2, 0, 1, 0}), "fee payer"},
		{"header past the keys", legacyTx(1, [3]byte{1, 0, 3}, 3, []byte{1, 2, 2, 0, 1, 0}), "exceed"},
		{"program index out of range", legacyTx(1, [3]byte{1, 0, 1}, 3, []byte{1, 3, 2, 0, 1, 0}), "program index"},
		{"program is the fee payer", legacyTx(1, [3]byte{1, 0, 1}, 3, []byte{1, 0, 2, 0, 1, 0}), "program index"},
		{"account index out of range", legacyTx(1, [3]byte{1, 0, 1}, 3, []byte{1, 2, 2, 0, 9, 0}), "out of range"},
		{"duplicate key", dup, "twice"},
		{"unsupported version", append(append(bytes.Clone(good[:65]), 0x81), good[65:]...), "version 1"},
		{"non-minimal compact-u16", append([]byte{0x81, 0x00}, good[1:]...), "minimally"},
		{"overlong compact-u16", append([]byte{0xff, 0xff, 0xff}, good[1:]...), "16 bits"},
		{"instruction count past the input", legacyTx(1, [3]byte{1, 0, 1}, 3, []byte{0x7f}), "instruction count"},
		{"data length past the input", legacyTx(1, [3]byte{1, 0, 1}, 3, []byte{1, 2, 0, 0x10}), "truncated"},
		{"over the packet size", refsTx(1, 1, MaxTransactionSize), "at most 1232"},
		{"too many instructions", refsTx(MaxInstructions+1, 1, 0), "at most 64 allowed"},
		{"too many accounts in an instruction", refsTx(1, MaxInstructionAccounts+1, 0), "at most 255 allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTransaction(c.tx)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

// TestLimitsAcceptWhatTheNetworkAccepts: a transaction of exactly the packet size, with the
// most instructions and the most account references an instruction may have, parses.
func TestLimitsAcceptWhatTheNetworkAccepts(t *testing.T) {
	for name, tx := range map[string][]byte{
		"instructions":         refsTx(MaxInstructions, 1, 0),
		"instruction accounts": refsTx(1, MaxInstructionAccounts, 0),
	} {
		if _, err := ParseTransaction(tx); err != nil {
			t.Errorf("%s at the limit: %v", name, err)
		}
	}
	full := refsTx(1, 1, 0)
	full = refsTx(1, 1, MaxTransactionSize-len(full)-1) // the data length takes two bytes
	if len(full) != MaxTransactionSize {
		t.Fatalf("built %d bytes", len(full))
	}
	if _, err := ParseTransaction(full); err != nil {
		t.Errorf("a transaction of the packet size: %v", err)
	}
}

func TestCheckNoLookupProgramIDsRejectsTableProgram(t *testing.T) {
	// v0: one signer, two static keys, a program at index 2, loaded from a lookup table.
	var b []byte
	b = append(b, 1)
	b = append(b, make([]byte, 64)...)
	b = append(b, 0x80, 1, 0, 1, 2)
	b = append(b, bytes.Repeat([]byte{1}, 32)...)
	b = append(b, bytes.Repeat([]byte{2}, 32)...)
	b = append(b, bytes.Repeat([]byte{0x42}, 32)...)
	b = append(b, 1, 2, 1, 0, 0)                  // instruction: program 2, accounts [0], no data
	b = append(b, 1)                              // one lookup
	b = append(b, bytes.Repeat([]byte{9}, 32)...) // table key
	b = append(b, 0, 1, 5)                        // no writable, read-only [5]
	tx, err := ParseTransaction(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckNoLookupProgramIDs(tx); err == nil || !strings.Contains(err.Error(), "lookup table") {
		t.Fatalf("err = %v", err)
	}
	view := tx.PolicyView()
	if pk := view["program_keys"].([]any); len(pk) != 1 || pk[0] != AddressTableLookupKey {
		t.Fatalf("program_keys = %v", pk)
	}
	lk := view["address_table_lookups"].([]any)[0].(map[string]any)
	if ro := lk["readonly_indexes"].([]any); len(ro) != 1 || ro[0] != 5 {
		t.Fatalf("readonly_indexes = %v", ro)
	}
}

func FuzzParseTransaction(f *testing.F) {
	for _, v := range loadVectors(f).Vectors {
		f.Add(mustHex(f, v.UnsignedHex))
		f.Add(mustHex(f, v.SignedHex))
	}
	f.Add(refsTx(3, 5, 2))
	f.Add(lookupsTx(3))
	f.Fuzz(func(t *testing.T, b []byte) {
		var tx *Tx
		var err error
		// A transaction is at most MaxTransactionSize bytes: parse and view cost a bounded
		// amount whatever the input.
		costtest.Budget(t, b, 512, 64<<10, func() {
			if tx, err = ParseTransaction(b); err == nil {
				_ = tx.PolicyView()
			}
		})
		if err != nil {
			return
		}
		_ = CheckNoLookupProgramIDs(tx)
		msg := tx.Message()
		if !bytes.HasSuffix(b, msg) {
			t.Fatal("message is not the tail of the transaction")
		}
		out, err := tx.WithSignature(0, bytes.Repeat([]byte{0xab}, 64))
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseTransaction(out)
		if err != nil {
			t.Fatalf("signed transaction no longer parses: %v", err)
		}
		if !bytes.Equal(again.Message(), msg) {
			t.Fatal("signing changed the message")
		}
	})
}
