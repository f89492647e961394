package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// paymasterOf is the deployment's paymaster address (its sponsor keys, in custody).
type paymasterOf [20]byte

func (p paymasterOf) PaymasterAddress() [20]byte { return p }

const testDelegate = "0x99512B3a351645f035e0a99921058cc5169fC6f3"

// delegateChain is a fake EVM node that keeps what a sponsored send changes: an account's code
// (a type-4 transaction's authorizations are applied), its gas-station nonce (advanced by an
// executeBatch whose signature recovers to the account, unless skipNonce), the paymaster's
// nonce, and receipts.
type delegateChain struct {
	mu        sync.Mutex
	code      map[common.Address][]byte
	gsNonce   map[common.Address]uint64
	nonces    map[common.Address]uint64
	receipts  map[common.Hash]string
	sent      []*types.Transaction
	refuse    string // the next eth_sendRawTransaction answers this error
	skipNonce bool   // included without advancing the nonce (a skipped authorization)
}

func newDelegateChain() *delegateChain {
	return &delegateChain{code: map[common.Address][]byte{}, gsNonce: map[common.Address]uint64{},
		nonces: map[common.Address]uint64{}, receipts: map[common.Hash]string{}}
}

func (c *delegateChain) methods(t *testing.T) map[string]func([]json.RawMessage) string {
	addr := func(p json.RawMessage) common.Address {
		var s string
		_ = json.Unmarshal(p, &s)
		return common.HexToAddress(s)
	}
	lock := func(f func([]json.RawMessage) string) func([]json.RawMessage) string {
		return func(p []json.RawMessage) string {
			c.mu.Lock()
			defer c.mu.Unlock()
			return f(p)
		}
	}
	return map[string]func([]json.RawMessage) string{
		"eth_getCode": lock(func(p []json.RawMessage) string { return `"` + hexutil.Encode(c.code[addr(p[0])]) + `"` }),
		"eth_getStorageAt": lock(func(p []json.RawMessage) string {
			var w [32]byte
			new(big.Int).SetUint64(c.gsNonce[addr(p[0])]).FillBytes(w[:])
			return `"` + hexutil.Encode(w[:]) + `"`
		}),
		"eth_getTransactionCount": lock(func(p []json.RawMessage) string {
			return fmt.Sprintf(`"0x%x"`, c.nonces[addr(p[0])])
		}),
		"eth_estimateGas":          func([]json.RawMessage) string { return `"0xc350"` },
		"eth_maxPriorityFeePerGas": func([]json.RawMessage) string { return `"0x3b9aca00"` },
		"eth_getBlockByNumber":     func([]json.RawMessage) string { return `{"number":"0x10","baseFeePerGas":"0x77359400"}` },
		"eth_getTransactionReceipt": lock(func(p []json.RawMessage) string {
			var h string
			_ = json.Unmarshal(p[0], &h)
			if r, ok := c.receipts[common.HexToHash(h)]; ok {
				return r
			}
			return "null"
		}),
		"eth_sendRawTransaction": lock(func(p []json.RawMessage) string {
			if c.refuse != "" {
				msg := c.refuse
				c.refuse = ""
				return `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"` + msg + `"}}`
			}
			var raw string
			_ = json.Unmarshal(p[0], &raw)
			var tx types.Transaction
			if err := tx.UnmarshalBinary(common.FromHex(raw)); err != nil {
				t.Errorf("broadcast: %v", err)
				return `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"bad tx"}}`
			}
			from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), &tx)
			if err != nil || tx.Nonce() != c.nonces[from] {
				t.Errorf("broadcast from %v nonce %d, the chain's is %d (%v)", from, tx.Nonce(), c.nonces[from], err)
			}
			c.nonces[from]++
			for _, a := range tx.SetCodeAuthorizations() {
				authority, err := a.Authority()
				if err != nil || a.Nonce != c.nonces[authority] {
					continue // an invalid authorization is skipped
				}
				c.nonces[authority]++
				if a.Address == (common.Address{}) {
					c.code[authority] = nil
				} else {
					c.code[authority] = ethereum.DelegationCode(a.Address)
				}
			}
			if to := *tx.To(); len(tx.Data()) > 96 && !c.skipNonce {
				c.gsNonce[to]++
			}
			c.sent = append(c.sent, &tx)
			c.receipts[tx.Hash()] = `{"status":"0x1","blockNumber":"0x11","gasUsed":"0x30d40",` +
				`"effectiveGasPrice":"0xb2d05e00","from":"` + from.Hex() + `"}`
			return `"` + tx.Hash().Hex() + `"`
		}),
	}
}

