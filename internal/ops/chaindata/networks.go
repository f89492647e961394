package chaindata

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/latchkey/latchkey/internal/apierr"
)

// The networks the spec lists for get_wallet_address_balances, and its Solana aliases.
var specNetworks = []string{"eip155:1", "eip155:11155111", "eip155:8453", "eip155:84532", "eip155:137", "eip155:80002",
	SolanaMainnet, SolanaDevnet}

// Canonical Solana networks.
const (
	SolanaMainnet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	SolanaDevnet  = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
)

var aliases = map[string]string{"solana:mainnet": SolanaMainnet, "solana:devnet": SolanaDevnet}

// Canonical resolves the spec's aliases.
func Canonical(caip2 string) string {
	c := strings.TrimSpace(caip2)
	if a, ok := aliases[strings.ToLower(c)]; ok {
		return a
	}
	return c
}

// checkNetwork validates a CAIP-2 id: one of the spec's networks (balanceOnly) or any eip155 /
// solana id for broadcasting. It returns the canonical id.
func checkNetwork(field, caip2 string, specOnly bool) (string, error) {
	c := Canonical(caip2)
	if c == "" {
		return "", apierr.Required(field)
	}
	if specOnly {
		for _, n := range specNetworks {
			if n == c {
				return c, nil
			}
		}
		return "", apierr.Invalid(
			field,
			"%q is not a supported network (%s; solana:mainnet and solana:devnet are accepted too)",
			caip2,
			strings.Join(specNetworks, ", "),
		)
	}
	if _, ok := evmChainID(c); ok || strings.HasPrefix(c, "solana:") {
		return c, nil
	}
	return "", apierr.Invalid(field, "%q is not a CAIP-2 id of an eip155 or solana network", caip2)
}

// evmChainID is the chain id of an eip155 network.
func evmChainID(caip2 string) (*big.Int, bool) {
	ref, ok := strings.CutPrefix(caip2, "eip155:")
	if !ok || ref == "" || strings.TrimLeft(ref, "0123456789") != "" || len(ref) > 32 {
		return nil, false
	}
	n, ok := new(big.Int).SetString(ref, 10)
	return n, ok && n.Sign() > 0
}

func isSolana(caip2 string) bool { return strings.HasPrefix(caip2, "solana:") }

// ParseProviders reads --chain-rpc values "CAIP2=URL".
func ParseProviders(specs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range specs {
		k, v, ok := strings.Cut(s, "=")
		k = Canonical(k)
		if !ok || v == "" {
			return nil, fmt.Errorf(
				"--chain-rpc %q: want CAIP2=URL, e.g. eip155:1=https://eth.example/rpc",
				redactURL(s),
			)
		}
		if _, ok := evmChainID(k); !ok && !isSolana(k) {
			return nil, fmt.Errorf("--chain-rpc: %q is not an eip155 or solana CAIP-2 id", k)
		}
		if !strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") {
			return nil, fmt.Errorf("--chain-rpc %s: the provider must be an http(s) URL", k)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("--chain-rpc: %s is given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// redactURL keeps a provider URL out of messages (it may hold an API key).
func redactURL(s string) string {
	if k, _, ok := strings.Cut(s, "="); ok {
		return k + "=…"
	}
	return "…"
}
