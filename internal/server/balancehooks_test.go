package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// Balance updates from blocks, against a node answering in the format of real ones: an ERC-20
// Transfer log to a wallet account and an ether transfer from it become a deposit and a
// withdrawal for BALANCE_CONFIRMED_UPDATES endpoints; a block is reported once, and the
// finalized tag gives BALANCE_FINALIZED_UPDATES. Private-key addresses and strangers' addresses
// produce nothing.
func TestBalanceWebhooksFromBlocks(t *testing.T) {
	var head atomic.Uint64
	head.Store(0x10)
	const usdc = "0x1c7d4b196cb0c7b01d743fbc6116a902379c7238" // the built-in Sepolia USDC
	var watched atomic.Value
	watched.Store("0x0000000000000000000000000000000000000000")
	evm := newFakeNode(t, map[string]func([]json.RawMessage) string{
		"eth_getBlockByNumber": func(p []json.RawMessage) string {
			var tag string
			_ = json.Unmarshal(p[0], &tag)
			n := head.Load()
			if tag == "latest" || tag == "finalized" {
				return `{"number":"0x` + strconvHex(n) + `","hash":"0xh","timestamp":"0x1","transactions":[]}`
			}
			w := watched.Load().(string)
			return `{"number":"` + tag + `","hash":"0xblock` + tag + `","timestamp":"0x6750f000","transactions":[` +
				`{"hash":"0xether","from":"` + w + `","to":"0x000000000000000000000000000000000000dead","value":"0xde0b6b3a7640000"},` +
				`{"hash":"0xnothing","from":"0x1111111111111111111111111111111111111111","to":"0x2222222222222222222222222222222222222222","value":"0x1"}]}`
		},
		"eth_getTransactionReceipt": func([]json.RawMessage) string {
			return `{"status":"0x1","gasUsed":"0x5208","effectiveGasPrice":"0x1"}` // the history index's fee
		},
		"eth_getLogs": func([]json.RawMessage) string {
			w := strings.TrimPrefix(watched.Load().(string), "0x")
			return `[{"address":"` + usdc + `","topics":["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",` +
				`"0x0000000000000000000000003333333333333333333333333333333333333333","0x000000000000000000000000` + w + `"],` +
				`"data":"0x00000000000000000000000000000000000000000000000000000000000f4240","transactionHash":"0xtoken"}]`
		},
	})
	recv := newHookRecorder(t)
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{"eip155:11155111": evm.srv.URL}
		c.LoopbackWebhooks = true
	}))
	h.Server.Webhooks.Poll = 20 * time.Millisecond
	root, created := h.RootOrg("Acme")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, w)
	addr := strings.ToLower(w.Str("activity", "result", "createWalletResult", "addresses", "0"))
	watched.Store(addr)
	servertest.MustOK(
		t,
		createEndpoint(root, recv.URL, "balances", "BALANCE_CONFIRMED_UPDATES", "BALANCE_FINALIZED_UPDATES"),
	)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Server.Webhooks.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	h.Server.ChainDeps().FollowBalancesOnce(ctx) // the first pass starts both cursors at the head (0x10)
	head.Store(0x11)                             // one new block, at both tags
	h.Server.ChainDeps().FollowBalancesOnce(ctx)
	h.Server.ChainDeps().FollowBalancesOnce(ctx) // nothing new: nothing sent twice
	all := recv.waitFor(4, 10*time.Second, "BALANCE_CONFIRMED_UPDATES", "BALANCE_FINALIZED_UPDATES")
	confirmed, finalized := recv.events("BALANCE_CONFIRMED_UPDATES"), recv.events("BALANCE_FINALIZED_UPDATES")
	if len(confirmed) != 2 || len(finalized) != 2 {
		t.Fatalf("confirmed %d, finalized %d deliveries, want 2 and 2: %v", len(confirmed), len(finalized), all)
	}
	ops := map[string]map[string]any{}
	for _, b := range confirmed {
		msg := b["msg"].(map[string]any)
		ops[msg["operation"].(string)] = msg
		if b["type"] != "balances:confirmed" || b["organizationId"] != created.OrganizationID ||
			msg["address"] != addr {
			t.Fatalf("body: %v", b)
		}
	}
	dep, wd := ops["deposit"], ops["withdraw"]
	if dep == nil || wd == nil {
		t.Fatalf("want a deposit and a withdrawal: %v", confirmed)
	}
	if a := dep["asset"].(map[string]any); a["symbol"] != "USDC" || a["amount"] != "1000000" || a["decimals"] != "6" ||
		dep["txHash"] != "0xtoken" {
		t.Fatalf("token deposit: %v", dep)
	}
	if a := wd["asset"].(map[string]any); a["symbol"] != "ETH" || a["amount"] != "1000000000000000000" ||
		wd["txHash"] != "0xether" {
		t.Fatalf("ether withdrawal: %v", wd)
	}
	if finalized[0]["type"] != "balances:finalized" {
		t.Fatalf("finalized body: %v", finalized[0])
	}
}

