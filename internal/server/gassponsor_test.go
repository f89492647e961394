package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
)

// gasNode is a JSON-RPC node: the paymaster holds 16 wei, and eip712Domain() answers answer.
func gasNode(t *testing.T, answer string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		var res any
		switch req.Method {
		case "eth_getBalance":
			res = "0x10"
		case "eth_call":
			res = answer
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// openGasStation opens a server sponsoring eip155:11155111 through a node whose eip712Domain()
// answers answer (Open checks no delegate: Run does).
func openGasStation(t *testing.T, answer string) *Server {
	t.Helper()
	dir := t.TempDir()
	mk := filepath.Join(dir, "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	network := "eip155:11155111"
	gas := filepath.Join(dir, "gas.json")
	file := `{"evm":{"` + network + `":{"delegate":"0x99512B3a351645f035e0a99921058cc5169fC6f3",` +
		`"maxGasPerTransaction":500000,"maxFeePerGasWei":"1000","lowBalanceWei":"100"}}}`
	if err := os.WriteFile(gas, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), Config{DataDir: dir, MasterKeyFile: mk, GasStationFile: gas,
		ChainRPC: map[string]string{network: gasNode(t, answer)}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The sponsor balance loop's reading: the paymaster's balance under the threshold shows as LOW
// on the health page's gas station section and in the metrics.
func TestSponsorBalanceMetricsAndHealth(t *testing.T) {
	s := openGasStation(t, "0x")
	g := s.gasStationHealth()
	pm := s.SponsorAddresses().EVMPaymaster
	if g.Paymaster != pm || g.FeePayer != s.SponsorAddresses().SolanaFeePayer || len(g.Networks) != 1 ||
		g.Networks[0].Balance != "" {
		t.Fatalf("before any read: %+v", g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.watchSponsorBalances(ctx, time.Hour); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.sponsor.last.Load() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	g = s.gasStationHealth()
	if n := g.Networks[0]; n.Network != "eip155:11155111" || n.Address != pm || n.Balance != "16" || !n.Low ||
		n.Threshold != "100" || n.Error != "" || n.CheckedAt.IsZero() {
		t.Fatalf("after a read: %+v", n)
	}
	rec := httptest.NewRecorder()
	s.Metrics.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`latchkey_gas_sponsor_balance{address="` + pm + `",network="eip155:11155111"} 16`,
		`latchkey_gas_sponsor_low{network="eip155:11155111"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
}

// Run refuses to start, before binding anything, when a configured delegate does not answer its
// domain, naming the network (chaindata's TestCheckDelegates covers each kind of bad answer).
func TestRunChecksTheDelegates(t *testing.T) {
	s := openGasStation(t, "0x")
	err := s.Run(context.Background(), time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "eip155:11155111") ||
		!strings.Contains(err.Error(), "no contract") {
		t.Fatalf("Run with an absent delegate: %v", err)
	}
}
