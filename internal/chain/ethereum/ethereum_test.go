package ethereum

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/ethereum/go-ethereum/crypto"

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
		From        string `json:"from"`
	} `json:"transactions"`
	TypedData []struct {
		Name          string `json:"name"`
		ViemPayload   string `json:"viemPayload"`
		EthersPayload string `json:"ethersPayload"`
		Digest        string `json:"digest"`
		Signature     string `json:"signature"`
	} `json:"typedData"`
	Authorizations []struct {
		Payload          string `json:"payload"`
		Digest           string `json:"digest"`
		R                string `json:"r"`
		S                string `json:"s"`
		YParity          byte   `json:"yParity"`
		RecoveredAddress string `json:"recoveredAddress"`
	} `json:"authorizations"`
}

func loadVectors(t testing.TB) vectors {
	return readVectors[vectors](t, "testdata/ethereum.json")
}

// readVectors reads a JSON file of test vectors into a T.
func readVectors[T any](t testing.TB, path string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v T
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

// testSigner signs with a fixed key through decred's RFC 6979 SignCompact, as custody will.
func testSigner(t testing.TB, keyHex string) RecoverableSigner {
	priv := secp256k1.PrivKeyFromBytes(unhex(t, keyHex))
	return func(d [32]byte) (r, s [32]byte, v byte, err error) {
		sig := ecdsa.SignCompact(priv, d[:], false)
		copy(r[:], sig[1:33])
		copy(s[:], sig[33:])
		return r, s, sig[0] - 27, nil
	}
}

func TestSignMatchesViem(t *testing.T) {
	v := loadVectors(t)
	sign := testSigner(t, v.PrivateKey)
	for _, c := range v.Transactions {
		t.Run(c.Name, func(t *testing.T) {
			tx, err := ParseUnsigned(unhex(t, c.Unsigned))
			if err != nil {
				t.Fatal(err)
			}
			h := tx.SigningHash()
			if got := "0x" + hex.EncodeToString(h[:]); got != c.SigningHash {
				t.Fatalf("signing hash %s, want %s", got, c.SigningHash)
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

func TestPolicyView(t *testing.T) {
	v := loadVectors(t)
	byName := map[string][]byte{}
	for _, c := range v.Transactions {
		byName[c.Name] = unhex(t, c.Unsigned)
	}
	gwei := func(n int64) *big.Int { return new(big.Int).Mul(big.NewInt(n), big.NewInt(1e9)) }
	tests := []struct {
		name string
		want map[string]any
	}{
		{
			"legacy eip155",
			map[string]any{"type": "LEGACY", "to": "0x3535353535353535353535353535353535353535", "data": "0x",
				"value": new(
					big.Int,
				).Mul(big.NewInt(1e9), big.NewInt(1e9)),
				"gas": big.NewInt(21000), "gas_price": gwei(20), "chain_id": big.NewInt(1), "nonce": big.NewInt(9)},
		},
		{
			"legacy pre-155",
			map[string]any{"type": "LEGACY", "chain_id": big.NewInt(0), "value": big.NewInt(1), "gas_price": gwei(1)},
		},
		{
			"legacy contract creation",
			map[string]any{"to": "", "data": "0x6080604052", "chain_id": big.NewInt(11155111)},
		},
		{
			"eip2930 access list",
			map[string]any{
				"type":            "TYPE_1",
				"data":            "0xdeadbeef",
				"gas_price":       gwei(30),
				"chain_id":        big.NewInt(137),
				"max_fee_per_gas": nil,
			},
		},
		{
			"eip1559 erc20 transfer",
			map[string]any{"type": "TYPE_2", "to": "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48", "gas_price": gwei(40),
				"max_fee_per_gas": gwei(
					40,
				), "max_priority_fee_per_gas": gwei(2), "nonce": big.NewInt(42), "gas": big.NewInt(65000),
				"data": "0xa9059cbb0000000000000000000000003535353535353535353535353535353535353535000000000000000000000000000000000000000000000000000000000012d687"},
		},
		{"eip4844 body", map[string]any{"type": "TYPE_3", "max_fee_per_blob_gas": gwei(3), "gas_price": gwei(50)}},
		{
			"eip7702 set code",
			map[string]any{"type": "TYPE_4", "to": strings.ToLower(v.Address), "max_fee_per_blob_gas": nil},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := ParseUnsigned(byName[tc.name])
			if err != nil {
				t.Fatal(err)
			}
			view := tx.PolicyView(v.Address)
			if view["from"] != strings.ToLower(v.Address) {
				t.Errorf("from = %v", view["from"])
			}
			for k, want := range tc.want {
				got, ok := view[k]
				if want == nil {
					if ok {
						t.Errorf("%s present (%v), want absent", k, got)
					}
					continue
				}
				if wb, isBig := want.(*big.Int); isBig {
					gb, _ := got.(*big.Int)
					if gb == nil || gb.Cmp(wb) != 0 {
						t.Errorf("%s = %v, want %v", k, got, want)
					}
				} else if got != want {
					t.Errorf("%s = %v, want %v", k, got, want)
				}
			}
		})
	}
}

func TestParseUnsignedRejects(t *testing.T) {
	v := loadVectors(t)
	var legacy155, type2, type3 []byte
	var signed2 []byte
	for _, c := range v.Transactions {
		switch c.Name {
		case "legacy eip155":
			legacy155 = unhex(t, c.Unsigned)
		case "eip1559 erc20 transfer":
			type2 = unhex(t, c.Unsigned)
			signed2 = unhex(t, c.Signed)
		case "eip4844 body":
			type3 = unhex(t, c.Unsigned)
		}
	}
	// EIP-4844 network wrapper: 0x03 ‖ rlp([body, blobs, commitments, proofs]).
	body := type3[1:]
	wrapped := append([]byte{0x03}, wrapList(append(append([]byte{}, body...), 0xc0, 0xc0, 0xc0))...)
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty transaction"},
		{"rlp string", "8401020304", "RLP string"},
		{"unknown type", "05c0", "unsupported transaction type 0x05"},
		{"type 2 signed", hex.EncodeToString(signed2), "signed form"},
		{"type 2 trailing", hex.EncodeToString(type2) + "00", "trailing bytes"},
		{"type 2 truncated", hex.EncodeToString(type2[:len(type2)-3]), "type 2"},
		{"type 2 too few", "02c3010203", "has 3 fields"},
		{"blob wrapper", hex.EncodeToString(wrapped), "network wrapper"},
		{"legacy 7 fields", "c701020304050607", "has 7 fields"},
		{"legacy chain id 0", hex.EncodeToString(legacy155[:len(legacy155)-3]) + "808080", "chain id 0"},
		{"legacy signed", hex.EncodeToString(legacy155[:len(legacy155)-2]) + "0101", "signed transaction"},
		{"type 3 without to", "03" + "cb" + "01" + "80808080" + "80" + "8080c080c0", "type 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := hex.DecodeString(strings.ReplaceAll(tc.in, " ", ""))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ParseUnsigned(in)
			if err == nil || !errors.Is(err, ErrInvalidTransaction) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestSignRejectsBadSigner(t *testing.T) {
	v := loadVectors(t)
	tx, err := ParseUnsigned(unhex(t, v.Transactions[0].Unsigned))
	if err != nil {
		t.Fatal(err)
	}
	good := testSigner(t, v.PrivateKey)
	n := secp256k1.S256().N
	tests := []struct {
		name   string
		signer RecoverableSigner
	}{
		{"error", func([32]byte) (r, s [32]byte, v byte, err error) { return r, s, 0, errors.New("hsm down") }},
		{
			"recovery id 2",
			func(d [32]byte) (r, s [32]byte, v byte, err error) { r, s, _, err = good(d); return r, s, 2, err },
		},
		{"high s", func(d [32]byte) (r, s [32]byte, v byte, err error) {
			r, s, v, err = good(d)
			new(big.Int).Sub(n, new(big.Int).SetBytes(s[:])).FillBytes(s[:])
			return r, s, v ^ 1, err
		}},
		{"zero r", func(d [32]byte) (r, s [32]byte, v byte, err error) { _, s, v, err = good(d); return r, s, v, err }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tx.Sign(tc.signer); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestHashTypedData(t *testing.T) {
	v := loadVectors(t)
	sign := testSigner(t, v.PrivateKey)
	for _, c := range v.TypedData {
		for shape, payload := range map[string]string{"viem": c.ViemPayload, "ethers": c.EthersPayload} {
			t.Run(c.Name+"/"+shape, func(t *testing.T) {
				d, view, err := HashTypedData([]byte(payload))
				if err != nil {
					t.Fatal(err)
				}
				if got := "0x" + hex.EncodeToString(d[:]); got != c.Digest {
					t.Fatalf("digest %s, want %s", got, c.Digest)
				}
				r, s, rv, _ := sign(d)
				sig := "0x" + hex.EncodeToString(r[:]) + hex.EncodeToString(s[:]) + hex.EncodeToString([]byte{rv + 27})
				if sig != c.Signature {
					t.Fatalf("signature %s, want %s", sig, c.Signature)
				}
				if view["primary_type"] == "" {
					t.Fatal("no primary_type")
				}
			})
		}
	}
}

// TestTypedDataEIPMail checks the digest and signature published in EIP-712 itself.
func TestTypedDataEIPMail(t *testing.T) {
	v := loadVectors(t)
	d, view, err := HashTypedData([]byte(v.TypedData[0].EthersPayload))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(d[:]); got != "be609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2" {
		t.Fatalf("digest %s", got)
	}
	cow := crypto.Keccak256([]byte("cow"))
	r, s, rv, _ := testSigner(t, hex.EncodeToString(cow))(d)
	if hex.EncodeToString(r[:]) != "4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d" ||
		hex.EncodeToString(s[:]) != "07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b91562" || rv+27 != 28 {
		t.Fatalf("signature r=%x s=%x v=%d differs from the EIP's", r, s, rv+27)
	}
	domain := view["domain"].(map[string]any)
	if domain["name"] != "Ether Mail" || domain["version"] != "1" || domain["chain_id"].(*big.Int).Int64() != 1 ||
		domain["verifying_contract"] != "0xcccccccccccccccccccccccccccccccccccccccc" {
		t.Fatalf("domain view %v", domain)
	}
	msg := view["message"].(map[string]any)
	if msg["from"].(map[string]any)["wallet"] != "0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826" ||
		msg["contents"] != "Hello, Bob!" {
		t.Fatalf("message view %v", msg)
	}
}

// TestTypedDataNumberShapes: numbers as JSON numbers, decimal strings and hex strings hash alike.
func TestTypedDataNumberShapes(t *testing.T) {
	v := loadVectors(t)
	var permit string
	var want string
	for _, c := range v.TypedData {
		if c.Name == "permit2 batch" {
			permit, want = c.ViemPayload, c.Digest
		}
	}
	variants := map[string][2]string{
		"chainId number":       {`"chainId":1`, `"chainId":1`},
		"chainId hex":          {`"chainId":1`, `"chainId":"0x1"`},
		"chainId decimal":      {`"chainId":1`, `"chainId":"1"`},
		"expiration number":    {`"expiration":1735689600`, `"expiration":1735689600`},
		"expiration hex":       {`"expiration":1735689600`, `"expiration":"0x67748580"`},
		"sigDeadline exponent": {`"sigDeadline":"1735693200"`, `"sigDeadline":1.7356932e9`},
		"sigDeadline number":   {`"sigDeadline":"1735693200"`, `"sigDeadline":1735693200`},
		"nonce hex":            {`"nonce":7`, `"nonce":"0x07"`},
	}
	for name, rep := range variants {
		t.Run(name, func(t *testing.T) {
			p := strings.ReplaceAll(permit, rep[0], rep[1])
			if !strings.Contains(permit, rep[0]) {
				t.Fatalf("fixture lacks %s: %s", rep[0], permit)
			}
			d, _, err := HashTypedData([]byte(p))
			if err != nil {
				t.Fatal(err)
			}
			if got := "0x" + hex.EncodeToString(d[:]); got != want {
				t.Fatalf("digest %s, want %s", got, want)
			}
		})
	}
}

// TestTypedDataWithoutDomainType: with EIP712Domain left out of types it is derived from the
// domain fields present (Permit2 has no version), giving the same digest.
func TestTypedDataWithoutDomainType(t *testing.T) {
	v := loadVectors(t)
	for _, c := range v.TypedData {
		t.Run(c.Name, func(t *testing.T) {
			var p map[string]any
			if err := json.Unmarshal([]byte(c.ViemPayload), &p); err != nil {
				t.Fatal(err)
			}
			delete(p["types"].(map[string]any), "EIP712Domain")
			b, _ := json.Marshal(p)
			d, _, err := HashTypedData(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := "0x" + hex.EncodeToString(d[:]); got != c.Digest {
				t.Fatalf("digest %s, want %s", got, c.Digest)
			}
		})
	}
}

func TestHashTypedDataRejects(t *testing.T) {
	base := `{"types":{"T":[{"name":"a","type":"%s"}]},"primaryType":"T","domain":{"name":"x"},"message":{"a":%s}}`
	tests := []struct{ name, typ, val, want string }{
		{"uint8 overflow", "uint8", "256", "out of range"},
		{"negative uint", "uint256", `"-1"`, "out of range"},
		{"int8 underflow", "int8", "-129", "out of range"},
		{"fraction", "uint256", "1.5", "not an integer"},
		{"huge exponent", "uint256", "1e999999999", "not an integer"},
		{"exponent just over", "uint256", "1.16e77", "not an integer"},
		{"bad address", "address", `"0x1234"`, "20-byte"},
		{"bytes4 size", "bytes4", `"0x010203"`, "4 bytes"},
		{"unknown type", "Foo", `1`, "unknown type"},
		{"bad int size", "uint7", `1`, "bad integer size"},
		{"bool as string", "bool", `"true"`, "true or false"},
		{"fixed array length", "uint8[2]", `[1]`, "want 2 elements"},
		{"struct not object", "string", `{}`, "want a string"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := HashTypedData([]byte(strings.Replace(strings.Replace(base, "%s", tc.typ, 1), "%s", tc.val, 1)))
			if err == nil || !errors.Is(err, ErrInvalidTypedData) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	for name, p := range map[string]string{
		"not json":        `{`,
		"missing message": `{"types":{"T":[]},"primaryType":"T","domain":{}}`,
		"missing field":   `{"types":{"T":[{"name":"a","type":"uint8"}]},"primaryType":"T","domain":{},"message":{}}`,
		"unknown primary": `{"types":{"T":[]},"primaryType":"U","domain":{},"message":{}}`,
		"deep recursion":  `{"types":{"T":[{"name":"a","type":"T[]"}]},"primaryType":"T","domain":{},"message":{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[{"a":[]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := HashTypedData([]byte(p)); !errors.Is(err, ErrInvalidTypedData) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestHashAuthorization(t *testing.T) {
	v := loadVectors(t)
	sign := testSigner(t, v.PrivateKey)
	for _, c := range v.Authorizations {
		t.Run(c.Payload, func(t *testing.T) {
			d, view, err := HashAuthorization([]byte(c.Payload))
			if err != nil {
				t.Fatal(err)
			}
			if got := "0x" + hex.EncodeToString(d[:]); got != c.Digest {
				t.Fatalf("digest %s, want %s", got, c.Digest)
			}
			r, s, rv, _ := sign(d)
			if "0x"+hex.EncodeToString(r[:]) != c.R || "0x"+hex.EncodeToString(s[:]) != c.S || rv != c.YParity {
				t.Fatalf("signature differs from the one viem's verifyAuthorization accepted")
			}
			var p map[string]any
			_ = json.Unmarshal([]byte(c.Payload), &p)
			if view["address"] != strings.ToLower(p["address"].(string)) {
				t.Fatalf("view %v", view)
			}
		})
	}
	// Numbers as strings hash the same.
	d1, _, _ := HashAuthorization(
		[]byte(`{"address":"0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B","chainId":1,"nonce":43}`),
	)
	d2, _, err := HashAuthorization(
		[]byte(`{"address":"0x63c0c19a282a1b52b07dd5a65b58948a07dae32b","chainId":"0x1","nonce":"43"}`),
	)
	if err != nil || d1 != d2 {
		t.Fatalf("string numbers: %v", err)
	}
	for _, bad := range []string{`{}`, `{"address":"0x12","chainId":1,"nonce":1}`, `{"address":"0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B","chainId":1,"nonce":-1}`,
		`{"address":"0x63c0c19a282a1B52b07dD5a65b58948A07DAE32B","chainId":1,"nonce":"0x10000000000000000"}`, `[]`} {
		if _, _, err := HashAuthorization([]byte(bad)); !errors.Is(err, ErrInvalidAuthorization) {
			t.Errorf("%s: err = %v", bad, err)
		}
	}
}

func TestAddress(t *testing.T) {
	v := loadVectors(t)
	priv := secp256k1.PrivKeyFromBytes(unhex(t, v.PrivateKey))
	for _, pub := range [][]byte{priv.PubKey().SerializeUncompressed(), priv.PubKey().SerializeCompressed()} {
		got, err := Address(pub)
		if err != nil || got != v.Address {
			t.Fatalf("Address = %s, %v; want %s", got, err, v.Address)
		}
	}
	if _, err := Address(bytes.Repeat([]byte{4}, 65)); err == nil {
		t.Fatal("want an error for a non-point")
	}
}

func FuzzParseUnsigned(f *testing.F) {
	v := loadVectors(f)
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
			t.Fatalf("parsed transaction does not sign: %v", signErr)
		}
	})
}

// FuzzHashTypedData: ParseTypedData agrees with the first implementation (the same digest
// and view, or the same refusal: compareWithOracle) and reads the payload in place: a few
// bytes of memory per byte of it, beside a fixed part, typedDataFixedCost.
func FuzzHashTypedData(f *testing.F) {
	for _, p := range typedDataVectors(f) {
		f.Add(p)
	}
	const types = `"P":[{"name":"a","type":"int8"},{"name":"b","type":"S[1]"}],"S":[{"name":"s","type":"string"}]`
	for _, v := range []string{`"0x-1"`, `" 1.5e1 "`, `"1.0p3"`, `1e-999999999`, `"\u0031"`, `"\ud83d"`, `[1,2]`} {
		f.Add(typedPayloadOf(types, `{"b":[{"s":"x","s":"y"}],"a":`+v+`}`))
	}
	f.Add([]byte(`{"types":{"P":[]},"Types":{"Q":5},"primaryType":"P","domain":{},"message":{},"message":{"a":1}}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var td *TypedData
		var err error
		costtest.Budget(t, b, 8, typedDataFixedCost, func() { td, err = ParseTypedData(b) })
		compareWithOracle(t, b)
		if err != nil {
			if !errors.Is(err, ErrInvalidTypedData) {
				t.Fatalf("error %v does not wrap ErrInvalidTypedData", err)
			}
			return
		}
		costtest.Budget(t, b, 128, 64<<10, func() { _ = td.View() })
		if d, _, err := HashTypedData(b); err != nil || d != td.Digest {
			t.Fatalf("HashTypedData = %x, %v; ParseTypedData %x", d, err, td.Digest)
		}
	})
}

func FuzzHashAuthorization(f *testing.F) {
	v := loadVectors(f)
	for _, c := range v.Authorizations {
		f.Add([]byte(c.Payload))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		costtest.Budget(t, b, 96, 16<<10, func() { _, _, _ = HashAuthorization(b) })
	})
}

func BenchmarkParseAndSigningHash(b *testing.B) {
	v := loadVectors(b)
	raw := unhex(b, v.Transactions[4].Unsigned)
	for b.Loop() {
		tx, err := ParseUnsigned(raw)
		if err != nil {
			b.Fatal(err)
		}
		_ = tx.SigningHash()
	}
}
