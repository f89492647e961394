package server_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/ops/chaindata"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// solHistoryNode is a Solana JSON-RPC stand-in holding a list of transactions of one address,
// newest first, with getSignaturesForAddress's before/until/limit paging.
type solHistoryNode struct {
	sigs []string
	txs  map[string]string // signature → getTransaction result (json encoding)
}

func (h *solHistoryNode) signaturesFor(p []json.RawMessage) string {
	var opts struct {
		Before, Until string
		Limit         int
	}
	_ = json.Unmarshal(p[1], &opts)
	start, end := 0, len(h.sigs)
	for i, s := range h.sigs {
		if s == opts.Before {
			start = i + 1
		}
		if s == opts.Until {
			end = i
		}
	}
	var out []string
	for i := start; i < end && len(out) < opts.Limit; i++ {
		status := "confirmed"
		if i >= 3 {
			status = "finalized"
		}
		out = append(out, fmt.Sprintf(`{"signature":%q,"slot":%d,"err":null,"blockTime":%d,"confirmationStatus":%q}`,
			h.sigs[i], 1000-i, 1_700_000_000-i, status))
	}
	return "[" + strings.Join(out, ",") + "]"
}

// solTxJSON is a getTransaction answer: keys, lamport balances before and after, token balances.
func solTxJSON(slot int, keys []string, pre, post []uint64, preTok, postTok string) string {
	k, _ := json.Marshal(keys)
	a, _ := json.Marshal(pre)
	b, _ := json.Marshal(post)
	return fmt.Sprintf(`{"slot":%d,"blockTime":1700000000,"meta":{"err":null,"fee":5000,"preBalances":%s,`+
		`"postBalances":%s,"preTokenBalances":[%s],"postTokenBalances":[%s]},"transaction":{"signatures":[],`+
		`"message":{"header":{"numRequiredSignatures":1,"numReadonlySignedAccounts":0,"numReadonlyUnsignedAccounts":1},`+
		`"accountKeys":%s}}}`, slot, a, b, preTok, postTok, k)
}

func tokBal(i int, mint, owner, amount string) string {
	return fmt.Sprintf(`{"accountIndex":%d,"mint":%q,"owner":%q,"uiTokenAmount":{"amount":%q,"decimals":6}}`,
		i, mint, owner, amount)
}

