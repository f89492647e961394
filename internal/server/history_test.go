package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// fakeChain is a JSON-RPC node whose blocks the test writes (and rewrites, for reorgs): blocks
// by number, Transfer logs by block hash, the "latest" and "finalized" heads.
type fakeChain struct {
	mu                sync.Mutex
	latest, finalized uint64
	blocks            map[uint64]fakeBlock
}

type fakeBlock struct {
	hash, parent string
	txs          []fakeTx
}

type fakeTx struct {
	hash, from, to, value string
	logs                  []string // Transfer logs: token, from, to, amount (hex) joined by " "
}

func (f *fakeChain) methods() map[string]func([]json.RawMessage) string {
	return map[string]func([]json.RawMessage) string{
		"eth_getBlockByNumber": func(p []json.RawMessage) string {
			f.mu.Lock()
			defer f.mu.Unlock()
			var tag string
			_ = json.Unmarshal(p[0], &tag)
			var n uint64
			switch tag {
			case "latest":
				n = f.latest
			case "finalized":
				n = f.finalized
			default:
				v, _ := hexutil.DecodeUint64(tag)
				n = v
			}
			b, ok := f.blocks[n]
			if !ok {
				b = fakeBlock{hash: blockHash("b" + strconvHex(n)), parent: blockHash("b" + strconvHex(n-1))}
			}
			txs := make([]string, 0, len(b.txs))
			for _, t := range b.txs {
				to := `null`
				if t.to != "" {
					to = `"` + t.to + `"`
				}
				txs = append(txs, `{"hash":"`+t.hash+`","from":"`+t.from+`","to":`+to+`,"value":"`+t.value+`"}`)
			}
			return `{"number":"0x` + strconvHex(n) + `","hash":"` + b.hash + `","parentHash":"` + b.parent +
				`","timestamp":"0x` + strconvHex(0x6750f000+n*12) + `","transactions":[` + strings.Join(txs, ",") + `]}`
		},
		"eth_getLogs": func(p []json.RawMessage) string {
			f.mu.Lock()
			defer f.mu.Unlock()
			var q struct {
				BlockHash string `json:"blockHash"`
			}
			_ = json.Unmarshal(p[0], &q)
			var logs []string
			for _, b := range f.blocks {
				if b.hash != q.BlockHash {
					continue
				}
				for _, t := range b.txs {
					for _, l := range t.logs {
						w := strings.Fields(l)
						logs = append(logs, `{"address":"`+w[0]+`","topics":["`+
							`0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef","`+
							common.BytesToHash(common.FromHex(w[1])).Hex()+`","`+
							common.BytesToHash(common.FromHex(w[2])).Hex()+`"],"data":"`+
							common.BigToHash(hexutil.MustDecodeBig(w[3])).Hex()+`","transactionHash":"`+t.hash+`"}`)
					}
				}
			}
			return `[` + strings.Join(logs, ",") + `]`
		},
		"eth_getTransactionReceipt": func(p []json.RawMessage) string {
			status := "0x1"
			if strings.Contains(string(p[0]), blockHash("t-reverted")) {
				status = "0x0"
			}
			return `{"status":"` + status + `","gasUsed":"0x5208","effectiveGasPrice":"0x3b9aca00"}`
		},
		"eth_sendRawTransaction": func([]json.RawMessage) string { return `"0x00"` },
	}
}

func (f *fakeChain) set(n uint64, b fakeBlock, latest, finalized uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocks[n] = b
	f.latest, f.finalized = latest, finalized
}

func blockHash(s string) string { return common.BytesToHash(crypto.Keccak256([]byte(s))).Hex() }

