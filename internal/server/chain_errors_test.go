package server_test

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestChainDataNodeErrors: what the nodes answer when things go wrong (geth's and a Solana
// validator's answers, in their exact shapes and wording; hashes and slots are placeholders), and
// how Latchkey passes it on: always naming the network, never the provider's URL.
func TestChainDataNodeErrors(t *testing.T) {
	evm := newFakeNode(t, map[string]func([]json.RawMessage) string{
		// geth 1.17, a transaction whose nonce was already used.
		"eth_sendRawTransaction": func([]json.RawMessage) string {
			return `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"nonce too low: next nonce 6, tx nonce 5"}}`
		},
		// geth's receipt of a reverted transaction (status 0x0), every field geth sends.
		"eth_getTransactionReceipt": func([]json.RawMessage) string {
			return `{"blockHash":"0x5b1ad3c0b64ba2d1c2f5b1bd3a3c1f3f0e7e6c2d8d5f4e3a2b1c0d9e8f7a6b5c","blockNumber":"0x1b4","contractAddress":null,"cumulativeGasUsed":"0x5208","effectiveGasPrice":"0x3b9aca07","from":"0x0000000000000000000000000000000000000001","gasUsed":"0x5208","logs":[],"logsBloom":"0x` + strings.Repeat(
				"0",
				512,
			) + `","status":"0x0","to":"0x000000000000000000000000000000000000dead","transactionHash":"0x00","transactionIndex":"0x0","type":"0x2"}`
		},
		// An account with nothing: no ether, no listed token.
		"eth_getBalance": func([]json.RawMessage) string { return `"0x0"` },
		"eth_call": func([]json.RawMessage) string {
			return `"0x0000000000000000000000000000000000000000000000000000000000000000"`
		},
	})
	sol := newFakeNode(t, map[string]func([]json.RawMessage) string{
		// A Solana validator's preflight failure for a stale blockhash.
		"sendTransaction": func([]json.RawMessage) string {
			return `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Transaction simulation failed: Blockhash not found","data":{"accounts":null,"err":"BlockhashNotFound","innerInstructions":null,"logs":[],"replacementBlockhash":null,"returnData":null,"unitsConsumed":0}},"id":1}`
		},
		// A never-funded account: zero lamports, no token accounts.
		"getBalance": func([]json.RawMessage) string { return `{"context":{"apiVersion":"2.2.3","slot":386270012},"value":0}` },
		"getTokenAccountsByOwner": func([]json.RawMessage) string {
			return `{"jsonrpc":"2.0","result":{"context":{"apiVersion":"2.2.3","slot":386270012},"value":[]},"id":1}`
		},
	})
	// An overloaded provider: HTTP 503 to everything, counted.
	var busyCalls atomic.Int64
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		busyCalls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(busy.Close)
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{
			"eip155:11155111":       evm.srv.URL,
			chaindata.SolanaDevnet:  sol.srv.URL,
			chaindata.SolanaMainnet: busy.URL + "/?api-key=SECRET",
		}
	}))
	root, created := h.RootOrg("Acme")
	ethAddr, solAddr, balances := ethAndSolana(t, root)
	grant := func(on bool) {
		t.Helper()
		if err := chaindata.SetGrant(t.Context(), h.Server.Store, created.OrganizationID, chaindata.FeatureWalletBalances, on, h.Now()); err != nil {
			t.Fatal(err)
		}
	}

	// Granted, then revoked: refused again at once.
	grant(true)
	servertest.MustOK(t, balances(ethAddr, "eip155:11155111"))
	grant(false)
	servertest.WantError(t, balances(ethAddr, "eip155:11155111"), http.StatusForbidden, 7, "latchkey access grant")
	grant(true)

	// Only zero balances: an empty list, on both kinds of chain.
	for _, c := range []struct{ addr, caip2 string }{{ethAddr, "eip155:11155111"}, {solAddr, "solana:devnet"}} {
		b := balances(c.addr, c.caip2)
		servertest.MustOK(t, b)
		if l, ok := b.Body["balances"].([]any); b.Body["balances"] != nil && (!ok || len(l) != 0) {
			t.Fatalf("%s: zero balances were not left out: %s", c.caip2, b.Raw)
		}
	}

	// The overloaded provider: retried (3 attempts per RPC call), then a 503 naming the network.
	before := busyCalls.Load()
	d := balances(solAddr, "solana:mainnet")
	if d.Status != http.StatusServiceUnavailable || !strings.Contains(d.Str("message"), chaindata.SolanaMainnet) ||
		strings.Contains(string(d.Raw), "SECRET") || strings.Contains(string(d.Raw), busy.URL) {
		t.Fatalf("provider down: %d %s", d.Status, d.Raw)
	}
	if n := busyCalls.Load() - before; n < 3 {
		t.Fatalf("the provider was tried %d times, want 3 (two retries)", n)
	}

	// The node refuses a transaction. Broadcasting happens after the activity commits (never
	// inside its transaction), so the activity completes with the transaction's hash and the
	// send's status says FAILED in the node's own words, with the network.
	refused := func(r servertest.Response, member, want string) {
		t.Helper()
		servertest.MustOK(t, r)
		var id string
		for _, v := range r.Body["activity"].(map[string]any)["result"].(map[string]any) {
			m := v.(map[string]any)
			id, _ = m[member].(string)
		}
		st := root.Query("get_send_transaction_status", map[string]any{"sendTransactionStatusId": id})
		servertest.MustOK(t, st)
		if st.Str("txStatus") != "FAILED" || !strings.Contains(st.Str("txError"), want) {
			t.Fatalf("status of a refused send: %s", st.Raw)
		}
	}
	key, _ := crypto.GenerateKey()
	to := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	tx, err := types.SignNewTx(
		key,
		types.LatestSignerForChainID(big.NewInt(11155111)),
		&types.DynamicFeeTx{ChainID: big.NewInt(11155111), Nonce: 5,
			GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2e9), Gas: 21000, To: &to, Value: big.NewInt(1)},
	)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tx.MarshalBinary()
	h.Advance(time.Millisecond)
	refused(
		root.Submit(
			"eth_send_raw_transaction",
			"ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION",
			map[string]any{"signedTransaction": hexutil.Encode(raw),
				"caip2": "eip155:11155111"},
		),
		"transactionHash",
		"eip155:11155111 node: nonce too low",
	)

	from, _ := base58.Decode(solAddr)
	msg := []byte{1, 0, 1, 3}
	msg = append(append(append(msg, from...), make([]byte, 32)...), make([]byte, 32)...)
	msg[4+32] = 7
	msg = append(msg, make([]byte, 32)...)
	msg = append(msg, 1, 2, 2, 0, 1, 12, 2, 0, 0, 0, 0x40, 0x42, 0x0f, 0, 0, 0, 0, 0)
	unsignedSol := append(append([]byte{1}, make([]byte, 64)...), msg...)
	h.Advance(time.Millisecond)
	refused(
		root.Submit(
			"sol_send_transaction",
			"ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2",
			map[string]any{"unsignedTransaction": hex.EncodeToString(unsignedSol),
				"signWiths": []string{solAddr}, "caip2": "solana:devnet"},
		),
		"sendTransactionStatusId",
		"Blockhash not found",
	)

	// A sponsored send where the operator sponsors nothing is refused with the reason.
	h.Advance(time.Millisecond)
	ns := root.Submit(
		"eth_send_transaction",
		"ACTIVITY_TYPE_ETH_SEND_TRANSACTION",
		map[string]any{"from": ethAddr, "caip2": "eip155:11155111",
			"to": to.Hex(), "value": "1", "sponsor": true},
	)
	if ns.Status != http.StatusBadRequest || !strings.Contains(string(ns.Raw), "GAS_SPONSORSHIP_UNAVAILABLE") {
		t.Fatalf("eth_send_transaction: %d %s", ns.Status, ns.Raw)
	}
}
