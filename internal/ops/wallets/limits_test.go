package wallets_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/servertest"
)

func ethAccounts(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32",
			"path": fmt.Sprintf("m/44'/60'/0'/0/%d", i+1), "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}
	}
	return out
}

// TestPerRequestLimits is issue 23's item 7: create_wallet_accounts had no bound on the accounts
// one request derives (7,000 accounts: 1.6 s). Every list of the wallet operations that costs a
// derivation, a signature or a store read per item is bounded, refused before the work with a
// 400 that names the field and the limit; a request at the limit is served.
func TestPerRequestLimits(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	r := root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts})
	servertest.MustOK(t, r)
	walletID := r.Str("activity", "result", "createWalletResult", "walletId")
	sol := r.Str("activity", "result", "createWalletResult", "addresses", "1")

	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("id-%d", i)
		}
		return out
	}
	empty := make([]string, 1001)
	key := func(formats, tags int) map[string]any {
		f := make([]string, formats)
		for i := range f {
			f[i] = "ADDRESS_FORMAT_ETHEREUM"
		}
		return map[string]any{"privateKeys": []any{map[string]any{"privateKeyName": "k", "curve": "CURVE_SECP256K1",
			"privateKeyTags": ids(tags), "addressFormats": f}}}
	}
	refused := []struct {
		name, op, typ string
		params        map[string]any
		field, limit  string
	}{
		{"7,000 accounts", "create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS",
			map[string]any{"walletId": walletID, "accounts": ethAccounts(7000)}, "parameters.accounts", "at most 256"},
		{"257 accounts", "create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS",
			map[string]any{"walletId": walletID, "accounts": ethAccounts(257)}, "parameters.accounts", "at most 256"},
		{"a wallet of 257 accounts", "create_wallet", "ACTIVITY_TYPE_CREATE_WALLET",
			map[string]any{"walletName": "big", "accounts": ethAccounts(257)}, "parameters.accounts", "at most 256"},
		{"1,001 payloads", "sign_raw_payloads", "ACTIVITY_TYPE_SIGN_RAW_PAYLOADS",
			map[string]any{"signWith": sol, "payloads": empty, "encoding": "PAYLOAD_ENCODING_HEXADECIMAL",
				"hashFunction": "HASH_FUNCTION_NOT_APPLICABLE"}, "parameters.payloads", "at most 1000"},
		{"101 wallets to delete", "delete_wallets", "ACTIVITY_TYPE_DELETE_WALLETS",
			map[string]any{"walletIds": ids(101)}, "parameters.walletIds", "at most 100"},
		{"1,001 accounts to delete", "delete_wallet_accounts", "ACTIVITY_TYPE_DELETE_WALLET_ACCOUNTS",
			map[string]any{"walletAccountIds": ids(1001)}, "parameters.walletAccountIds", "at most 1000"},
		{"65 address formats", "create_private_keys", "ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2", key(65, 0),
			"parameters.privateKeys[0].addressFormats", "at most 64"},
		{"1,001 tags on a key", "create_private_keys", "ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2", key(1, 1001),
			"parameters.privateKeys[0].privateKeyTags", "at most 1000"},
		{"1,001 private keys to delete", "delete_private_keys", "ACTIVITY_TYPE_DELETE_PRIVATE_KEYS",
			map[string]any{"privateKeyIds": ids(1001)}, "parameters.privateKeyIds", "at most 1000"},
		{"a tag of 1,001 keys", "create_private_key_tag", "ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG",
			map[string]any{"privateKeyTagName": "t", "privateKeyIds": ids(1001)}, "parameters.privateKeyIds",
			"at most 1000"},
		{"1,001 tags to delete", "delete_private_key_tags", "ACTIVITY_TYPE_DELETE_PRIVATE_KEY_TAGS",
			map[string]any{"privateKeyTagIds": ids(1001)}, "parameters.privateKeyTagIds", "at most 1000"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			h.Advance(time.Millisecond)
			r := root.Submit(tc.op, tc.typ, tc.params)
			servertest.WantError(t, r, http.StatusBadRequest, 3, tc.field)
			if !strings.Contains(r.Str("message"), tc.limit) {
				t.Fatalf("message %q does not name the limit (%s)", r.Str("message"), tc.limit)
			}
		})
	}
	// At the limits: served.
	h.Advance(time.Millisecond)
	r = root.Submit("create_wallet_accounts", "ACTIVITY_TYPE_CREATE_WALLET_ACCOUNTS",
		map[string]any{"walletId": walletID, "accounts": ethAccounts(256)})
	servertest.MustOK(t, r)
	if n := r.Len("activity", "result", "createWalletAccountsResult", "addresses"); n != 256 {
		t.Fatalf("%d addresses", n)
	}
	payloads := make([]string, 1000)
	for i := range payloads {
		payloads[i] = hex.EncodeToString([]byte{byte(i)})
	}
	h.Advance(time.Millisecond)
	servertest.MustOK(t, root.Submit("sign_raw_payloads", "ACTIVITY_TYPE_SIGN_RAW_PAYLOADS",
		map[string]any{"signWith": sol, "payloads": payloads, "encoding": "PAYLOAD_ENCODING_HEXADECIMAL",
			"hashFunction": "HASH_FUNCTION_NOT_APPLICABLE"}))
}