// list_eth_transaction_history from the follower's index, against a node the test drives: an
// ether deposit, a send Latchkey made (marked), an ERC-20 Transfer of a token no catalog lists,
// CONFIRMED then FINALIZED; an item whose block is reorganized away dropped; pages forward and
// back with cursors that cannot be forged or used for another address; a private key address
// refused. Runs on SQLite, and on PostgreSQL with LATCHKEY_TEST_DATABASE_URL.
func TestEthTransactionHistory(t *testing.T) {
	chain := &fakeChain{latest: 0x10, finalized: 0x10, blocks: map[uint64]fakeBlock{}}
	node := newFakeNode(t, chain.methods())
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{"eip155:11155111": node.srv.URL}
	}))
	root, _ := h.RootOrg("Acme")
	w := root.MustSubmit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "main",
		"accounts": []any{servertest.WalletAccounts[0], map[string]any{"curve": "CURVE_SECP256K1",
			"pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/1", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}})
	addr := strings.ToLower(w.Str("activity", "result", "createWalletResult", "addresses", "0"))
	other := strings.ToLower(w.Str("activity", "result", "createWalletResult", "addresses", "1"))
	const stranger = "0x3333333333333333333333333333333333333333"
	const token = "0x4444444444444444444444444444444444444444"

	// A send Latchkey makes: its hash is in the next block.
	key, _ := crypto.GenerateKey()
	dead := common.HexToAddress(stranger)
	signed, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(11155111)), &types.DynamicFeeTx{
		ChainID: big.NewInt(11155111), GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2e9), Gas: 21000, To: &dead,
		Value: big.NewInt(5e17)})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := signed.MarshalBinary()
	sr := root.MustSubmit("eth_send_raw_transaction", "ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION",
		map[string]any{"signedTransaction": hexutil.Encode(raw), "caip2": "eip155:11155111"})
	sentHash := sr.Str("activity", "result", "ethSendRawTransactionResult", "transactionHash")
	fingerprint := sr.Str("activity", "fingerprint")

	ctx := context.Background()
	follow := func() { h.Server.ChainDeps().FollowBalancesOnce(ctx) }
	follow() // no webhook subscribes: the index runs all the same; the cursors start at the head (0x10)
	h11 := blockHash("b11")
	chain.set(0x11, fakeBlock{hash: h11, parent: blockHash("b10"), txs: []fakeTx{
		{hash: blockHash("t-in"), from: stranger, to: addr, value: "0xde0b6b3a7640000"},
		{hash: sentHash, from: addr, to: stranger, value: "0x6f05b59d3b20000"},
		{hash: blockHash("t-token"), from: stranger, to: token, value: "0x0",
			logs: []string{token + " " + addr + " " + stranger + " 0xf4240"}},
		{hash: blockHash("t-none"), from: stranger, to: token, value: "0x1"},
	}}, 0x11, 0x10)
	calls := node.calls.Load()
	follow()
	// The pass's cost: the two heads, the block, its Transfer logs, and one receipt per
	// transaction of a wallet account (three of the four).
	if got := node.calls.Load() - calls; got != 7 {
		t.Fatalf("a pass over one block made %d RPC calls, want 7", got)
	}

	list := func(address string, page map[string]any) servertest.Response {
		p := map[string]any{"address": address, "caip2": "eip155:11155111"}
		if page != nil {
			p["paginationOptions"] = page
		}
		return root.Query("list_eth_transaction_history", p)
	}
	r := list(addr, nil)
	servertest.MustOK(t, r)
	if r.Len("transactions") != 3 {
		t.Fatalf("want 3 items: %s", r.Raw)
	}
	// Most recent first: the token transfer (index 2), the send (1), the deposit (0).
	tok, sent, dep := 0, 1, 2
	if r.Str("transactions", "0", "transactionHash") != blockHash("t-token") ||
		r.Str("transactions", "1", "transactionHash") != sentHash ||
		r.Str("transactions", "2", "transactionHash") != blockHash("t-in") {
		t.Fatalf("order: %s", r.Raw)
	}
	at := func(i int, path ...string) string {
		return r.Str(append([]string{"transactions", string(rune('0' + i))}, path...)...)
	}
	for i := 0; i < 3; i++ {
		if at(i, "status") != "CONFIRMED" || at(i, "block", "number") != "17" || at(i, "block", "hash") != h11 ||
			at(i, "fee", "amount") != "21000000000000" || at(i, "fee", "caip19") != "eip155:11155111/slip44:60" ||
			at(i, "block", "timestamp") != time.Unix(0x6750f000+0x11*12, 0).UTC().Format(time.RFC3339) {
			t.Fatalf("item %d: %s", i, r.Raw)
		}
	}
	if at(dep, "transfers", "0", "direction") != "IN" || at(dep, "transfers", "0", "amount") != "1000000000000000000" ||
		at(
			dep,
			"transfers",
			"0",
			"counterparty",
		) != stranger || at(dep, "transfers", "0", "asset", "symbol") != "ETH" ||
		at(dep, "transfers", "0", "display", "crypto") != "1" || at(dep, "origin") != "EXTERNAL" ||
		r.Body["transactions"].([]any)[dep].(map[string]any)["turnkey"] != nil {
		t.Fatalf("deposit: %s", r.Raw)
	}
	if at(sent, "transfers", "0", "direction") != "OUT" || at(sent, "origin") != "TURNKEY" ||
		at(sent, "turnkey", "activityFingerprint") != fingerprint || fingerprint == "" ||
		at(sent, "turnkey", "submittedAt") == "" {
		t.Fatalf("own send: %s", r.Raw)
	}
	if at(tok, "transfers", "0", "direction") != "OUT" || at(tok, "transfers", "0", "amount") != "1000000" ||
		at(tok, "transfers", "0", "asset", "caip19") != "eip155:11155111/erc20:"+token ||
		at(tok, "to") != token || at(tok, "from") != stranger {
		t.Fatalf("token transfer: %s", r.Raw)
	}

	// A reorg: block 0x12 gives the address a deposit, then 0x12 is replaced by a block without
	// it; the next block's parent hash drops the item.
	chain.set(0x12, fakeBlock{hash: blockHash("b12a"), parent: h11, txs: []fakeTx{
		{hash: blockHash("t-reorged"), from: stranger, to: addr, value: "0x1"}}}, 0x12, 0x10)
	follow()
	if r := list(addr, nil); r.Len("transactions") != 4 ||
		r.Str("transactions", "0", "transactionHash") != blockHash("t-reorged") {
		t.Fatalf("before the reorg: %s", r.Raw)
	}
	chain.set(0x12, fakeBlock{hash: blockHash("b12b"), parent: h11}, 0x12, 0x10)
	chain.set(0x13, fakeBlock{hash: blockHash("b13"), parent: blockHash("b12b")}, 0x13, 0x10)
	follow()
	if r := list(addr, nil); r.Len("transactions") != 3 ||
		r.Str("transactions", "0", "transactionHash") != blockHash("t-token") {
		t.Fatalf("after the reorg: %s", r.Raw)
	}

	// Finality passes block 0x11 (and 0x12, whose canonical block holds nothing of ours).
	chain.set(0x13, fakeBlock{hash: blockHash("b13"), parent: blockHash("b12b")}, 0x13, 0x13)
	follow()
	r = list(addr, nil)
	for i := 0; i < 3; i++ {
		if at(i, "status") != "FINALIZED" {
			t.Fatalf("item %d not finalized: %s", i, r.Raw)
		}
	}

	// Pages of 2: forward, then back.
	p1 := list(addr, map[string]any{"limit": "2"})
	servertest.MustOK(t, p1)
	if p1.Len("transactions") != 2 || p1.Str("transactions", "0", "transactionHash") != blockHash("t-token") ||
		p1.Body["pageInfo"].(map[string]any)["hasNextPage"] != true ||
		p1.Body["pageInfo"].(map[string]any)["hasPreviousPage"] != false {
		t.Fatalf("page 1: %s", p1.Raw)
	}
	p2 := list(addr, map[string]any{"limit": "2", "after": p1.Str("pageInfo", "endCursor")})
	servertest.MustOK(t, p2)
	if p2.Len("transactions") != 1 || p2.Str("transactions", "0", "transactionHash") != blockHash("t-in") ||
		p2.Body["pageInfo"].(map[string]any)["hasNextPage"] != false ||
		p2.Body["pageInfo"].(map[string]any)["hasPreviousPage"] != true {
		t.Fatalf("page 2: %s", p2.Raw)
	}
	back := list(addr, map[string]any{"limit": "2", "before": p2.Str("pageInfo", "startCursor")})
	servertest.MustOK(t, back)
	if back.Len("transactions") != 2 || back.Str("transactions", "0", "transactionHash") != blockHash("t-token") ||
		back.Str("transactions", "1", "transactionHash") != sentHash ||
		back.Body["pageInfo"].(map[string]any)["hasPreviousPage"] != false ||
		back.Body["pageInfo"].(map[string]any)["hasNextPage"] != true {
		t.Fatalf("back to page 1: %s", back.Raw)
	}
	back1 := list(addr, map[string]any{"limit": "1", "before": p2.Str("pageInfo", "startCursor")})
	if back1.Len("transactions") != 1 || back1.Str("transactions", "0", "transactionHash") != sentHash ||
		back1.Body["pageInfo"].(map[string]any)["hasPreviousPage"] != true {
		t.Fatalf("one back: %s", back1.Raw)
	}

	// Cursors: a forged one, and one of another address, are refused naming the field.
	cur, _ := base64.RawURLEncoding.DecodeString(p1.Str("pageInfo", "endCursor"))
	forged := []byte(strings.Replace(string(cur), "000000000017.000001", "000000000017.000000", 1))
	if string(forged) == string(cur) {
		t.Fatalf("cursor %q does not name the send's item", cur)
	}
	servertest.WantError(t, list(addr, map[string]any{"after": base64.RawURLEncoding.EncodeToString(forged)}),
		http.StatusBadRequest, 3, "paginationOptions.after")
	servertest.WantError(t, list(addr, map[string]any{"after": "not a cursor"}),
		http.StatusBadRequest, 3, "paginationOptions.after")
	servertest.WantError(t, list(other, map[string]any{"before": p1.Str("pageInfo", "endCursor")}),
		http.StatusBadRequest, 3, "paginationOptions.before")
	if o := list(other, nil); o.Len("transactions") != 0 {
		t.Fatalf("the other address has no history yet: %s", o.Raw)
	}

	// A backfill indexes a range the follower never read (FINALIZED below the finalized head),
	// for the one address it names; a range over the cap is refused before any RPC call.
	chain.set(0x5, fakeBlock{hash: blockHash("b5"), parent: blockHash("b4"), txs: []fakeTx{
		{hash: blockHash("t-old"), from: stranger, to: other, value: "0x2"},
		{hash: blockHash("t-old-addr"), from: stranger, to: addr, value: "0x3"},
		{hash: blockHash("t-reverted"), from: other, to: stranger, value: "0x9"}}}, 0x13, 0x13)
	deps := h.Server.ChainDeps()
	if n, err := deps.Backfill(ctx, "eip155:11155111", other, 4, 6, nil); err != nil || n != 2 {
		t.Fatalf("backfill: %d items, %v", n, err)
	}
	// Most recent first: the reverted send (its value did not move: no transfer, the fee paid),
	// then the deposit.
	if o := list(other, nil); o.Len("transactions") != 2 || o.Str("transactions", "1", "status") != "FINALIZED" ||
		o.Str("transactions", "1", "block", "number") != "5" ||
		o.Str("transactions", "1", "transfers", "0", "amount") != "2" ||
		o.Str("transactions", "0", "transactionHash") != blockHash("t-reverted") ||
		o.Len(
			"transactions",
			"0",
			"transfers",
		) != 0 || o.Str("transactions", "0", "fee", "amount") != "21000000000000" {
		t.Fatalf("backfilled: %s", o.Raw)
	}
	if r := list(addr, nil); r.Len("transactions") != 3 {
		t.Fatalf("a backfill of another address wrote this one's: %s", r.Raw)
	}
	calls = node.calls.Load()
	if _, err := deps.Backfill(ctx, "eip155:11155111", other, 0, 10_000, nil); err == nil ||
		!strings.Contains(err.Error(), "at most 10000") || node.calls.Load() != calls {
		t.Fatalf("a backfill over the cap: %v", err)
	}
	if _, err := deps.Backfill(ctx, "eip155:11155111", stranger, 1, 2, nil); err == nil ||
		!strings.Contains(err.Error(), "not a wallet account address") {
		t.Fatalf("a backfill of a stranger's address: %v", err)
	}

	// A private key address is refused; a stranger's address is not found.
	pk := root.MustSubmit("create_private_keys", "ACTIVITY_TYPE_CREATE_PRIVATE_KEYS_V2",
		map[string]any{"privateKeys": []any{map[string]any{"privateKeyName": "hot", "curve": "CURVE_SECP256K1",
			"privateKeyTags": []string{}, "addressFormats": []string{"ADDRESS_FORMAT_ETHEREUM"}}}})
	pkAddr := pk.Str("activity", "result", "createPrivateKeysResultV2", "privateKeys", "0", "addresses", "0", "address")
	servertest.WantError(t, list(pkAddr, nil), http.StatusBadRequest, 3, "private key address")
	servertest.WantError(t, list(stranger, nil), http.StatusNotFound, 5, "not a wallet account address")
}