func (c *delegateChain) last() *types.Transaction {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sent) == 0 {
		return nil
	}
	return c.sent[len(c.sent)-1]
}

// sponsoredHarness is a server with a gas-station file sponsoring eip155:11155111 through the
// fake chain, a test paymaster, and an organization with one Ethereum account.
func sponsoredHarness(t *testing.T, chain *delegateChain, extra string) (*servertest.Harness, *servertest.Client,
	common.Address, paymasterOf) {
	t.Helper()
	node := newFakeNode(t, chain.methods(t))
	file := filepath.Join(t.TempDir(), "gas.json")
	cfg := `{` + extra + `"evm":{"eip155:11155111":{"delegate":"` + testDelegate +
		`","maxGasPerTransaction":2000000,"maxFeePerGasWei":"100000000000","usdPerCoin":"3000"}}}`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{"eip155:11155111": node.srv.URL}
		c.GasStationFile = file
	}))
	pm := paymasterOf(h.Server.ChainDeps().Sponsor.PaymasterAddress())
	root, _ := h.RootOrg("Acme")
	w := root.MustSubmit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts[:1]})
	h.Advance(time.Millisecond)
	root.MustSubmit("upsert_gas_usage_config", "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG",
		map[string]any{"enabled": true, "orgWindowLimitUsd": "100", "subOrgWindowLimitUsd": "10",
			"windowDurationMinutes": "60"})
	return h, root, common.HexToAddress(w.Result("createWalletResult", "addresses", "0")), pm
}

