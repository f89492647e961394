package chaindata

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"strings"

	"github.com/latchkey/latchkey/internal/wire"
)

// Prices are USD prices per CAIP-19 id, from the operator's price file (--prices-file): a JSON
// object {"<caip19>": "<usd price of one whole unit>"}. Latchkey fetches no prices itself; without
// a file, balances carry no display.usd.
type Prices map[string]*big.Rat

// LoadPrices reads a price file ("" gives none).
func LoadPrices(path string) (Prices, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--prices-file: %w", err)
	}
	var raw map[string]string
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("--prices-file %s: want {\"<caip19>\": \"<usd>\"}: %w", path, err)
	}
	out := Prices{}
	for k, v := range raw {
		p, ok := new(big.Rat).SetString(strings.TrimSpace(v))
		if !ok || p.Sign() < 0 {
			return nil, fmt.Errorf("--prices-file %s: %q: price %q is not a non-negative decimal", path, k, v)
		}
		out[normalizeAsset(Asset{Caip19: k}).Caip19] = p
	}
	return out, nil
}

// withDisplay adds the display values: the amount in whole units (always) and its USD value
// (with a price). Both are for display only: they are computed from the atomic balance and
// never fed back into anything.
func (d *Deps) withDisplay(b wire.AssetBalance) wire.AssetBalance {
	if b.Decimals == nil {
		return b
	}
	amount, ok := new(big.Rat).SetString(b.Balance)
	if !ok {
		return b
	}
	amount.Quo(amount, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(*b.Decimals)), nil)))
	disp := &wire.AssetBalanceDisplay{Crypto: trimZeros(amount.FloatString(int(*b.Decimals)))}
	if p := d.Prices[b.Caip19]; p != nil {
		disp.Usd = new(big.Rat).Mul(amount, p).FloatString(2)
	}
	b.Display = disp
	return b
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