// Two processes over one PostgreSQL following the same chain at once, at both tags: every item
// is written once with the status of the furthest tag that passed its block, and neither
// process fails (the items of a block are written in one order). Runs when
// LATCHKEY_TEST_DATABASE_URL is set.
func TestEthTransactionHistoryTwoProcesses(t *testing.T) {
	chain := &fakeChain{latest: 0x10, finalized: 0x10, blocks: map[uint64]fakeBlock{}}
	node := newFakeNode(t, chain.methods())
	a, b := twoProcessesWith(t, func(c *server.Config) {
		c.ChainRPC = map[string]string{"eip155:11155111": node.srv.URL}
	})
	root, _ := a.RootOrg("Acme")
	w := root.MustSubmit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts[:1]})
	addr := strings.ToLower(w.Str("activity", "result", "createWalletResult", "addresses", "0"))
	const stranger = "0x3333333333333333333333333333333333333333"
	ctx := context.Background()
	a.Server.ChainDeps().FollowBalancesOnce(ctx) // both cursors at 0x10
	for n := uint64(0x11); n <= 0x18; n++ {
		h := "b" + strconvHex(n)
		chain.set(n, fakeBlock{hash: blockHash(h), parent: blockHash("b" + strconvHex(n-1)), txs: []fakeTx{
			{hash: blockHash(h + "in"), from: stranger, to: addr, value: "0x1"},
			{hash: blockHash(h + "out"), from: addr, to: stranger, value: "0x2"},
		}}, 0x18, 0x14)
	}
	var wg sync.WaitGroup
	for _, h := range []*servertest.Harness{a, b, a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); h.Server.ChainDeps().FollowBalancesOnce(ctx) }()
	}
	wg.Wait()
	r := root.MustQuery(
		"list_eth_transaction_history",
		map[string]any{
			"address":           addr,
			"caip2":             "eip155:11155111",
			"paginationOptions": map[string]any{"limit": "100"},
		},
	)
	if r.Len("transactions") != 16 {
		t.Fatalf("want 16 items, one per transaction: %s", r.Raw)
	}
	seen := map[string]bool{}
	var items []struct {
		TransactionHash string `json:"transactionHash"`
		Status          string `json:"status"`
		Block           struct {
			Number string `json:"number"`
		} `json:"block"`
	}
	r.Decode(t, &items, "transactions")
	for _, it := range items {
		want := "CONFIRMED"
		if it.Block.Number <= "20" { // 0x14
			want = "FINALIZED"
		}
		if seen[it.TransactionHash] || it.Status != want {
			t.Fatalf("item %+v (want %s, once): %s", it, want, r.Raw)
		}
		seen[it.TransactionHash] = true
	}
}
