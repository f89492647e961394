package chaindata

import (
	"context"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/chain/rpc"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/ops/wallets"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// DefaultCacheTTL is how long a (network, address)'s balances are served from memory.
const DefaultCacheTTL = 10 * time.Second

// The SPL token program whose accounts hold token balances.
const splTokenProgram = "TokenkegQfeZyiNwAJbNbGiKYQCPYSiyYTMSsENS7SmX"

// Deps are what the operations need.
type Deps struct {
	// Providers are the configured nodes by canonical CAIP-2 id.
	Providers map[string]*rpc.Client
	Catalog   Catalog
	// Prices, when set, give balances a display.usd.
	Prices Prices
	// GasStation is the operator's sponsorship configuration (never nil once built by the server;
	// the zero Config sponsors nothing).
	GasStation *gasstation.Config
	Sponsor    *custody.SponsorKeys // the deployment's paymaster and fee payer (custody.LoadSponsorKeys)
	// SignSolana signs a Solana transaction with the key signWith names (wallets.Deps.SignSolana).
	SignSolana func(x *activity.Exec, signWith string, unsigned []byte) ([]byte, error)
	// SignEthereum signs an unsigned Ethereum transaction with the key signWith names.
	SignEthereum func(x *activity.Exec, signWith string, unsigned []byte) ([]byte, error)
	// SignEthereumDigest signs a digest with the secp256k1 key signWith names (r, s, v in {0,1}):
	// the batch executions and EIP-7702 authorizations of sends through the gas-station delegate.
	SignEthereumDigest func(x *activity.Exec, signWith string, digest [32]byte) (r, s [32]byte, v byte, err error)
	CacheTTL           time.Duration
	// Store records refused broadcasts (after the activity's commit); Log reports what fails there.
	Store store.Store
	Log   *slog.Logger
	cache *balanceCache
}

// NewDeps returns the dependencies with a fresh cache.
func NewDeps(providers map[string]*rpc.Client, catalog Catalog, ttl time.Duration) *Deps {
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &Deps{
		Providers: providers,
		Catalog:   catalog,
		CacheTTL:  ttl,
		cache:     &balanceCache{m: map[string]*cacheEntry{}},
	}
}

// Register adds the operations to reg and returns the record kinds the package keeps under an
// organization (they go when a sub-organization is deleted).
func Register(reg *activity.Registry, d *Deps) (owned []string) {
	reg.Query(activity.QueryOp{Path: "list_supported_assets", Execute: activity.Query(d.listAssets)})
	reg.Query(activity.QueryOp{Path: "get_wallet_address_balances", Execute: activity.Query(d.balances)})
	reg.Query(activity.QueryOp{Path: "get_nonces", Execute: activity.Query(d.nonces)})
	reg.Query(activity.QueryOp{Path: "get_send_transaction_status", Execute: activity.Query(d.status)})
	reg.Query(activity.QueryOp{Path: "list_eth_transaction_history", Execute: activity.Query(d.listHistory)})
	reg.Query(activity.QueryOp{Path: "list_sol_transaction_history", Execute: activity.Query(d.solHistory)})
	reg.Submit(
		activity.Operation{
			Path:    "eth_send_raw_transaction",
			Access:  activity.AccessRoot,
			Execute: activity.On(d.sendRaw),
		},
	)
	ethSends := []any{(*wire.EthSendTransactionIntentV2)(nil), (*wire.EthSendTransactionIntent)(nil)}
	reg.Submit(
		activity.Operation{
			Path:    "eth_send_transaction",
			Access:  activity.AccessRoot,
			Prepare: activity.OnAny(d.prepareEthSend, ethSends...),
			Execute: activity.OnAny(
				d.ethSendExecute,
				ethSends...),
			PolicyEnv: activity.EnvEach(d.ethSendEnvs, ethSends...),
		},
	)
	solSends := []any{(*wire.SolSendTransactionIntentV2)(nil), (*wire.SolSendTransactionIntent)(nil)}
	reg.Submit(
		activity.Operation{
			Path:    "eth_undelegate_7702",
			Access:  activity.AccessRoot,
			Prepare: activity.On(d.prepareUndelegate),
			Execute: activity.On(d.undelegate),
		},
	)
	reg.Submit(
		activity.Operation{
			Path:      "sol_send_transaction",
			Access:    activity.AccessRoot,
			Prepare:   activity.OnAny(d.prepareSolSend, solSends...),
			Execute:   activity.OnAny(d.solSend, solSends...),
			PolicyEnv: activity.EnvAny(d.solSendEnv, solSends...),
		},
	)
	return append(slices.Clone(OwnedKinds), KindSolSponsored)
}

func (d *Deps) provider(caip2 string) (*rpc.Client, error) {
	if c := d.Providers[caip2]; c != nil {
		return c, nil
	}
	return nil, apierr.New(
		apierr.FailedPrecondition,
		"NO_CHAIN_PROVIDER",
		"no RPC provider is configured for %s (--chain-rpc %s=URL)",
		caip2,
		caip2,
	)
}

// rpcError turns a provider failure into the API's error, naming the network.
func rpcError(err error) error {
	var re *rpc.Error
	if errors.As(err, &re) {
		return apierr.New(apierr.FailedPrecondition, "CHAIN_RPC_ERROR", "%v", err)
	}
	if errors.Is(err, rpc.ErrUnavailable) {
		return &apierr.Error{Code: apierr.Unavailable, TurnkeyCode: "CHAIN_UNAVAILABLE", Message: err.Error()}
	}
	return apierr.Internalf(err, "chain provider")
}

func (d *Deps) listAssets(q *activity.Read, in *wire.ListSupportedAssetsRequest) (any, error) {
	n, err := checkNetwork("caip2", in.Caip2, true)
	if err != nil {
		return nil, err
	}
	out := wire.ListSupportedAssetsResponse{Assets: []wire.AssetMetadata{}}
	for _, a := range d.Catalog[n] {
		out.Assets = append(out.Assets, a.toWire())
	}
	return out, nil
}

// walletAddress checks the given address is one of the organization's wallet account addresses.
func walletAddress(q *activity.Read, field, given string) (string, error) {
	if given == "" {
		return "", apierr.Required(field)
	}
	addr := address.Normalize(strings.TrimSpace(given))
	ids, err := records.LookupIDs(q.Ctx, q.R, wallets.KeyAccountAddress, addr, wallets.KindAccount, q.OrgID)
	if err != nil {
		return "", err
	}
	if len(ids) > 0 {
		return addr, nil
	}
	if ids, err = records.LookupIDs(q.Ctx, q.R, wallets.KeyPrivKeyAddress, addr, wallets.KindPrivateKey, q.OrgID); err == nil &&
		len(ids) > 0 {
		return "", apierr.Invalid(
			field,
			"%s is a private key address; only wallet account addresses are served",
			given,
		)
	}
	return "", apierr.NotFoundf("%s: %s is not a wallet account address of organization %s", field, given, q.OrgID)
}

func checkAddressFor(field, caip2, addr string) error {
	if isSolana(caip2) {
		if b, err := base58.Decode(addr); err != nil || len(b) != 32 {
			return apierr.Invalid(field, "%s is not a Solana address, and %s is a Solana network", addr, caip2)
		}
		return nil
	}
	if b, err := hex.DecodeString(strings.TrimPrefix(addr, "0x")); err != nil || len(b) != 20 ||
		!strings.HasPrefix(addr, "0x") {
		return apierr.Invalid(field, "%s is not an Ethereum address, and %s is an EVM network", addr, caip2)
	}
	return nil
}

func (d *Deps) balances(q *activity.Read, in *wire.GetWalletAddressBalancesRequest) (any, error) {
	n, err := checkNetwork("caip2", in.Caip2, true)
	if err != nil {
		return nil, err
	}
	ok, err := Granted(q.Ctx, q.R, q.Caller.Target, FeatureWalletBalances)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierr.New(
			apierr.PermissionDenied,
			"FEATURE_NOT_ENABLED",
			"get_wallet_address_balances is a beta that needs access: the operator grants it with `latchkey access grant --feature wallet-balances --org %s`",
			q.OrgID,
		)
	}
	addr, err := walletAddress(q, "address", in.Address)
	if err != nil {
		return nil, err
	}
	if err := checkAddressFor("address", n, addr); err != nil {
		return nil, err
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	bs, err := d.cache.get(q.Ctx, n+" "+addr, d.CacheTTL, func(ctx context.Context) ([]wire.AssetBalance, error) {
		if isSolana(n) {
			return d.solanaBalances(ctx, c, n, addr)
		}
		return d.evmBalances(ctx, c, n, addr)
	})
	if err != nil {
		return nil, rpcError(err)
	}
	out := make([]wire.AssetBalance, len(bs))
	for i, b := range bs {
		out[i] = d.withDisplay(b)
	}
	return wire.GetWalletAddressBalancesResponse{Balances: out}, nil
}

func balance(a Asset, amount *big.Int) wire.AssetBalance {
	d := a.Decimals
	return wire.AssetBalance{Caip19: a.Caip19, Symbol: a.Symbol, Name: a.Name, Decimals: &d, Balance: amount.String()}
}

// hexQuantity parses an EVM quantity or 32-byte word ("0x" alone is zero).
func hexQuantity(s string) (*big.Int, error) {
	h := strings.TrimPrefix(s, "0x")
	if h == "" {
		return new(big.Int), nil
	}
	n, ok := new(big.Int).SetString(h, 16)
	if !ok {
		return nil, errors.New("not a hex quantity: " + s)
	}
	return n, nil
}

func (d *Deps) evmBalances(ctx context.Context, c *rpc.Client, caip2, addr string) ([]wire.AssetBalance, error) {
	out := []wire.AssetBalance{}
	for _, a := range d.Catalog[caip2] {
		ns, ref := a.kind()
		var raw string
		switch ns {
		case "slip44":
			if err := c.Call(ctx, "eth_getBalance", []any{addr, "latest"}, &raw); err != nil {
				return nil, err
			}
		case "erc20":
			data := "0x70a08231" + strings.Repeat("0", 24) + strings.TrimPrefix(addr, "0x") // balanceOf(address)
			if err := c.Call(ctx, "eth_call", []any{map[string]string{"to": ref, "data": data}, "latest"}, &raw); err != nil {
				return nil, err
			}
		default:
			continue
		}
		n, err := hexQuantity(raw)
		if err != nil {
			return nil, err
		}
		if n.Sign() > 0 {
			out = append(out, balance(a, n))
		}
	}
	return out, nil
}

func (d *Deps) solanaBalances(ctx context.Context, c *rpc.Client, caip2, addr string) ([]wire.AssetBalance, error) {
	out := []wire.AssetBalance{}
	var lamports struct {
		Value uint64 `json:"value"`
	}
	if err := c.Call(ctx, "getBalance", []any{addr}, &lamports); err != nil {
		return nil, err
	}
	var accounts struct {
		Value []struct {
			Account struct {
				Data struct {
					Parsed struct {
						Info struct {
							Mint        string `json:"mint"`
							TokenAmount struct {
								Amount   string `json:"amount"`
								Decimals int32  `json:"decimals"`
							} `json:"tokenAmount"`
						} `json:"info"`
					} `json:"parsed"`
				} `json:"data"`
			} `json:"account"`
		} `json:"value"`
	}
	if err := c.Call(ctx, "getTokenAccountsByOwner", []any{addr, map[string]string{"programId": splTokenProgram}, map[string]string{"encoding": "jsonParsed"}}, &accounts); err != nil {
		return nil, err
	}
	byMint := map[string]*big.Int{}
	decimals := map[string]int32{}
	for _, v := range accounts.Value {
		info := v.Account.Data.Parsed.Info
		n, ok := new(big.Int).SetString(info.TokenAmount.Amount, 10)
		if !ok || info.Mint == "" {
			continue
		}
		if byMint[info.Mint] == nil {
			byMint[info.Mint] = new(big.Int)
		}
		byMint[info.Mint].Add(byMint[info.Mint], n)
		decimals[info.Mint] = info.TokenAmount.Decimals
	}
	listed := map[string]bool{}
	for _, a := range d.Catalog[caip2] {
		ns, ref := a.kind()
		switch ns {
		case "slip44":
			if lamports.Value > 0 {
				out = append(out, balance(a, new(big.Int).SetUint64(lamports.Value)))
			}
		case "token":
			listed[ref] = true
			if n := byMint[ref]; n != nil && n.Sign() > 0 {
				out = append(out, balance(a, n))
			}
		}
	}
	// Tokens the list does not name still show, by mint, with the decimals the chain reports.
	var others []string
	for m, n := range byMint {
		if !listed[m] && n.Sign() > 0 {
			others = append(others, m)
		}
	}
	sort.Strings(others)
	for _, m := range others {
		dec := decimals[m]
		out = append(out, wire.AssetBalance{Caip19: caip2 + "/token:" + m, Balance: byMint[m].String(), Decimals: &dec})
	}
	return out, nil
}

// balanceCache keeps balances per key for a while; concurrent misses of one key share a fetch.
type balanceCache struct {
	mu sync.Mutex
	m  map[string]*cacheEntry
}

type cacheEntry struct {
	done chan struct{}
	at   time.Time
	val  []wire.AssetBalance
	err  error
}

const maxCacheEntries = 10000

func (c *balanceCache) get(
	ctx context.Context,
	key string,
	ttl time.Duration,
	fetch func(context.Context) ([]wire.AssetBalance, error),
) ([]wire.AssetBalance, error) {
	c.mu.Lock()
	e := c.m[key]
	if e != nil {
		select {
		case <-e.done:
			if e.err == nil && time.Since(e.at) < ttl {
				c.mu.Unlock()
				return e.val, nil
			}
		default: // a fetch is under way: wait for it
			c.mu.Unlock()
			select {
			case <-e.done:
				return e.val, e.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	if len(c.m) >= maxCacheEntries {
		for k, old := range c.m {
			select {
			case <-old.done:
				if time.Since(old.at) >= ttl {
					delete(c.m, k)
				}
			default:
			}
		}
	}
	e = &cacheEntry{done: make(chan struct{})}
	c.m[key] = e
	c.mu.Unlock()
	// The fetch outlives one caller's cancellation: others may be waiting on it.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	e.val, e.err = fetch(fctx)
	cancel()
	e.at = time.Now()
	close(e.done)
	return e.val, e.err
}