// cyclicTypedData is issue 23's item 3: n struct types that all reach each other.
func cyclicTypedData(n int) string {
	var types, msg strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&types, `,"T%d":[{"name":"p","type":"P[]"}]`, i)
		if i > 0 {
			msg.WriteByte(',')
		}
		fmt.Fprintf(&msg, `"f%d":{"p":[]}`, i)
	}
	var fields strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			fields.WriteByte(',')
		}
		fmt.Fprintf(&fields, `{"name":"f%d","type":"T%d"}`, i, i)
	}
	return `{"types":{"P":[` + fields.String() + `]` + types.String() + `},"primaryType":"P",` +
		`"domain":{"name":"x"},"message":{` + msg.String() + `}}`
}

// solanaRefs is issue 23's item 6: a legacy transaction of 7 instructions referencing 65,535
// accounts each (897 KB of hex).
func solanaRefs() string {
	var b []byte
	b = append(b, 1)
	b = append(b, make([]byte, 64)...)
	b = append(b, 1, 0, 1, 3)
	for i := 1; i <= 3; i++ {
		b = append(b, bytes.Repeat([]byte{byte(i)}, 32)...)
	}
	b = append(b, bytes.Repeat([]byte{0x42}, 32)...)
	b = append(b, 7)
	for i := 0; i < 7; i++ {
		b = append(b, 2, 0xff, 0xff, 0x03)
		b = append(b, make([]byte, 65535)...)
		b = append(b, 0)
	}
	return hex.EncodeToString(b)
}

// TestSigningPayloadLimits: the hostile payloads of issue 23's items 3, 4 and 6 are refused
// with a 400 that names the payload and the limit, and the typed data real clients send (viem
// and ethers vectors: mail, Permit2, ...; Hyperliquid's) is still signed, by the account whose
// address the signature recovers to.
func TestSigningPayloadLimits(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	r := root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts})
	servertest.MustOK(t, r)
	eth := r.Str("activity", "result", "createWalletResult", "addresses", "0")
	sol := r.Str("activity", "result", "createWalletResult", "addresses", "1")
	signTyped := func(payload string) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": eth,
			"payload": payload, "encoding": "PAYLOAD_ENCODING_EIP712", "hashFunction": "HASH_FUNCTION_NO_OP"})
	}
	for _, tc := range []struct{ name, payload, limit string }{
		{"1,200 cyclic struct types", cyclicTypedData(1200), "more than the 128 allowed"},
		{"[] 10,000 times", `{"types":{"P":[{"name":"a","type":"uint8` + strings.Repeat("[]", 10000) +
			`"}]},"primaryType":"P","domain":{"name":"x"},"message":{"a":[]}}`, "more than 32 array dimensions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := signTyped(tc.payload)
			servertest.WantError(t, r, http.StatusBadRequest, 3, "parameters.payload")
			if !strings.Contains(r.Str("message"), tc.limit) {
				t.Fatalf("message %q does not name the limit (%s)", r.Str("message"), tc.limit)
			}
		})
	}
	t.Run("Solana 7 × 65,535 account references", func(t *testing.T) {
		h.Advance(time.Millisecond)
		r := root.Submit("sign_transaction", "ACTIVITY_TYPE_SIGN_TRANSACTION_V2", map[string]any{"signWith": sol,
			"unsignedTransaction": solanaRefs(), "type": "TRANSACTION_TYPE_SOLANA"})
		servertest.WantError(t, r, http.StatusBadRequest, 3, "parameters.unsignedTransaction")
		if !strings.Contains(r.Str("message"), "at most 1232") {
			t.Fatalf("message %q does not name the limit", r.Str("message"))
		}
	})

	type typedCase struct{ name, payload, digest string }
	var cases []typedCase
	var vectors struct {
		TypedData []struct {
			Name, ViemPayload, EthersPayload, Digest string
		} `json:"typedData"`
	}
	readJSON(t, "../../chain/ethereum/testdata/ethereum.json", &vectors)
	for _, v := range vectors.TypedData {
		cases = append(cases, typedCase{v.Name + " (viem)", v.ViemPayload, v.Digest},
			typedCase{v.Name + " (ethers)", v.EthersPayload, v.Digest})
	}
	var hyper []struct{ Name, Payload, Digest string }
	readJSON(t, "../../chain/ethereum/testdata/hyperliquid.json", &hyper)
	for _, v := range hyper {
		cases = append(cases, typedCase{v.Name + " (hyperliquid)", v.Payload, v.Digest})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := signTyped(c.payload)
			servertest.MustOK(t, r)
			sig := func(f string) []byte {
				b, _ := hex.DecodeString(r.Str("activity", "result", "signRawPayloadResult", f))
				return b
			}
			digest, _ := hex.DecodeString(strings.TrimPrefix(c.digest, "0x"))
			compact := append([]byte{27 + 4 + sig("v")[0]}, append(sig("r"), sig("s")...)...)
			pub, _, err := ecdsa.RecoverCompact(compact, digest)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := address.Derive("ADDRESS_FORMAT_ETHEREUM", "CURVE_SECP256K1",
				pub.SerializeCompressed()); got != eth {
				t.Fatalf("the signature of the vector's digest recovers to %s, not %s", got, eth)
			}
		})
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
