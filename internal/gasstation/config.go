package gasstation

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/ethereum/go-ethereum/common"

	"github.com/latchkey/latchkey/internal/apierr"
)

// MaxConfigBytes bounds the gas-station file.
const MaxConfigBytes = 1 << 20

// Config is the operator's gas-station file. The zero Config sponsors nothing.
type Config struct {
	// Paused is the kill switch as the file says it: while on, every sponsored send is refused.
	// The running server reads it again on SIGHUP (SetPaused); IsPaused is its current state.
	Paused bool `json:"paused,omitempty"`
	// EVM and Solana are the networks sponsorship runs on, by CAIP-2 id.
	EVM    map[string]*EVMNetwork    `json:"evm,omitempty"`
	Solana map[string]*SolanaNetwork `json:"solana,omitempty"`

	pausedNow atomic.Bool // the kill switch now: Paused at load, then SetPaused
}

// EVMNetwork is one eip155 network's sponsorship.
type EVMNetwork struct {
	// Delegate is the EIP-7702 delegate accounts delegate to (its eip712Domain() is checked at
	// start: ethereum.DelegateDomain.CheckDelegate).
	Delegate string `json:"delegate"`
	// MaxGasPerTransaction caps the gas limit of one sponsored transaction.
	MaxGasPerTransaction uint64 `json:"maxGasPerTransaction"`
	// MaxFeePerGasWei caps the fee per gas the paymaster offers (decimal wei).
	MaxFeePerGasWei string `json:"maxFeePerGasWei"`
	// USDPerCoin is the USD price of one whole native coin used to count usage; empty counts $0,
	// which is allowed on test networks only (like Turnkey, testnets cost nothing).
	USDPerCoin string `json:"usdPerCoin,omitempty"`
	// LowBalanceWei is the paymaster balance under which the health page warns (decimal wei).
	LowBalanceWei string `json:"lowBalanceWei,omitempty"`

	// Parsed forms (set by Load).
	ChainID      *big.Int       `json:"-"`
	DelegateAddr common.Address `json:"-"`
	MaxFeePerGas *big.Int       `json:"-"`
	Price        *big.Rat       `json:"-"`
	LowBalance   *big.Int       `json:"-"`
}

// SolanaNetwork is one Solana network's sponsorship.
type SolanaNetwork struct {
	// MaxFeeLamports caps the fee (base plus priority) of one sponsored transaction.
	MaxFeeLamports uint64 `json:"maxFeeLamports"`
	// RentSponsorship lets sponsored transactions create accounts paid by the fee payer; off, a
	// transaction that would is refused.
	RentSponsorship bool `json:"rentSponsorship,omitempty"`
	// USDPerCoin is the USD price of one SOL (see EVMNetwork.USDPerCoin).
	USDPerCoin string `json:"usdPerCoin,omitempty"`
	// LowBalanceLamports is the fee payer balance under which the health page warns.
	LowBalanceLamports uint64 `json:"lowBalanceLamports,omitempty"`

	Price *big.Rat `json:"-"`
}

// testnets are the networks whose usage counts $0 without a price: public test networks and the
// usual development chain ids.
var testnets = map[string]bool{
	"eip155:11155111": true, "eip155:84532": true, "eip155:80002": true, "eip155:97": true,
	"eip155:11155420": true, "eip155:10143": true, "eip155:421614": true, "eip155:17000": true,
	"eip155:560048": true, "eip155:1337": true, "eip155:31337": true, "eip155:42431": true,
	"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1": true, "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z": true,
}

// IsTestnet tells whether caip2 is a network whose sponsored fees count $0 without a price.
func IsTestnet(caip2 string) bool { return testnets[caip2] }

// LoadConfig reads a gas-station file; "" gives the zero Config (nothing sponsored).
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return &Config{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--gas-station: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--gas-station: %w", err)
	}
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("--gas-station %s: larger than %d bytes", path, MaxConfigBytes)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("--gas-station %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig reads and checks a gas-station file's bytes.
func ParseConfig(b []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	c := &Config{}
	if err := dec.Decode(c); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("one JSON object expected")
	}
	for _, k := range sortedKeys(c.EVM) {
		if err := c.EVM[k].parse(k); err != nil {
			return nil, err
		}
	}
	for _, k := range sortedKeys(c.Solana) {
		if err := c.Solana[k].parse(k); err != nil {
			return nil, err
		}
	}
	c.pausedNow.Store(c.Paused)
	return c, nil
}

// IsPaused reports whether the kill switch is on now.
func (c *Config) IsPaused() bool { return c != nil && c.pausedNow.Load() }

// SetPaused turns the kill switch on or off while the server runs (SIGHUP re-reads the file):
// from then on every sponsored send is refused, or accepted again. Sends already accepted go on.
func (c *Config) SetPaused(on bool) { c.pausedNow.Store(on) }

