package server_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/ops/chaindata"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// fakeNode answers JSON-RPC methods with canned (recorded) results.
type fakeNode struct {
	srv     *httptest.Server
	calls   atomic.Int64
	mu      sync.Mutex
	results map[string]func(params []json.RawMessage) string
}

func newFakeNode(t *testing.T, results map[string]func([]json.RawMessage) string) *fakeNode {
	n := &fakeNode{results: results}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.calls.Add(1)
		var req struct {
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		n.mu.Lock()
		f := n.results[req.Method]
		n.mu.Unlock()
		if f == nil {
			_, _ = w.Write(
				[]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"the method does not exist"}}`),
			)
			return
		}
		res := f(req.Params)
		if strings.HasPrefix(res, `{"jsonrpc"`) {
			_, _ = w.Write([]byte(res))
			return
		}
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":` + res + `}`))
	}))
	t.Cleanup(n.srv.Close)
	return n
}

// ethAndSolana makes root a wallet with an Ethereum and a Solana account and returns their
// addresses and a get_wallet_address_balances query of root's.
func ethAndSolana(
	t *testing.T,
	root *servertest.Client,
) (ethAddr, solAddr string, balances func(addr, caip2 string) servertest.Response) {
	t.Helper()
	r := root.MustSubmit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": []any{
			map[string]any{"curve": "CURVE_SECP256K1", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0",
				"addressFormat": "ADDRESS_FORMAT_ETHEREUM"},
			map[string]any{"curve": "CURVE_ED25519", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/501'/0'/0'",
				"addressFormat": "ADDRESS_FORMAT_SOLANA"}}},
	)
	balances = func(addr, caip2 string) servertest.Response {
		return root.Query("get_wallet_address_balances", map[string]any{"address": addr, "caip2": caip2})
	}
	return r.Result("createWalletResult", "addresses", "0"), r.Result("createWalletResult", "addresses", "1"), balances
}

