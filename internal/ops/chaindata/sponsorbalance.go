package chaindata

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/chain/ethereum"
)

// The gas station's view of the chains, outside any transaction: the sponsor accounts' balances
// (read by the server's sponsor balance loop) and the start-up check of the configured delegates.

// SponsorBalance is a sponsor account's balance on one sponsored network.
type SponsorBalance struct {
	Network string // CAIP-2
	// Address is the paymaster's (eip155, EIP-55) or the fee payer's (solana, base58).
	Address string
	// Balance is in the network's smallest unit (wei, lamports); nil when it could not be read.
	Balance *big.Int
	// Threshold is the operator's lowBalanceWei / lowBalanceLamports (0: no warning).
	Threshold *big.Int
	// Low is Balance under Threshold.
	Low bool
	// Err is why the balance could not be read (the provider's error; no secret).
	Err       error
	CheckedAt time.Time
}

// maxQuantityHex bounds a hex quantity an RPC node answers for a balance: 256 bits.
const maxQuantityHex = 2 + 64

// SponsorBalances reads the paymaster's balance on every eip155 network of the gas-station file
// and the fee payer's on every solana network, one call each, sorted by network. Network I/O:
// never inside a write transaction.
func (d *Deps) SponsorBalances(ctx context.Context, now time.Time) []SponsorBalance {
	if d.GasStation == nil || d.Sponsor == nil {
		return nil
	}
	addrs := d.Sponsor.Addresses()
	var out []SponsorBalance
	for caip2, n := range d.GasStation.EVM {
		b := SponsorBalance{Network: caip2, Address: addrs.EVMPaymaster, Threshold: n.LowBalance, CheckedAt: now}
		b.Balance, b.Err = d.evmNativeBalance(ctx, caip2, addrs.EVMPaymaster)
		out = append(out, b.judge())
	}
	for caip2, n := range d.GasStation.Solana {
		b := SponsorBalance{Network: caip2, Address: addrs.SolanaFeePayer, CheckedAt: now,
			Threshold: new(big.Int).SetUint64(n.LowBalanceLamports)}
		b.Balance, b.Err = d.solanaNativeBalance(ctx, caip2, addrs.SolanaFeePayer)
		out = append(out, b.judge())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Network < out[j].Network })
	return out
}

func (b SponsorBalance) judge() SponsorBalance {
	b.Low = b.Balance != nil && b.Threshold != nil && b.Balance.Cmp(b.Threshold) < 0
	return b
}

func (d *Deps) evmNativeBalance(ctx context.Context, caip2, addr string) (*big.Int, error) {
	c, err := d.provider(caip2)
	if err != nil {
		return nil, err
	}
	var raw string
	if err := c.Call(ctx, "eth_getBalance", []any{addr, "latest"}, &raw); err != nil {
		return nil, err
	}
	if len(raw) > maxQuantityHex {
		return nil, fmt.Errorf(
			"%s: eth_getBalance answered %d characters, more than a 256-bit quantity",
			caip2,
			len(raw),
		)
	}
	return hexQuantity(raw)
}

func (d *Deps) solanaNativeBalance(ctx context.Context, caip2, addr string) (*big.Int, error) {
	c, err := d.provider(caip2)
	if err != nil {
		return nil, err
	}
	var lamports struct {
		Value uint64 `json:"value"`
	}
	if err := c.Call(ctx, "getBalance", []any{addr}, &lamports); err != nil {
		return nil, err
	}
	return new(big.Int).SetUint64(lamports.Value), nil
}

// eip712DomainSelector is eip712Domain()'s selector (ERC-5267); maxDomainAnswer is the longest
// answer ethereum.DecodeEIP712Domain takes, checked here before the hex is decoded.
const (
	eip712DomainSelector = "0x84b0196e"
	maxDomainAnswer      = 4096
)

// CheckDelegates checks every EVM delegate of the gas-station file through its network's
// provider: eip712Domain() must answer the delegate's domain for that chain and address
// (ethereum.DecodeEIP712Domain, CheckDelegate). The first failure is returned, naming the
// network; a network without a provider fails too. Network I/O: run it before serving.
func (d *Deps) CheckDelegates(ctx context.Context) error {
	if d.GasStation == nil {
		return nil
	}
	networks := make([]string, 0, len(d.GasStation.EVM))
	for caip2 := range d.GasStation.EVM {
		networks = append(networks, caip2)
	}
	sort.Strings(networks)
	for _, caip2 := range networks {
		if err := d.checkDelegate(ctx, caip2); err != nil {
			return fmt.Errorf("gas station: the delegate of %s: %w", caip2, err)
		}
	}
	return nil
}

func (d *Deps) checkDelegate(ctx context.Context, caip2 string) error {
	n := d.GasStation.EVM[caip2]
	c := d.Providers[caip2]
	if c == nil {
		return fmt.Errorf(
			"no RPC provider is configured for %s (--chain-rpc %s=URL): the delegate cannot be checked",
			caip2,
			caip2,
		)
	}
	var raw string
	call := map[string]string{"to": strings.ToLower(n.DelegateAddr.Hex()), "data": eip712DomainSelector}
	if err := c.Call(ctx, "eth_call", []any{call, "latest"}, &raw); err != nil {
		return fmt.Errorf("eip712Domain() at %s: %w", n.DelegateAddr.Hex(), err)
	}
	h := strings.TrimPrefix(raw, "0x")
	if len(h) > 2*maxDomainAnswer {
		return fmt.Errorf("eip712Domain() at %s answered %d bytes, more than %d", n.DelegateAddr.Hex(), len(h)/2,
			maxDomainAnswer)
	}
	if h == "" {
		return fmt.Errorf("no contract answers eip712Domain() at %s (is the delegate deployed on this network?)",
			n.DelegateAddr.Hex())
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return fmt.Errorf("eip712Domain() at %s: the answer is not hex", n.DelegateAddr.Hex())
	}
	dom, err := ethereum.DecodeEIP712Domain(b)
	if err != nil {
		return fmt.Errorf("eip712Domain() at %s: %w", n.DelegateAddr.Hex(), err)
	}
	if err := dom.CheckDelegate(n.ChainID, n.DelegateAddr); err != nil {
		return fmt.Errorf("eip712Domain() at %s: %w", n.DelegateAddr.Hex(), err)
	}
	return nil
}
