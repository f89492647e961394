package gasstation

import (
	"math/big"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/apierr"
)

const delegate = "0x99512B3a351645f035e0a99921058cc5169fC6f3"

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"evm":{"eip155:11155111":{"delegate":"` + delegate + `",
		"maxGasPerTransaction":1000000,"maxFeePerGasWei":"100000000000","lowBalanceWei":"1000"},
		"eip155:1":{"delegate":"` + delegate + `","maxGasPerTransaction":500000,"maxFeePerGasWei":"1","usdPerCoin":"3000.50"}},
		"solana":{"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1":{"maxFeeLamports":100000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.EVMNetwork("eip155:11155111")
	if err != nil || n.ChainID.Int64() != 11155111 || n.DelegateAddr.Hex() != delegate || n.Price.Sign() != 0 ||
		n.LowBalance.Int64() != 1000 || n.MaxFeePerGas.String() != "100000000000" {
		t.Fatalf("%+v %v", n, err)
	}
	if m, _ := c.EVMNetwork("eip155:1"); m.Price.FloatString(2) != "3000.50" {
		t.Fatalf("price %v", m.Price)
	}
	if _, err := c.SolanaNetwork("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"); err != nil {
		t.Fatal(err)
	}
	if d, ok := c.Delegate("eip155:1"); !ok || d.Hex() != delegate {
		t.Fatal(d, ok)
	}
	if _, err := c.EVMNetwork("eip155:8453"); apierr.From(err).TurnkeyCode != CodeNotSponsored {
		t.Fatalf("unconfigured network: %v", err)
	}
	c.SetPaused(true)
	if _, err := c.EVMNetwork("eip155:1"); apierr.From(err).TurnkeyCode != CodePaused || !c.IsPaused() {
		t.Fatalf("paused: %v", err)
	}
	if _, err := c.SolanaNetwork("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"); apierr.From(
		err,
	).TurnkeyCode != CodePaused {
		t.Fatalf("paused: %v", err)
	}
	c.SetPaused(false) // SIGHUP, the file saying paused false again
	if _, err := c.EVMNetwork("eip155:1"); err != nil || c.IsPaused() {
		t.Fatalf("resumed: %v", err)
	}
	var zero *Config
	if zero.IsPaused() {
		t.Fatal("a nil config is not paused")
	}
	if _, err := zero.EVMNetwork("eip155:1"); apierr.From(err).TurnkeyCode != CodeNotSponsored {
		t.Fatalf("nil config: %v", err)
	}
}

func TestParseConfigRefusals(t *testing.T) {
	good := `"delegate":"` + delegate + `","maxGasPerTransaction":1,"maxFeePerGasWei":"1"`
	for _, tc := range []struct{ body, want string }{
		{`{"evm":{"eip155:1":{` + good + `}}}`, "usdPerCoin: required on eip155:1"},
		{`{"evm":{"eip155:x":{` + good + `}}}`, "not an eip155"},
		{`{"evm":{"eip155:11155111":{"delegate":"0x00","maxGasPerTransaction":1,"maxFeePerGasWei":"1"}}}`, "delegate"},
		{`{"evm":{"eip155:11155111":{"delegate":"` + delegate + `","maxFeePerGasWei":"1"}}}`, "maxGasPerTransaction"},
		{`{"evm":{"eip155:11155111":{"delegate":"` + delegate + `","maxGasPerTransaction":1}}}`, "maxFeePerGasWei"},
		{`{"evm":{"eip155:11155111":{` + good + `,"usdPerCoin":"-1"}}}`, "usdPerCoin"},
		{`{"evm":{"eip155:11155111":{` + good + `,"lowBalanceWei":"1e5"}}}`, "lowBalanceWei"},
		{`{"evm":{"eip155:11155111":null}}`, "object is required"},
		{`{"solana":{"solana:mainnet":{"maxFeeLamports":1,"usdPerCoin":"1"}}}`, "not a solana CAIP-2 id"},
		{`{"solana":{"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1":{}}}`, "maxFeeLamports"},
		{`{"solana":{"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp":{"maxFeeLamports":1}}}`, "usdPerCoin: required"},
		{`{"evm":{},"extra":1}`, "unknown field"},
		{`{} {}`, "one JSON object"},
	} {
		if _, err := ParseConfig([]byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.body, err, tc.want)
		}
	}
}

// SameNetworks tells a reload whether the file changed anything besides the kill switch.
func TestSameNetworks(t *testing.T) {
	base := `"evm":{"eip155:11155111":{"delegate":"` + delegate + `","maxGasPerTransaction":1000000,"maxFeePerGasWei":"1"}}}`
	a, errA := ParseConfig([]byte(`{` + base))
	b, errB := ParseConfig([]byte(`{"paused":true,` + base))
	c, errC := ParseConfig([]byte(`{` + strings.Replace(base, "1000000", "2000000", 1)))
	if errA != nil || errB != nil || errC != nil {
		t.Fatal(errA, errB, errC)
	}
	if !a.SameNetworks(b) || a.SameNetworks(c) || !b.IsPaused() || a.IsPaused() {
		t.Fatalf("same %v %v, paused %v %v", a.SameNetworks(b), a.SameNetworks(c), b.IsPaused(), a.IsPaused())
	}
}

func TestUSD(t *testing.T) {
	p, _ := new(big.Rat).SetString("3000")
	wei, _ := new(big.Int).SetString("21000000000000000", 10) // 0.021 ETH
	if got := USD(p, wei, 18).FloatString(2); got != "63.00" {
		t.Fatal(got)
	}
	if got := USD(nil, wei, 18); got.Sign() != 0 {
		t.Fatal(got)
	}
}

func TestLoadConfigEmpty(t *testing.T) {
	c, err := LoadConfig("")
	if err != nil || len(c.EVM) != 0 || c.Paused {
		t.Fatal(c, err)
	}
	if _, err := LoadConfig("/nonexistent/gas.json"); err == nil || !strings.Contains(err.Error(), "--gas-station") {
		t.Fatal(err)
	}
}