func TestChainData(t *testing.T) {
	usdcSepolia := strings.ToLower("0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238")
	var mined atomic.Bool
	evm := newFakeNode(t, map[string]func([]json.RawMessage) string{
		"eth_getBalance": func([]json.RawMessage) string { return `"0xde0b6b3a7640000"` },
		"eth_call": func(p []json.RawMessage) string {
			if strings.Contains(string(p[0]), usdcSepolia) {
				return `"0x00000000000000000000000000000000000000000000000000000000000f4240"`
			}
			return `"0x0000000000000000000000000000000000000000000000000000000000000000"`
		},
		"eth_getTransactionCount": func([]json.RawMessage) string { return `"0x5"` },
		"eth_sendRawTransaction": func(p []json.RawMessage) string {
			var raw string
			_ = json.Unmarshal(p[0], &raw)
			var tx types.Transaction
			_ = tx.UnmarshalBinary(common.FromHex(raw))
			return `"` + tx.Hash().Hex() + `"`
		},
		"eth_getTransactionReceipt": func([]json.RawMessage) string {
			if !mined.Load() {
				return "null"
			}
			return `{"status":"0x1","blockNumber":"0x10"}`
		},
	})
	tokens, err := os.ReadFile("testdata/solana_token_accounts.json")
	if err != nil {
		t.Fatal(err)
	}
	var sentSol []byte
	sol := newFakeNode(t, map[string]func([]json.RawMessage) string{
		"getBalance":              func([]json.RawMessage) string { return `{"context":{"slot":386270012},"value":1500000000}` },
		"getTokenAccountsByOwner": func([]json.RawMessage) string { return string(tokens) },
		"sendTransaction": func(p []json.RawMessage) string {
			var b64 string
			_ = json.Unmarshal(p[0], &b64)
			sentSol, _ = base64.StdEncoding.DecodeString(b64)
			return `"` + base58.Encode(sentSol[1:65]) + `"`
		},
		"getSignatureStatuses": func([]json.RawMessage) string {
			return `{"context":{"slot":386270100},"value":[{"slot":386270090,"confirmations":null,"err":null,"status":{"Ok":null},"confirmationStatus":"confirmed"}]}`
		},
	})
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	prices := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(prices, []byte(`{"eip155:11155111/slip44:60": "2500.5", "eip155:11155111/erc20:0x1C7D4B196Cb0C7B01d743Fbc6116a902379C7238": "1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{
			"eip155:11155111":      evm.srv.URL,
			chaindata.SolanaDevnet: sol.srv.URL,
			"eip155:8453":          down.URL,
		}
		c.PricesFile = prices
	}))
	root, created := h.RootOrg("Acme")
	ethAddr, solAddr, balances := ethAndSolana(t, root)

	// A beta: refused until the operator grants it.
	servertest.WantError(t, balances(ethAddr, "eip155:11155111"), http.StatusForbidden, 7, "latchkey access grant")
	if err := chaindata.SetGrant(t.Context(), h.Server.Store, created.OrganizationID, chaindata.FeatureWalletBalances, true, h.Now()); err != nil {
		t.Fatal(err)
	}

	// Native and listed ERC-20 balances, zero ones left out; a burst is one set of RPC calls.
	before := evm.calls.Load()
	var wg sync.WaitGroup
	results := make([]servertest.Response, 20)
	for i := range results {
		wg.Add(1)
		go func() { defer wg.Done(); results[i] = balances(ethAddr, "eip155:11155111") }()
	}
	wg.Wait()
	for _, b := range results {
		servertest.MustOK(t, b)
		if b.Str("balances", "0", "balance") != "1000000000000000000" || b.Str("balances", "0", "symbol") != "ETH" ||
			b.Str("balances", "0", "caip19") != "eip155:11155111/slip44:60" ||
			b.Str("balances", "1", "balance") != "1000000" ||
			b.Str("balances", "1", "decimals") != "6" ||
			b.Str("balances", "1", "caip19") != "eip155:11155111/erc20:"+usdcSepolia ||
			len(b.Body["balances"].([]any)) != 2 ||
			b.Str("balances", "1", "display", "crypto") != "1" ||
			b.Str("balances", "0", "display", "usd") != "2500.50" ||
			b.Str("balances", "1", "display", "usd") != "1.00" {
			t.Fatalf("balances: %s", b.Raw)
		}
	}
	if n := evm.calls.Load() - before; n != 2 { // eth_getBalance + one eth_call for the one listed token
		t.Fatalf("20 concurrent calls made %d RPC calls, want 2 (one shared fetch)", n)
	}

	// Solana by its alias: SOL, the listed USDC, an unlisted mint by its id; the empty account left out.
	s := balances(solAddr, "solana:devnet")
	servertest.MustOK(t, s)
	if s.Str("balances", "0", "balance") != "1500000000" || s.Str("balances", "0", "symbol") != "SOL" ||
		s.Str("balances", "0", "display", "crypto") != "1.5" ||
		s.Str("balances", "0", "display", "usd") != "" ||
		s.Str("balances", "1", "symbol") != "USDC" ||
		s.Str("balances", "1", "balance") != "25000000" ||
		s.Str(
			"balances",
			"2",
			"caip19",
		) != chaindata.SolanaDevnet+"/token:Gh9ZwEmdLJ8DscKNTkTqPbNwLNNBjuSzaG9Vp2KGtKJr" ||
		s.Str("balances", "2", "decimals") != "2" ||
		len(s.Body["balances"].([]any)) != 3 {
		t.Fatalf("solana balances: %s", s.Raw)
	}

	// Errors.
	pk := root.Submit(
		"create_private_keys",
		"ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2",
		map[string]any{"privateKeys": []any{
			map[string]any{
				"privateKeyName": "hot",
				"curve":          "CURVE_SECP256K1",
				"privateKeyTags": []string{},
				"addressFormats": []string{"ADDRESS_FORMAT_ETHEREUM"},
			}}},
	)
	servertest.MustOK(t, pk)
	pkAddr := pk.Str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "addresses", "0", "address")
	servertest.WantError(t, balances(pkAddr, "eip155:11155111"), http.StatusBadRequest, 3, "private key address")
	servertest.WantError(
		t,
		balances("0x000000000000000000000000000000000000dEaD", "eip155:11155111"),
		http.StatusNotFound,
		5,
		"not a wallet account address",
	)
	servertest.WantError(t, balances(ethAddr, "eip155:10"), http.StatusBadRequest, 3, "caip2")
	servertest.WantError(
		t,
		balances(ethAddr, "eip155:1"),
		http.StatusBadRequest,
		9,
		"no RPC provider is configured for eip155:1",
	)
	servertest.WantError(t, balances(solAddr, "eip155:11155111"), http.StatusBadRequest, 3, "not an Ethereum address")
	if d := balances(ethAddr, "eip155:8453"); d.Status != http.StatusServiceUnavailable ||
		!strings.Contains(d.Str("message"), "eip155:8453") ||
		strings.Contains(string(d.Raw), down.URL) {
		t.Fatalf("provider down: %s", d.Raw)
	}

	// The asset list.
	a := root.Query("list_supported_assets", map[string]any{"caip2": "eip155:11155111"})
	servertest.MustOK(t, a)
	if len(a.Body["assets"].([]any)) != 2 || a.Str("assets", "1", "symbol") != "USDC" {
		t.Fatalf("list_supported_assets: %s", a.Raw)
	}

	// A signed transaction sent, then followed to INCLUDED; the nonce read from the node.
	key, _ := crypto.GenerateKey()
	to := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	signer := types.LatestSignerForChainID(big.NewInt(11155111))
	tx, err := types.SignNewTx(
		key,
		signer,
		&types.DynamicFeeTx{
			ChainID:   big.NewInt(11155111),
			Nonce:     5,
			GasTipCap: big.NewInt(1),
			GasFeeCap: big.NewInt(2e9),
			Gas:       21000,
			To:        &to,
			Value:     big.NewInt(1),
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tx.MarshalBinary()
	send := func(hexTx, caip2 string) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit(
			"eth_send_raw_transaction",
			"ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION",
			map[string]any{"signedTransaction": hexTx, "caip2": caip2},
		)
	}
	servertest.WantError(t, send(hexutil.Encode(raw), "eip155:8453"), http.StatusBadRequest, 3, "chain id")
	servertest.WantError(
		t,
		send("0xdeadbeef", "eip155:11155111"),
		http.StatusBadRequest,
		3,
		"parameters.signedTransaction",
	)
	sr := send(hexutil.Encode(raw), "eip155:11155111")
	servertest.MustOK(t, sr)
	hash := sr.Str("activity", "result", "ethSendRawTransactionResult", "transactionHash")
	if hash != strings.ToLower(tx.Hash().Hex()) {
		t.Fatalf("hash %s, want %s", hash, tx.Hash().Hex())
	}
	st := root.Query("get_send_transaction_status", map[string]any{"sendTransactionStatusId": hash})
	if st.Str("txStatus") != chaindata.StatusPending || st.Str("eth", "txHash") != hash {
		t.Fatalf("status: %s", st.Raw)
	}
	mined.Store(true)
	if st := root.Query("get_send_transaction_status", map[string]any{"sendTransactionStatusId": hash}); st.Str(
		"txStatus",
	) != chaindata.StatusIncluded {
		t.Fatalf("status after mining: %s", st.Raw)
	}
	// A Solana transfer signed by the wallet's account with a caller's blockhash, sent, followed.
	from, _ := base58.Decode(solAddr)
	msg := []byte{1, 0, 1, 3}
	msg = append(append(append(msg, from...), make([]byte, 32)...), make([]byte, 32)...)
	msg[4+32] = 7                          // the recipient
	msg = append(msg, make([]byte, 32)...) // blockhash, replaced below
	msg = append(
		msg,
		1,
		2,
		2,
		0,
		1,
		12,
		2,
		0,
		0,
		0,
		0x40,
		0x42,
		0x0f,
		0,
		0,
		0,
		0,
		0,
	) // system transfer of 1,000,000 lamports
	unsignedSol := append(append([]byte{1}, make([]byte, 64)...), msg...)
	bh := make([]byte, 32)
	bh[0] = 9
	h.Advance(time.Millisecond)
	ss := root.Submit(
		"sol_send_transaction",
		"ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2",
		map[string]any{"unsignedTransaction": hex.EncodeToString(unsignedSol),
			"signWiths": []string{solAddr}, "caip2": "solana:devnet", "recentBlockhash": base58.Encode(bh)},
	)
	servertest.MustOK(t, ss)
	signedMsg := sentSol[65:]
	if !ed25519.Verify(from, signedMsg, sentSol[1:65]) || signedMsg[4+96] != 9 {
		t.Fatalf("the sent Solana transaction is not signed by the account over the new blockhash")
	}
	sid := ss.Str("activity", "result", "solSendTransactionResultV2", "sendTransactionStatusId")
	if st := root.Query("get_send_transaction_status", map[string]any{"sendTransactionStatusId": sid}); st.Str(
		"txStatus",
	) != chaindata.StatusIncluded ||
		st.Str("solana", "signature") != base58.Encode(sentSol[1:65]) {
		t.Fatalf("solana status: %s", st.Raw)
	}
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		root.Submit(
			"sol_send_transaction",
			"ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2",
			map[string]any{"unsignedTransaction": hex.EncodeToString(unsignedSol),
				"signWiths": []string{
					solAddr,
				}, "caip2": "solana:devnet", "sponsor": true},
		),
		http.StatusBadRequest,
		9,
		"gas sponsorship is not configured for solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
	)

	n := root.Query("get_nonces", map[string]any{"address": ethAddr, "caip2": "eip155:11155111", "nonce": true})
	if n.Str("nonce") != "5" {
		t.Fatalf("get_nonces: %s", n.Raw)
	}
}