// SameNetworks reports whether o sponsors the same networks with the same settings as c (the kill
// switch aside): what a reload of the file cannot change without a restart.
func (c *Config) SameNetworks(o *Config) bool {
	a, errA := json.Marshal(struct {
		EVM    map[string]*EVMNetwork
		Solana map[string]*SolanaNetwork
	}{c.EVM, c.Solana})
	b, errB := json.Marshal(struct {
		EVM    map[string]*EVMNetwork
		Solana map[string]*SolanaNetwork
	}{o.EVM, o.Solana})
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (n *EVMNetwork) parse(caip2 string) error {
	if n == nil {
		return fmt.Errorf("evm.%s: an object is required", caip2)
	}
	ref, ok := strings.CutPrefix(caip2, "eip155:")
	id, okID := new(big.Int).SetString(ref, 10)
	if !ok || !okID || id.Sign() <= 0 || strings.TrimLeft(ref, "0123456789") != "" {
		return fmt.Errorf("evm: %q is not an eip155 CAIP-2 id", caip2)
	}
	n.ChainID = id
	if !common.IsHexAddress(n.Delegate) || common.HexToAddress(n.Delegate) == (common.Address{}) {
		return fmt.Errorf("evm.%s.delegate: the delegate contract's address is required", caip2)
	}
	n.DelegateAddr = common.HexToAddress(n.Delegate)
	if n.MaxGasPerTransaction == 0 {
		return fmt.Errorf("evm.%s.maxGasPerTransaction: a cap above 0 is required", caip2)
	}
	var err error
	if n.MaxFeePerGas, err = amount(caip2, "maxFeePerGasWei", n.MaxFeePerGasWei, true); err != nil {
		return err
	}
	if n.LowBalance, err = amount(caip2, "lowBalanceWei", n.LowBalanceWei, false); err != nil {
		return err
	}
	n.Price, err = price("evm."+caip2, n.USDPerCoin, caip2)
	return err
}

func (n *SolanaNetwork) parse(caip2 string) error {
	if n == nil {
		return fmt.Errorf("solana.%s: an object is required", caip2)
	}
	ref, ok := strings.CutPrefix(caip2, "solana:")
	if !ok || len(ref) != 32 { // the genesis hash's first 32 base58 characters
		return fmt.Errorf("solana: %q is not a solana CAIP-2 id (canonical form, not an alias)", caip2)
	}
	if n.MaxFeeLamports == 0 {
		return fmt.Errorf("solana.%s.maxFeeLamports: a cap above 0 is required", caip2)
	}
	var err error
	n.Price, err = price("solana."+caip2, n.USDPerCoin, caip2)
	return err
}

func amount(caip2, field, s string, required bool) (*big.Int, error) {
	if s == "" && !required {
		return new(big.Int), nil
	}
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.Sign() < 0 || (required && v.Sign() == 0) || v.BitLen() > 256 {
		return nil, fmt.Errorf("evm.%s.%s: a positive decimal integer (wei) is required, not %q", caip2, field, s)
	}
	return v, nil
}

func price(where, s, caip2 string) (*big.Rat, error) {
	if s == "" {
		if !IsTestnet(caip2) {
			return nil, fmt.Errorf(
				"%s.usdPerCoin: required on %s (a network that is not a known test network): limits are in USD",
				where,
				caip2,
			)
		}
		return new(big.Rat), nil
	}
	p, ok := new(big.Rat).SetString(s)
	if !ok || p.Sign() < 0 || len(s) > 40 {
		return nil, fmt.Errorf("%s.usdPerCoin: %q is not a non-negative decimal", where, s)
	}
	return p, nil
}

// Refusal reasons (the TurnkeyCode of the errors below).
const (
	CodeNotSponsored = "GAS_SPONSORSHIP_UNAVAILABLE"
	CodePaused       = "GAS_SPONSORSHIP_PAUSED"
)

// notSponsored is the refusal for a network the operator did not configure.
func notSponsored(caip2 string) error {
	return apierr.New(
		apierr.FailedPrecondition,
		CodeNotSponsored,
		"gas sponsorship is not configured for %s on this deployment (the operator's gas-station file); send with sponsor false",
		caip2,
	)
}

func (c *Config) paused() error {
	if c.IsPaused() {
		return apierr.New(
			apierr.FailedPrecondition,
			CodePaused,
			"gas sponsorship is paused by the operator; send with sponsor false or try later",
		)
	}
	return nil
}

// EVMNetwork returns caip2's sponsorship, or the refusal to give when it is off (not configured,
// or the kill switch is on).
func (c *Config) EVMNetwork(caip2 string) (*EVMNetwork, error) {
	if err := c.paused(); err != nil {
		return nil, err
	}
	if c == nil || c.EVM[caip2] == nil {
		return nil, notSponsored(caip2)
	}
	return c.EVM[caip2], nil
}

// SolanaNetwork returns caip2's sponsorship, or the refusal to give when it is off.
func (c *Config) SolanaNetwork(caip2 string) (*SolanaNetwork, error) {
	if err := c.paused(); err != nil {
		return nil, err
	}
	if c == nil || c.Solana[caip2] == nil {
		return nil, notSponsored(caip2)
	}
	return c.Solana[caip2], nil
}

// Delegate is the delegate configured for caip2, sponsorship on or not: unsponsored batched calls
// and undelegation use it too.
func (c *Config) Delegate(caip2 string) (common.Address, bool) {
	if c == nil || c.EVM[caip2] == nil {
		return common.Address{}, false
	}
	return c.EVM[caip2].DelegateAddr, true
}

// USD converts an amount of a network's native coin in its smallest unit (wei: 18 decimals,
// lamports: 9) to USD at the configured price.
func USD(price *big.Rat, amount *big.Int, decimals int) *big.Rat {
	if price == nil || amount == nil {
		return new(big.Rat)
	}
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals)), nil)
	v := new(big.Rat).SetFrac(amount, scale)
	return v.Mul(v, price)
}
