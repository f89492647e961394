package chaindata

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/chain/rpc"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/store/sqlite"
)

// rpcNode is a JSON-RPC node answering each method with answer(method, params): a result, or
// an error message when the second value is not empty.
func rpcNode(t *testing.T, answer func(method string, params []json.RawMessage) (any, string)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage   `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		res, msg := answer(req.Method, req.Params)
		out := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if msg != "" {
			out["error"] = map[string]any{"code": -32000, "message": msg}
		} else {
			out["result"] = res
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// domainVector is the eip712Domain() answer of the delegate on chain 11155111, computed by viem
// (internal/chain/ethereum/testdata/gasstation.json).
func domainVector(t *testing.T) (chainID, delegate, answer string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "chain", "ethereum", "testdata", "gasstation.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		DomainAnswer struct{ ChainID, Delegate, Answer string } `json:"domainAnswer"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v.DomainAnswer.ChainID, v.DomainAnswer.Delegate, v.DomainAnswer.Answer
}

func sponsorKeys(t *testing.T) *custody.SponsorKeys {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	mk, err := custody.ParseMasterKey(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	kr, err := custody.OpenKeyring(ctx, st, mk)
	if err != nil {
		t.Fatal(err)
	}
	k, err := custody.LoadSponsorKeys(ctx, st, kr)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func gasDeps(t *testing.T, file string, nodes map[string]string) *Deps {
	t.Helper()
	cfg, err := gasstation.ParseConfig([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	providers := map[string]*rpc.Client{}
	for n, url := range nodes {
		providers[n] = &rpc.Client{Network: n, URL: url, HTTP: &http.Client{Timeout: 5 * time.Second}, Retries: -1}
	}
	d := NewDeps(providers, nil, 0)
	d.GasStation, d.Sponsor = cfg, sponsorKeys(t)
	return d
}

// The start-up check of the configured delegates: the right domain passes; a domain of another
// chain, no contract, an oversized or malformed answer, a failing node and a network without a
// provider each refuse, naming the network.
func TestCheckDelegates(t *testing.T) {
	chainID, delegate, answer := domainVector(t)
	network := "eip155:" + chainID
	file := func(n string) string {
		return `{"evm":{"` + n + `":{"delegate":"` + delegate + `","maxGasPerTransaction":500000,"maxFeePerGasWei":"100"}}}`
	}
	serve := func(res any, msg string) string {
		return rpcNode(t, func(method string, params []json.RawMessage) (any, string) {
			if method != "eth_call" || len(params) != 2 ||
				!strings.Contains(strings.ToLower(string(params[0])), strings.ToLower(delegate)) ||
				!strings.Contains(string(params[0]), `"data":"0x84b0196e"`) {
				return nil, "unexpected call " + method
			}
			return res, msg
		})
	}
	if err := gasDeps(t, file(network), map[string]string{network: serve(answer, "")}).CheckDelegates(
		context.Background()); err != nil {
		t.Fatalf("the right delegate: %v", err)
	}
	for _, tt := range []struct {
		name, network string
		node          string // "" for no provider
		want          string
	}{
		{"another chain's domain", "eip155:84532", serve(answer, ""), "eip155:84532"},
		{"no contract", network, serve("0x", ""), "no contract answers"},
		{"oversized answer", network, serve("0x"+strings.Repeat("00", 4097), ""), "more than 4096"},
		{"not hex", network, serve("0xzz", ""), "not hex"},
		{"truncated", network, serve(answer[:200], ""), "eip712Domain()"},
		{"node error", network, serve(nil, "execution reverted"), "execution reverted"},
		{"no provider", network, "", "no RPC provider"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nodes := map[string]string{}
			if tt.node != "" {
				nodes[tt.network] = tt.node
			}
			err := gasDeps(t, file(tt.network), nodes).CheckDelegates(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) ||
				!strings.Contains(err.Error(), "the delegate of "+tt.network) {
				t.Fatalf("got %v, want an error naming %s and %q", err, tt.network, tt.want)
			}
		})
	}
	// No gas-station file: nothing to check.
	if err := gasDeps(t, `{}`, nil).CheckDelegates(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The sponsor balances: the paymaster's on each eip155 network, the fee payer's on each solana
// network, flagged low under the operator's threshold; a failed or oversized read is an error
// for that network only.
func TestSponsorBalances(t *testing.T) {
	const sol = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
	var asked []string
	node := rpcNode(t, func(method string, params []json.RawMessage) (any, string) {
		asked = append(asked, method+" "+string(params[0]))
		switch method {
		case "eth_getBalance":
			return "0x63", "" // 99 wei
		case "getBalance":
			return map[string]any{"context": map[string]any{"slot": 1}, "value": 5_000_000_000}, ""
		}
		return nil, "unexpected"
	})
	big := rpcNode(t, func(string, []json.RawMessage) (any, string) { return "0x" + strings.Repeat("f", 65), "" })
	d := gasDeps(t, `{
		"evm": {
			"eip155:11155111": {"delegate": "0x99512B3a351645f035e0a99921058cc5169fC6f3", "maxGasPerTransaction": 1,
				"maxFeePerGasWei": "1", "lowBalanceWei": "100"},
			"eip155:84532": {"delegate": "0x99512B3a351645f035e0a99921058cc5169fC6f3", "maxGasPerTransaction": 1,
				"maxFeePerGasWei": "1", "lowBalanceWei": "99"},
			"eip155:80002": {"delegate": "0x99512B3a351645f035e0a99921058cc5169fC6f3", "maxGasPerTransaction": 1,
				"maxFeePerGasWei": "1"},
			"eip155:97": {"delegate": "0x99512B3a351645f035e0a99921058cc5169fC6f3", "maxGasPerTransaction": 1,
				"maxFeePerGasWei": "1"}
		},
		"solana": {"`+sol+`": {"maxFeeLamports": 10000, "lowBalanceLamports": 1000000000}}
	}`, map[string]string{"eip155:11155111": node, "eip155:84532": node, "eip155:80002": big, sol: node})
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	got := d.SponsorBalances(context.Background(), now)
	addrs := d.Sponsor.Addresses()
	want := []struct {
		network, address, balance string
		low                       bool
		err                       string
	}{
		{"eip155:11155111", addrs.EVMPaymaster, "99", true, ""},
		{"eip155:80002", addrs.EVMPaymaster, "", false, "more than a 256-bit quantity"},
		{"eip155:84532", addrs.EVMPaymaster, "99", false, ""},
		{"eip155:97", addrs.EVMPaymaster, "", false, "no RPC provider"},
		{sol, addrs.SolanaFeePayer, "5000000000", false, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d balances: %+v", len(got), got)
	}
	for i, w := range want {
		g := got[i]
		bal := ""
		if g.Balance != nil {
			bal = g.Balance.String()
		}
		if g.Network != w.network || g.Address != w.address || bal != w.balance || g.Low != w.low ||
			!g.CheckedAt.Equal(now) || (w.err == "") != (g.Err == nil) ||
			(g.Err != nil && !strings.Contains(g.Err.Error(), w.err)) {
			t.Errorf("balance %d: got %+v, want %+v", i, g, w)
		}
	}
	for _, a := range asked {
		if !strings.Contains(a, addrs.EVMPaymaster) && !strings.Contains(a, addrs.SolanaFeePayer) {
			t.Errorf("a balance of another address was read: %s", a)
		}
	}
}