// A sponsored send: the account (no ETH) signs a BatchExecution and its first send an EIP-7702
// authorization; the paymaster sends a type-4 transaction to the account calling executeBatch,
// with its own nonce from the store's counter; the second send has no authorization; the status
// follows the paymaster's transaction; a replayed gasStationNonce is refused; a refused broadcast
// is FAILED and its nonce filled; an included transaction that did not advance the nonce is
// FAILED "delegation not applied".
func TestSponsoredSend(t *testing.T) {
	chain := newDelegateChain()
	h, root, account, pm := sponsoredHarness(t, chain, "")
	chain.nonces[pm.PaymasterAddress()] = 5
	token := "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238"
	transfer := "0xa9059cbb000000000000000000000000000000000000000000000000000000000000dead" +
		"00000000000000000000000000000000000000000000000000000000000003e8"
	send := func(extra map[string]any) servertest.Response {
		h.Advance(time.Millisecond)
		body := map[string]any{"from": account.Hex(), "caip2": "eip155:11155111", "to": token, "value": "0",
			"data": transfer, "sponsor": true}
		for k, v := range extra {
			body[k] = v
		}
		return root.Submit("eth_send_transaction", "ACTIVITY_TYPE_ETH_SEND_TRANSACTION", body)
	}
	r := send(map[string]any{"gasStationNonce": "0"})
	servertest.MustOK(t, r)
	id := r.Str("activity", "result", "ethSendTransactionResult", "sendTransactionStatusId")
	tx := chain.last()
	if tx == nil || tx.Type() != types.SetCodeTxType || len(tx.SetCodeAuthorizations()) != 1 {
		t.Fatalf("first sponsored send: %v", tx)
	}
	from, _ := types.Sender(types.LatestSignerForChainID(big.NewInt(11155111)), tx)
	if from != common.Address(pm.PaymasterAddress()) || *tx.To() != account || tx.Nonce() != 5 ||
		tx.Value().Sign() != 0 {
		t.Fatalf("paymaster transaction: from %v to %v nonce %d", from, tx.To(), tx.Nonce())
	}
	if a, _ := tx.SetCodeAuthorizations()[0].Authority(); a != account ||
		tx.SetCodeAuthorizations()[0].Address != common.HexToAddress(testDelegate) {
		t.Fatalf("authorization by %v for %v", a, tx.SetCodeAuthorizations()[0].Address)
	}
	checkBatchSignature(t, tx, account, 0)
	st := root.Query("get_send_transaction_status", map[string]any{"sendTransactionStatusId": id})
	servertest.MustOK(t, st)
	if st.Str("txStatus") != "INCLUDED" || !strings.EqualFold(st.Str("eth", "txHash"), tx.Hash().Hex()) {
		t.Fatalf("status: %s", st.Raw)
	}
	// The second send: type 2, no authorization, nonce 1 (auto), the paymaster's next nonce.
	servertest.MustOK(t, send(nil))
	tx2 := chain.last()
	if tx2.Type() != types.DynamicFeeTxType || tx2.Nonce() != 6 {
		t.Fatalf("second send: type %d nonce %d", tx2.Type(), tx2.Nonce())
	}
	checkBatchSignature(t, tx2, account, 1)
	// A replayed (now stale) gasStationNonce: 400 naming it, nothing sent.
	before := len(chain.sent)
	servertest.WantError(t, send(map[string]any{"gasStationNonce": "1"}), 400, 3, "gasStationNonce")
	if len(chain.sent) != before {
		t.Fatal("a refused send was broadcast")
	}
	// The status of a new send, which must be FAILED with why.
	wantFailed := func(why string) {
		t.Helper()
		r := send(nil)
		servertest.MustOK(t, r)
		st := root.Query("get_send_transaction_status", map[string]any{
			"sendTransactionStatusId": r.Str(
				"activity",
				"result",
				"ethSendTransactionResult",
				"sendTransactionStatusId",
			)})
		if st.Str("txStatus") != "FAILED" || !strings.Contains(st.Str("txError"), why) {
			t.Fatalf("want FAILED %q: %s", why, st.Raw)
		}
	}
	// A refused broadcast: FAILED with the node's words, the nonce filled by a self-transfer.
	chain.refuse = "insufficient funds for gas * price + value"
	wantFailed("insufficient funds")
	filler := chain.last()
	if filler.Nonce() != 7 || *filler.To() != common.Address(pm.PaymasterAddress()) || filler.Value().Sign() != 0 {
		t.Fatalf("filler: nonce %d to %v", filler.Nonce(), filler.To())
	}
	// The refused send's nonce (2) is free again; the next send takes it with paymaster nonce 8.
	servertest.MustOK(t, send(map[string]any{"gasStationNonce": "2"}))
	if tx := chain.last(); tx.Nonce() != 8 {
		t.Fatalf("after the filler: nonce %d", tx.Nonce())
	}
	checkBatchSignature(t, chain.last(), account, 2)
	// Included without advancing the nonce: FAILED "delegation not applied".
	chain.skipNonce = true
	wantFailed("delegation not applied")
	// The usage is counted (gas × fee cap reserved, at $3000 per ETH), and a limit refuses a send.
	u := root.MustQuery("get_gas_usage", nil)
	if usd, ok := new(big.Rat).SetString(u.Str("usageUsd")); !ok || usd.Sign() <= 0 {
		t.Fatalf("usage: %s", u.Raw)
	}
	h.Advance(time.Millisecond)
	root.MustSubmit("upsert_gas_usage_config", "ACTIVITY_TYPE_UPSERT_GAS_USAGE_CONFIG",
		map[string]any{"orgWindowLimitUsd": u.Str("usageUsd")})
	r = send(nil)
	if r.Status != 400 || !strings.Contains(string(r.Raw), "GAS_USAGE_LIMIT_EXCEEDED") {
		t.Fatalf("over the limit: %d %s", r.Status, r.Raw)
	}
}