func strconvHex(n uint64) string {
	const digits = "0123456789abcdef"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 16 {
		b = append([]byte{digits[n%16]}, b...)
	}
	return string(b)
}

// Balance updates on Solana, from a block in the format of getBlock's answers: a wallet
// account's lamports leave it (withdraw, fee included) and its token account of the asset
// list's devnet USDC receives tokens (deposit, by owner); a stranger's change produces nothing;
// a skipped slot is no error.
func TestSolanaBalanceWebhooks(t *testing.T) {
	var slot atomic.Uint64
	slot.Store(100)
	var watched atomic.Value
	watched.Store("11111111111111111111111111111111")
	sol := newFakeNode(t, map[string]func([]json.RawMessage) string{
		"getSlot": func([]json.RawMessage) string { return strconvDec(slot.Load()) },
		"getBlock": func(p []json.RawMessage) string {
			var s uint64
			_ = json.Unmarshal(p[0], &s)
			if s == 101 {
				return `{"jsonrpc":"2.0","id":1,"error":{"code":-32007,"message":"Slot 101 was skipped, or missing due to ledger jump to recent snapshot"}}`
			}
			w := watched.Load().(string)
			return `{"blockhash":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin","blockTime":1733000000,"parentSlot":101,"transactions":[{` +
				`"meta":{"err":null,"fee":5000,"preBalances":[5000000000,1000000000,1],"postBalances":[3999995000,2000000000,1],` +
				`"preTokenBalances":[{"accountIndex":1,"mint":"4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU","owner":"` + w + `","uiTokenAmount":{"amount":"0","decimals":6}}],` +
				`"postTokenBalances":[{"accountIndex":1,"mint":"4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU","owner":"` + w + `","uiTokenAmount":{"amount":"2500000","decimals":6}}],` +
				`"loadedAddresses":{"writable":[],"readonly":[]}},` +
				`"transaction":{"signatures":["5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW"],` +
				`"message":{"accountKeys":["` + w + `","CuieVDEDtLo7FypA9SbLM9saXFdb1dsshEkyErMqkRQq","11111111111111111111111111111111"]}}}]}`
		},
	})
	recv := newHookRecorder(t)
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{"solana:devnet": sol.srv.URL}
		c.LoopbackWebhooks = true
	}))
	h.Server.Webhooks.Poll = 20 * time.Millisecond
	root, _ := h.RootOrg("Acme")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "sol", "accounts": []any{map[string]any{
			"curve": "CURVE_ED25519", "pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/501'/0'/0'", "addressFormat": "ADDRESS_FORMAT_SOLANA"}}},
	)
	servertest.MustOK(t, w)
	addr := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	watched.Store(addr)
	servertest.MustOK(
		t,
		createEndpoint(root, recv.URL, "sol", "BALANCE_CONFIRMED_UPDATES"),
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Server.Webhooks.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	h.Server.ChainDeps().FollowBalancesOnce(ctx) // cursors at slot 100
	slot.Store(102)                              // 101 skipped, 102 holds the transaction
	h.Server.ChainDeps().FollowBalancesOnce(ctx)
	got := recv.waitFor(2, 10*time.Second, "BALANCE_CONFIRMED_UPDATES")
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want 2: %v", len(got), got)
	}
	by := map[string]map[string]any{}
	for _, b := range got {
		msg := b["msg"].(map[string]any)
		by[msg["asset"].(map[string]any)["symbol"].(string)] = msg
		if msg["address"] != addr || msg["caip2"] != "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1" {
			t.Fatalf("body: %v", b)
		}
	}
	if m := by["SOL"]; m == nil || m["operation"] != "withdraw" ||
		m["asset"].(map[string]any)["amount"] != "1000005000" {
		t.Fatalf("SOL: %v", by["SOL"])
	}
	if m := by["USDC"]; m == nil || m["operation"] != "deposit" || m["asset"].(map[string]any)["amount"] != "2500000" {
		t.Fatalf("USDC: %v", by["USDC"])
	}
}

func strconvDec(n uint64) string { return strconv.FormatUint(n, 10) }

// hookRecorder is a webhook receiver that keeps each delivery's JSON body by its
// X-Turnkey-Event-Type.
type hookRecorder struct {
	*httptest.Server
	mu  sync.Mutex
	got map[string][]map[string]any
}

func newHookRecorder(t *testing.T) *hookRecorder {
	h := &hookRecorder{got: map[string][]map[string]any{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		h.mu.Lock()
		h.got[r.Header.Get("X-Turnkey-Event-Type")] = append(h.got[r.Header.Get("X-Turnkey-Event-Type")], m)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// events returns a copy of the bodies delivered with any of the event types.
func (h *hookRecorder) events(types ...string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, typ := range types {
		out = append(out, h.got[typ]...)
	}
	return out
}

// waitFor waits (up to timeout) until at least n bodies of the types arrived, then a little
// longer for any extra, and returns them.
func (h *hookRecorder) waitFor(n int, timeout time.Duration, types ...string) []map[string]any {
	deadline := time.Now().Add(timeout)
	for len(h.events(types...)) < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	return h.events(types...)
}