func TestSolTransactionHistory(t *testing.T) {
	hist := &solHistoryNode{txs: map[string]string{}}
	var sent string
	node := newFakeNode(t, map[string]func([]json.RawMessage) string{
		"getSignaturesForAddress": hist.signaturesFor,
		"getTransaction": func(p []json.RawMessage) string {
			var sig string
			_ = json.Unmarshal(p[0], &sig)
			if tx, ok := hist.txs[sig]; ok {
				return tx
			}
			return "null"
		},
		"sendTransaction": func(p []json.RawMessage) string {
			var b64 string
			_ = json.Unmarshal(p[0], &b64)
			raw, _ := base64.StdEncoding.DecodeString(b64)
			sent = base58.Encode(raw[1:65])
			return `"` + sent + `"`
		},
	})
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{chaindata.SolanaDevnet: node.srv.URL}
	}))
	root, _ := h.RootOrg("Acme")
	_, solAddr, _ := ethAndSolana(t, root)
	other := base58.Encode(make([]byte, 32))
	usdc, friend := "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", strings.Repeat("F", 44)

	// Latchkey's own send: a SOL transfer it signed and sent.
	from, _ := base58.Decode(solAddr)
	msg := append([]byte{1, 0, 1, 3}, from...)
	msg = append(append(msg, make([]byte, 64)...), make([]byte, 32)...)
	msg[4+32] = 7
	msg = append(msg, 1, 2, 2, 0, 1, 12, 2, 0, 0, 0, 0x40, 0x42, 0x0f, 0, 0, 0, 0, 0)
	bh := make([]byte, 32)
	bh[0] = 1
	h.Advance(time.Millisecond)
	servertest.MustOK(t, root.Submit(
		"sol_send_transaction",
		"ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2",
		map[string]any{
			"unsignedTransaction": hex.EncodeToString(append(append([]byte{1}, make([]byte, 64)...), msg...)),
			"signWiths":           []string{solAddr},
			"caip2":               "solana:devnet",
			"recentBlockhash":     base58.Encode(bh),
		},
	))
	to := base58.Encode(msg[4+32 : 4+64])

	// 30 transactions: Latchkey's send (newest), an incoming USDC transfer, then incoming SOL.
	hist.sigs = append(hist.sigs, sent)
	hist.txs[sent] = solTxJSON(1000, []string{solAddr, to, "11111111111111111111111111111111"},
		[]uint64{10_000_000, 0, 1}, []uint64{8_995_000, 1_000_000, 1}, "", "")
	for i := 1; i < 30; i++ {
		sig := base58.Encode(append([]byte{byte(i)}, make([]byte, 63)...))
		hist.sigs = append(hist.sigs, sig)
		if i == 1 {
			hist.txs[sig] = solTxJSON(999, []string{friend, "TokA", "TokB", solAddr}, []uint64{5, 2, 2, 9},
				[]uint64{0, 2, 2, 9}, tokBal(1, usdc, friend, "5000000")+","+tokBal(2, usdc, solAddr, "0"),
				tokBal(1, usdc, friend, "4000000")+","+tokBal(2, usdc, solAddr, "1000000"))
			continue
		}
		hist.txs[sig] = solTxJSON(1000-i, []string{friend, solAddr, "11111111111111111111111111111111"},
			[]uint64{uint64(1e9), 0, 1}, []uint64{uint64(1e9) - 5000 - uint64(i), uint64(i), 1}, "", "")
	}
	page := func(addr string, opts map[string]any) servertest.Response {
		return root.Query("list_sol_transaction_history", map[string]any{"address": addr, "caip2": "solana:devnet",
			"paginationOptions": opts})
	}
	p1 := page(solAddr, map[string]any{"limit": "10"})
	servertest.MustOK(t, p1)
	if p1.Len("transactions") != 10 || p1.Str("pageInfo", "hasNextPage") != "true" ||
		p1.Str("pageInfo", "hasPreviousPage") != "false" {
		t.Fatalf("page 1: %s", p1.Raw)
	}
	// Latchkey's send: OUT 1,000,000 lamports to the recipient, the fee apart, marked as its own.
	if p1.Str("transactions", "0", "signature") != sent || p1.Str("transactions", "0", "origin") != "TURNKEY" ||
		p1.Str("transactions", "0", "turnkey", "sponsored") != "false" ||
		p1.Str("transactions", "0", "turnkey", "activityFingerprint") == "" ||
		p1.Str("transactions", "0", "transfers", "0", "direction") != "OUT" ||
		p1.Str("transactions", "0", "transfers", "0", "amount") != "1000000" ||
		p1.Str("transactions", "0", "transfers", "0", "counterparty") != to ||
		p1.Str("transactions", "0", "transfers", "0", "display", "crypto") != "0.001" ||
		p1.Str("transactions", "0", "fee", "amount") != "5000" ||
		p1.Str("transactions", "0", "feePayer") != solAddr ||
		p1.Str("transactions", "0", "signers", "0", "writable") != "true" ||
		p1.Str("transactions", "0", "status") != "CONFIRMED" {
		t.Fatalf("Latchkey's send: %s", p1.Raw)
	}
	// The incoming USDC transfer, from the friend, in the asset list's terms.
	if p1.Str("transactions", "1", "origin") != "EXTERNAL" || p1.Len("transactions", "1", "transfers") != 1 ||
		p1.Str("transactions", "1", "transfers", "0", "direction") != "IN" ||
		p1.Str("transactions", "1", "transfers", "0", "amount") != "1000000" ||
		p1.Str("transactions", "1", "transfers", "0", "asset", "symbol") != "USDC" ||
		p1.Str("transactions", "1", "transfers", "0", "counterparty") != friend ||
		p1.Str("transactions", "4", "status") != "FINALIZED" {
		t.Fatalf("USDC transfer: %s", p1.Raw)
	}
	// Forward to the end, then back: the same transactions.
	p2 := page(solAddr, map[string]any{"limit": "10", "after": p1.Str("pageInfo", "endCursor")})
	p3 := page(solAddr, map[string]any{"limit": "10", "after": p2.Str("pageInfo", "endCursor")})
	servertest.MustOK(t, p3)
	if p2.Str("transactions", "0", "signature") != hist.sigs[10] || p3.Len("transactions") != 10 ||
		p3.Str("pageInfo", "hasNextPage") != "false" || p3.Str("transactions", "9", "signature") != hist.sigs[29] {
		t.Fatalf("pages 2 and 3: %s\n%s", p2.Raw, p3.Raw)
	}
	back := page(solAddr, map[string]any{"limit": "10", "before": p2.Str("pageInfo", "startCursor")})
	servertest.MustOK(t, back)
	if back.Str("transactions", "0", "signature") != sent ||
		back.Str("transactions", "9", "signature") != hist.sigs[9] ||
		back.Str("pageInfo", "hasPreviousPage") != "false" ||
		back.Str("pageInfo", "hasNextPage") != "true" {
		t.Fatalf("back to page 1: %s", back.Raw)
	}
	// A page is at most 25 transactions, whatever the limit asked.
	if big := page(solAddr, map[string]any{"limit": "100"}); big.Len("transactions") != 25 {
		t.Fatalf("limit 100: %d transactions", big.Len("transactions"))
	}

	// Cursors: forged, or from another address, are refused naming the field.
	c := []byte(p1.Str("pageInfo", "endCursor"))
	c[len(c)-3] ^= 1
	servertest.WantError(t, page(solAddr, map[string]any{"before": string(c)}), http.StatusBadRequest, 3,
		"paginationOptions.before")
	r := root.MustSubmit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "second",
		"accounts": []any{map[string]any{"curve": "CURVE_ED25519", "pathFormat": "PATH_FORMAT_BIP32",
			"path": "m/44'/501'/1'/0'", "addressFormat": "ADDRESS_FORMAT_SOLANA"}}})
	second := r.Result("createWalletResult", "addresses", "0")
	servertest.WantError(t, page(second, map[string]any{"after": p1.Str("pageInfo", "endCursor")}),
		http.StatusBadRequest, 3, "paginationOptions.after")
	servertest.WantError(t, page(solAddr, map[string]any{"before": "bm90IGEgY3Vyc29y"}), http.StatusBadRequest, 3,
		"paginationOptions.before")
	servertest.WantError(t, page(solAddr, map[string]any{"limit": "0"}), http.StatusBadRequest, 3,
		"paginationOptions.limit")
	// Only the organization's wallet accounts.
	servertest.WantError(t, page(other, nil), http.StatusNotFound, 5, "not a wallet account address")
	pk := root.Submit(
		"create_private_keys",
		"ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2",
		map[string]any{"privateKeys": []any{
			map[string]any{"privateKeyName": "hot", "curve": "CURVE_ED25519", "privateKeyTags": []string{},
				"addressFormats": []string{"ADDRESS_FORMAT_SOLANA"}}}},
	)
	servertest.MustOK(t, pk)
	pkAddr := pk.Str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "addresses", "0", "address")
	servertest.WantError(t, page(pkAddr, nil), http.StatusBadRequest, 3, "private key address")
}