// checkBatchSignature checks that tx's executeBatch carries the account's signature of the
// batch's digest for nonce (the packed data is the last ABI bytes value: 85 bytes padded to 96).
func checkBatchSignature(t *testing.T, tx *types.Transaction, account common.Address, nonce uint64) {
	t.Helper()
	d := tx.Data()
	packed := d[len(d)-96 : len(d)-11]
	if got := new(big.Int).SetBytes(packed[65:81]).Uint64(); got != nonce {
		t.Fatalf("gas-station nonce %d, want %d", got, nonce)
	}
	calls := decodeCalls(t, d)
	b := ethereum.BatchExecution{ChainID: big.NewInt(11155111), Account: account, Nonce: new(big.Int).SetUint64(nonce),
		Deadline: uint32(new(big.Int).SetBytes(packed[81:85]).Uint64()), Calls: calls}
	digest, err := b.Digest()
	if err != nil {
		t.Fatal(err)
	}
	sig := append([]byte{}, packed[:65]...)
	sig[64] -= 27
	pub, err := crypto.SigToPub(digest[:], sig)
	if err != nil || crypto.PubkeyToAddress(*pub) != account {
		t.Fatalf("the batch is not signed by the account (%v)", err)
	}
	if want, _ := b.ExecuteBatchCalldata(packed[:65]); string(want) != string(d) {
		t.Fatal("the calldata is not the batch's executeBatch")
	}
}

// decodeCalls reads the calls of executeBatch calldata (test-only: offsets as the encoder writes them).
func decodeCalls(t *testing.T, d []byte) []ethereum.BatchCall {
	t.Helper()
	word := func(at int) int { return int(new(big.Int).SetBytes(d[at : at+32]).Int64()) }
	base := 4 + word(4)
	n := word(base)
	var calls []ethereum.BatchCall
	for i := range n {
		at := base + 32 + word(base+32+32*i)
		dataAt := at + word(at+64)
		size := word(dataAt)
		calls = append(calls, ethereum.BatchCall{To: [20]byte(d[at+12 : at+32]),
			Value: new(big.Int).SetBytes(d[at+32 : at+64]), Data: d[dataAt+32 : dataAt+32+size]})
	}
	return calls
}

// Batches of calls: sponsored (the paymaster's executeBatch holds every call, each signed by
// the account), and not (the account sends its own type-4 transaction to itself, its
// authorization naming its next nonce); 21 calls, the operator's caps and the kill switch are
// refused with their reasons.
func TestBatchedSends(t *testing.T) {
	chain := newDelegateChain()
	h, root, account, pm := sponsoredHarness(t, chain, "")
	chain.nonces[account] = 3
	calls := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"to": fmt.Sprintf("0x%040x", 0xa0+i), "value": "0", "data": "0x"}
		}
		return out
	}
	send := func(sponsor bool, extra map[string]any) servertest.Response {
		h.Advance(time.Millisecond)
		body := map[string]any{"from": account.Hex(), "caip2": "eip155:11155111", "sponsor": sponsor,
			"calls": calls(2)}
		for k, v := range extra {
			body[k] = v
		}
		return root.Submit("eth_send_transaction", "ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2", body)
	}
	// Not sponsored: the account's own type-4 transaction to itself.
	servertest.MustOK(t, send(false, nil))
	tx := chain.last()
	from, _ := types.Sender(types.LatestSignerForChainID(big.NewInt(11155111)), tx)
	if from != account || *tx.To() != account || tx.Type() != types.SetCodeTxType || tx.Nonce() != 3 ||
		tx.SetCodeAuthorizations()[0].Nonce != 4 {
		t.Fatalf("own batch: from %v to %v type %d nonce %d", from, tx.To(), tx.Type(), tx.Nonce())
	}
	if !strings.HasPrefix(hexutil.Encode(chain.code[account]), "0xef0100") {
		t.Fatalf("the authorization was not applied: code %x", chain.code[account])
	}
	checkBatchSignature(t, tx, account, 0)
	if got := decodeCalls(t, tx.Data()); len(got) != 2 || got[1].To != [20]byte(common.HexToAddress("0xa1")) {
		t.Fatalf("calls: %v", got)
	}
	// Sponsored: the paymaster's type-2 transaction (the account delegates already).
	servertest.MustOK(t, send(true, map[string]any{"calls": calls(20)}))
	tx = chain.last()
	from, _ = types.Sender(types.LatestSignerForChainID(big.NewInt(11155111)), tx)
	if from != common.Address(pm.PaymasterAddress()) || tx.Type() != types.DynamicFeeTxType {
		t.Fatalf("sponsored batch: from %v type %d", from, tx.Type())
	}
	checkBatchSignature(t, tx, account, 1)
	if got := decodeCalls(t, tx.Data()); len(got) != 20 {
		t.Fatalf("%d calls", len(got))
	}
	servertest.WantError(t, send(true, map[string]any{"calls": calls(21)}), 400, 3, "parameters.calls")
	servertest.WantError(t, send(false, map[string]any{"calls": []any{}}), 400, 3, "calls")
	servertest.WantError(t, send(true, map[string]any{"calls": []any{map[string]any{"to": "nope"}}}), 400, 3,
		"parameters.calls[0].to")
	// The operator's caps.
	for _, over := range []map[string]any{{"gasLimit": "2000001"}, {"maxFeePerGas": "100000000001"}} {
		r := send(true, over)
		if r.Status != 400 || !strings.Contains(string(r.Raw), "GAS_SPONSORSHIP_CAP") {
			t.Fatalf("over the cap %v: %d %s", over, r.Status, r.Raw)
		}
	}
}

