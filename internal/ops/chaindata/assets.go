package chaindata

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/latchkey/latchkey/internal/wire"
)

// Asset is one entry of the asset list. Its CAIP-19 id names its kind: <caip2>/slip44:<n> for a
// native coin, <caip2>/erc20:<contract> for an ERC-20 token, <caip2>/token:<mint> for an SPL token.
type Asset struct {
	Caip19   string `json:"caip19"`
	Symbol   string `json:"symbol"`
	Name     string `json:"name"`
	Decimals int32  `json:"decimals"`
	Stable   bool   `json:"stable,omitempty"`
	LogoURL  string `json:"logoUrl,omitempty"`
}

func (a Asset) network() string {
	i := strings.LastIndexByte(a.Caip19, '/')
	if i < 0 {
		return ""
	}
	return a.Caip19[:i]
}

// namespace and reference of the asset part: "slip44","60" / "erc20","0x..." / "token","Mint".
func (a Asset) kind() (string, string) {
	i := strings.LastIndexByte(a.Caip19, '/')
	ns, ref, _ := strings.Cut(a.Caip19[i+1:], ":")
	return ns, ref
}

func (a Asset) toWire() wire.AssetMetadata {
	d, s := a.Decimals, a.Stable
	return wire.AssetMetadata{
		Caip19:   a.Caip19,
		Symbol:   a.Symbol,
		Name:     a.Name,
		Decimals: &d,
		Stable:   &s,
		LogoUrl:  a.LogoURL,
	}
}

func native(caip2, slip44, symbol, name string, decimals int32) Asset {
	return Asset{Caip19: caip2 + "/slip44:" + slip44, Symbol: symbol, Name: name, Decimals: decimals}
}

func erc20(caip2, contract, symbol, name string) Asset {
	return Asset{
		Caip19:   caip2 + "/erc20:" + strings.ToLower(contract),
		Symbol:   symbol,
		Name:     name,
		Decimals: 6,
		Stable:   true,
	}
}

func spl(caip2, mint, symbol, name string) Asset {
	return Asset{Caip19: caip2 + "/token:" + mint, Symbol: symbol, Name: name, Decimals: 6, Stable: true}
}

// BuiltinAssets are the spec's networks' native coins and the major stablecoins, with the
// contract addresses and mints their issuers publish.
var BuiltinAssets = []Asset{
	native("eip155:1", "60", "ETH", "Ether", 18),
	erc20("eip155:1", "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", "USDC", "USD Coin"),
	erc20("eip155:1", "0xdAC17F958D2ee523a2206206994597C13D831ec7", "USDT", "Tether USD"),
	native("eip155:11155111", "60", "ETH", "Sepolia Ether", 18),
	erc20("eip155:11155111", "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238", "USDC", "USD Coin"),
	native("eip155:8453", "60", "ETH", "Ether", 18),
	erc20("eip155:8453", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "USDC", "USD Coin"),
	native("eip155:84532", "60", "ETH", "Base Sepolia Ether", 18),
	erc20("eip155:84532", "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC", "USD Coin"),
	native("eip155:137", "966", "POL", "Polygon Ecosystem Token", 18),
	erc20("eip155:137", "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", "USDC", "USD Coin"),
	erc20("eip155:137", "0xc2132D05D31c914a87C6611C10748AEb04B58e8F", "USDT", "Tether USD"),
	native("eip155:80002", "966", "POL", "Polygon Amoy POL", 18),
	erc20("eip155:80002", "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", "USDC", "USD Coin"),
	native(SolanaMainnet, "501", "SOL", "Solana", 9),
	spl(SolanaMainnet, "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "USDC", "USD Coin"),
	spl(SolanaMainnet, "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB", "USDT", "Tether USD"),
	native(SolanaDevnet, "501", "SOL", "Solana", 9),
	spl(SolanaDevnet, "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", "USDC", "USD Coin"),
}

// AssetFile is the operator's asset file: assets added to the built-in list (or replacing it).
type AssetFile struct {
	Replace bool    `json:"replace"`
	Assets  []Asset `json:"assets"`
}

// Catalog is the asset list by network.
type Catalog map[string][]Asset

// LoadCatalog builds the catalog: the built-in list, then the file's assets (an asset with the
// same CAIP-19 id replaces the built-in one), or only the file's with "replace": true.
func LoadCatalog(path string) (Catalog, error) {
	list := append([]Asset{}, BuiltinAssets...)
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--assets-file: %w", err)
		}
		var f AssetFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("--assets-file %s: %w", path, err)
		}
		if f.Replace {
			list = nil
		}
		for i, a := range f.Assets {
			if err := checkAsset(a); err != nil {
				return nil, fmt.Errorf("--assets-file %s: assets[%d]: %w", path, i, err)
			}
			list = append(list, normalizeAsset(a))
		}
	}
	c := Catalog{}
	seen := map[string]int{}
	for _, a := range list {
		n := a.network()
		if i, ok := seen[a.Caip19]; ok {
			c[n][i] = a
			continue
		}
		seen[a.Caip19] = len(c[n])
		c[n] = append(c[n], a)
	}
	for n := range c {
		// The native coin first, then tokens by symbol.
		sort.SliceStable(c[n], func(i, j int) bool {
			a, b := c[n][i], c[n][j]
			an, _ := a.kind()
			bn, _ := b.kind()
			if (an == "slip44") != (bn == "slip44") {
				return an == "slip44"
			}
			if a.Symbol != b.Symbol {
				return a.Symbol < b.Symbol
			}
			return a.Caip19 < b.Caip19
		})
	}
	return c, nil
}

func normalizeAsset(a Asset) Asset {
	if ns, ref := a.kind(); ns == "erc20" {
		a.Caip19 = a.network() + "/erc20:" + strings.ToLower(ref)
	}
	return a
}

func checkAsset(a Asset) error {
	n := a.network()
	if _, ok := evmChainID(n); !ok && !isSolana(n) {
		return fmt.Errorf("caip19 %q: not on an eip155 or solana network", a.Caip19)
	}
	ns, ref := a.kind()
	switch {
	case ref == "":
		return fmt.Errorf("caip19 %q: no asset reference", a.Caip19)
	case ns == "erc20" && (len(ref) != 42 || !strings.HasPrefix(ref, "0x")):
		return fmt.Errorf("caip19 %q: an erc20 reference is a 0x contract address", a.Caip19)
	case ns != "slip44" && ns != "erc20" && ns != "token":
		return fmt.Errorf("caip19 %q: asset namespace must be slip44, erc20 or token", a.Caip19)
	case a.Symbol == "" || a.Decimals < 0 || a.Decimals > 36:
		return fmt.Errorf("caip19 %q: symbol and decimals (0-36) are required", a.Caip19)
	}
	return nil
}
