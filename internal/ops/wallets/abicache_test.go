package wallets_test

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/latchkey/latchkey/internal/servertest"
)

// contractABI is an ABI of about size bytes with the ERC-20 transfer and functions shaped like a
// marketplace's (an address, an integer, a tuple and an array of tuples each).
func contractABI(size int) string {
	var b strings.Builder
	b.WriteString(`[{"type":"function","name":"transfer","stateMutability":"nonpayable",` +
		`"inputs":[{"name":"dst","type":"address"},{"name":"wad","type":"uint256"}],` +
		`"outputs":[{"name":"","type":"bool"}]}`)
	for i := 0; b.Len() < size-600; i++ {
		fmt.Fprintf(&b, `,{"type":"function","name":"fulfillOrder%d","stateMutability":"payable","inputs":[`+
			`{"name":"recipient","type":"address"},{"name":"amount","type":"uint256"},`+
			`{"name":"order","type":"tuple","components":[{"name":"offerer","type":"address"},`+
			`{"name":"zone","type":"address"},{"name":"startTime","type":"uint256"}]},`+
			`{"name":"fees","type":"tuple[]","components":[{"name":"recipient","type":"address"},`+
			`{"name":"bps","type":"uint16"}]}],"outputs":[{"name":"fulfilled","type":"bool"}]}`, i)
	}
	b.WriteString(`]`)
	return b.String()
}

// A signing request to a contract whose ABI a policy reads (eth.tx.function_name) costs the
// same whether the ABI is 300 bytes or 400 KB: the ABI is parsed once per process and kept, by
// interface id, not parsed again (and not read again) on every request. Before, each request
// re-read and re-parsed it: 13 MB allocated and 15 to 50 ms per request for 400 KB.
func TestContractABIParsedOnce(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	bobPriv, bobPub := h.NewKey()
	servertest.MustOK(t, root.Submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4",
		map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
			map[string]any{"apiKeyName": "b", "publicKey": bobPub, "curveType": "API_KEY_CURVE_P256"}},
			"authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}}))
	bob := h.Client(created.OrganizationID, bobPriv)
	w := root.Submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]})
	servertest.MustOK(t, w)
	from := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	small, large := "0x"+strings.Repeat("1", 40), "0x"+strings.Repeat("2", 40)
	for addr, abi := range map[string]string{small: contractABI(0), large: contractABI(400 << 10)} {
		servertest.MustOK(t, root.Submit("create_smart_contract_interface",
			"ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE", map[string]any{"smartContractAddress": addr,
				"type": "SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM", "label": addr, "notes": "",
				"smartContractInterface": abi}))
	}
	servertest.MustOK(t, root.Submit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{
		"policyName": "transfers", "effect": "EFFECT_ALLOW", "notes": "",
		"condition": "eth.tx.function_name == 'transfer'"}))
	sign := func(to string) func() {
		data, _ := hex.DecodeString("a9059cbb000000000000000000000000" +
			"08d2b0a37f869ff76bacb5bab3278e26ab7067b7" +
			"00000000000000000000000000000000000000000000000006f05b59d3b20000")
		b, _ := rlp.EncodeToBytes([]any{big.NewInt(1), uint64(1), big.NewInt(1), big.NewInt(2), uint64(60000),
			common.HexToAddress(to), big.NewInt(0), data, []any{}})
		return func() {
			h.Advance(time.Millisecond)
			servertest.MustOK(t, bob.Submit("sign_transaction", "ACTIVITY_TYPE_SIGN_TRANSACTION_V2",
				map[string]any{"signWith": from, "unsignedTransaction": "02" + hex.EncodeToString(b),
					"type": "TRANSACTION_TYPE_ETHEREUM"}))
		}
	}
	sign(small)()
	sign(large)() // allowed: the policy read the function's name from the large ABI
	allocSmall, allocLarge := leastAllocated(sign(small)), leastAllocated(sign(large))
	t.Logf("a signing request: %d bytes allocated with an ABI of 300 bytes, %d with 400 KB", allocSmall, allocLarge)
	if allocLarge > allocSmall+1<<20 {
		t.Errorf("the signing request's cost grows with its contract's ABI: %d, %d", allocSmall, allocLarge)
	}
}