// The kill switch refuses every sponsored send, with its reason; unsponsored batches still run.
// The running server reads it again from the file on SIGHUP (ReloadGasStation): turned off, the
// next sponsored send goes; turned on again, it is refused; a file that no longer loads changes
// nothing.
func TestSponsorshipPaused(t *testing.T) {
	chain := newDelegateChain()
	h, root, account, _ := sponsoredHarness(t, chain, `"paused":true,`)
	sponsored := func() servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit("eth_send_transaction", "ACTIVITY_TYPE_ETH_SEND_TRANSACTION",
			map[string]any{"from": account.Hex(), "caip2": "eip155:11155111", "to": account.Hex(), "sponsor": true})
	}
	paused := func(r servertest.Response) bool {
		return r.Status == 400 && strings.Contains(string(r.Raw), "GAS_SPONSORSHIP_PAUSED")
	}
	if r := sponsored(); !paused(r) {
		t.Fatalf("paused: %d %s", r.Status, r.Raw)
	}
	h.Advance(time.Millisecond)
	servertest.MustOK(t, root.Submit("eth_send_transaction", "ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2",
		map[string]any{"from": account.Hex(), "caip2": "eip155:11155111", "sponsor": false,
			"calls": []any{map[string]any{"to": account.Hex()}, map[string]any{"to": account.Hex()}}}))

	file := h.Server.GasStationFile()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := h.Server.ReloadGasStation(); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(bytes.Replace(text, []byte(`"paused":true,`), nil, 1))
	servertest.MustOK(t, sponsored())
	rewrite(text)
	if r := sponsored(); !paused(r) {
		t.Fatalf("paused again: %d %s", r.Status, r.Raw)
	}
	if err := os.WriteFile(file, []byte(`{"paused":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.Server.ReloadGasStation(); err == nil {
		t.Fatal("a file that does not load was taken")
	}
	if r := sponsored(); !paused(r) {
		t.Fatalf("after a bad file: %d %s", r.Status, r.Raw)
	}
}

// Policies see each call of a batch as its own eth.tx: a policy allowing one `to` allows a batch
// of calls to it and denies a batch with a call to another address.
func TestBatchPoliciesPerCall(t *testing.T) {
	chain := newDelegateChain()
	h, root, account, _ := sponsoredHarness(t, chain, "")
	_, bob := h.NewUser(root, "bob", "bob@example.com")
	allowed := "0x00000000000000000000000000000000000000a0"
	servertest.MustOK(t, root.Submit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3",
		map[string]any{"policyName": "only a0", "effect": "EFFECT_ALLOW", "notes": "",
			"condition": "eth.tx.to == '" + allowed + "'"}))
	send := batchSender(h, bob, account)
	servertest.MustOK(t, send(allowed, allowed))
	sent := len(chain.sent)
	servertest.WantError(t, send(allowed, "0x00000000000000000000000000000000000000b0"), 403, 7, "denied")
	servertest.WantError(t, send("0x00000000000000000000000000000000000000b0", allowed), 403, 7, "denied")
	if len(chain.sent) != sent {
		t.Fatal("a denied batch was sent")
	}
}

// get_nonces with gasStationNonce, in Turnkey's example flow (get_nonces → sponsored send →
// poll): the delegate nonce from the account's storage, after the nonces held by sends not yet
// final; the same nonce sent again is refused, whether it is stale on chain or still held.
func TestGasStationNonces(t *testing.T) {
	chain := newDelegateChain()
	h, root, account, _ := sponsoredHarness(t, chain, "")
	nonces := func() string {
		r := root.Query("get_nonces", map[string]any{"address": account.Hex(), "caip2": "eip155:11155111",
			"nonce": false, "gasStationNonce": true})
		servertest.MustOK(t, r)
		return r.Str("gasStationNonce")
	}
	send := func(n string) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit("eth_send_transaction", "ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2",
			map[string]any{"from": account.Hex(), "caip2": "eip155:11155111", "sponsor": true, "gasStationNonce": n,
				"calls": []any{map[string]any{"to": "0x000000000000000000000000000000000000dEaD", "value": "0"}}})
	}
	if n := nonces(); n != "0" {
		t.Fatalf("a fresh account's gas-station nonce: %q", n)
	}
	r := send(nonces())
	servertest.MustOK(t, r)
	st := root.Query("get_send_transaction_status", map[string]any{
		"sendTransactionStatusId": r.Str(
			"activity",
			"result",
			"ethSendTransactionResultV2",
			"sendTransactionStatusId",
		)})
	if st.Str("txStatus") != "INCLUDED" {
		t.Fatalf("status: %s", st.Raw)
	}
	if n := nonces(); n != "1" {
		t.Fatalf("after one send: %q", n)
	}
	servertest.WantError(t, send("0"), 400, 3, "parameters.gasStationNonce")
	// A send not yet final holds its nonce: get_nonces gives the next, and the same is refused.
	chain.skipNonce = true
	servertest.MustOK(t, send("1"))
	if n := nonces(); n != "2" {
		t.Fatalf("with nonce 1 held: %q", n)
	}
	servertest.WantError(t, send("1"), 400, 3, "parameters.gasStationNonce")
}

// eth_undelegate_7702: the account's authorization to address 0, sent by the paymaster in a
// type-4 transaction; followed to INCLUDED once the account's code is gone. An account that
// delegates to nothing, and a network that is not sponsored, are refused with the reason.
func TestUndelegate(t *testing.T) {
	chain := newDelegateChain()
	h, root, account, pm := sponsoredHarness(t, chain, "")
	undelegate := func(caip2 string) servertest.Response {
		h.Advance(time.Millisecond)
		return root.Submit("eth_undelegate_7702", "ACTIVITY_TYPE_ETH_UNDELEGATE_7702",
			map[string]any{"from": account.Hex(), "caip2": caip2})
	}
	r := undelegate("eip155:11155111")
	if r.Status != 400 || !strings.Contains(string(r.Raw), "NOT_DELEGATED") {
		t.Fatalf("not delegated: %d %s", r.Status, r.Raw)
	}
	r = undelegate("eip155:1")
	if r.Status != 400 || !strings.Contains(string(r.Raw), "GAS_SPONSORSHIP_UNAVAILABLE") {
		t.Fatalf("not sponsored: %d %s", r.Status, r.Raw)
	}
	chain.code[account] = ethereum.DelegationCode(common.HexToAddress(testDelegate))
	chain.nonces[account] = 2
	r = undelegate("eip155:11155111")
	servertest.MustOK(t, r)
	tx := chain.last()
	from, _ := types.Sender(types.LatestSignerForChainID(big.NewInt(11155111)), tx)
	auths := tx.SetCodeAuthorizations()
	if from != common.Address(pm.PaymasterAddress()) || len(auths) != 1 || auths[0].Address != (common.Address{}) ||
		auths[0].Nonce != 2 {
		t.Fatalf("undelegation: from %v auths %v", from, auths)
	}
	if a, _ := auths[0].Authority(); a != account || len(chain.code[account]) != 0 {
		t.Fatalf("authority %v, code %x", a, chain.code[account])
	}
	st := root.Query("get_send_transaction_status", map[string]any{
		"sendTransactionStatusId": r.Str("activity", "result", "ethUndelegate7702Result", "sendTransactionStatusId")})
	if st.Str("txStatus") != "INCLUDED" {
		t.Fatalf("status: %s", st.Raw)
	}
}

// An MFA policy whose condition only the second call of a batch meets still holds the batch for
// its factors: every part of a batched send is judged, not only the first.
func TestBatchMFAPerCall(t *testing.T) {
	chain := newDelegateChain()
	h, root, account, _ := sponsoredHarness(t, chain, "")
	me := root.Query("whoami", map[string]any{})
	servertest.MustOK(t, me)
	guarded := "0x00000000000000000000000000000000000000b0"
	servertest.MustOK(t, root.Submit("create_mfa_policy", "ACTIVITY_TYPE_CREATE_MFA_POLICY",
		map[string]any{"userId": me.Str("userId"), "mfaPolicyName": "b0 needs a passkey too", "order": 1,
			"condition": "eth.tx.to == '" + guarded + "'",
			"requiredAuthenticationMethods": []any{
				map[string]any{"any": []any{map[string]any{"type": "AUTHENTICATION_TYPE_API_KEY"}}},
				map[string]any{"any": []any{map[string]any{"type": "AUTHENTICATION_TYPE_PASSKEY"}}},
			}}))
	send := batchSender(h, root, account)
	free := "0x00000000000000000000000000000000000000a0"
	servertest.MustOK(t, send(free, free))
	sent := len(chain.sent)
	for _, calls := range [][]string{{free, guarded}, {guarded, free}} {
		r := send(calls...)
		if r.Status != 200 || r.Str("activity", "status") != "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED" {
			t.Fatalf("batch %v: want AUTHENTICATORS_NEEDED: %s", calls, r.Raw)
		}
	}
	if len(chain.sent) != sent {
		t.Fatal("a batch waiting for its factors was sent")
	}
}

// A session bound to a profile whose scope allows one destination cannot reach another through
// the second call of a batch.
func TestBatchSessionScopePerCall(t *testing.T) {
	chain := newDelegateChain()
	h, root, account, _ := sponsoredHarness(t, chain, "")
	me := root.Query("whoami", map[string]any{})
	servertest.MustOK(t, me)
	free := "0x00000000000000000000000000000000000000a0"
	p := root.MustSubmit("create_session_profile", "ACTIVITY_TYPE_CREATE_SESSION_PROFILE",
		map[string]any{"sessionProfileName": "a0 only", "scope": "eth.tx.to == '" + free + "'",
			"expirationSeconds": "600", "notes": ""})
	priv, pub := h.NewKey()
	h.Advance(time.Millisecond)
	root.MustSubmit("stamp_login", "ACTIVITY_TYPE_STAMP_LOGIN", map[string]any{"publicKey": pub,
		"expirationSeconds": "600", "sessionProfileId": p.Result("createSessionProfileResult", "sessionProfileId")})
	sess := h.Client(me.Str("organizationId"), priv)
	send := batchSender(h, sess, account)
	servertest.MustOK(t, send(free, free))
	sent := len(chain.sent)
	other := "0x00000000000000000000000000000000000000b0"
	servertest.WantError(t, send(free, other), 403, 7, "session profile's scope")
	servertest.WantError(t, send(other, free), 403, 7, "session profile's scope")
	if len(chain.sent) != sent {
		t.Fatal("a batch outside the session's scope was sent")
	}
}

// batchSender sends, as c, a sponsored batch of 0-value calls to the given addresses.
func batchSender(
	h *servertest.Harness,
	c *servertest.Client,
	account common.Address,
) func(to ...string) servertest.Response {
	return func(to ...string) servertest.Response {
		h.Advance(time.Millisecond)
		var calls []any
		for _, a := range to {
			calls = append(calls, map[string]any{"to": a, "value": "0"})
		}
		return c.Submit("eth_send_transaction", "ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2",
			map[string]any{"from": account.Hex(), "caip2": "eip155:11155111", "sponsor": true, "calls": calls})
	}
}
