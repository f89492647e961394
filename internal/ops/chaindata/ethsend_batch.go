package chaindata

import (
	"context"
	"encoding/hex"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/holiman/uint256"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/chain/rpc"
	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Gas of a batch beyond its calls' own estimates (the node cannot estimate executeBatch before
// the account has signed it): the transaction's intrinsic gas and calldata, the delegate's own
// work (signature recovery, hashing, the nonce update), the first write of the nonce slot
// (priced for geth --dev, whose state-creation pricing is far dearer than mainnet's) and an
// EIP-7702 authorization. Each call's own estimate includes a 21,000 intrinsic cost the batch
// does not pay again, which leaves room for a call's cold accesses. Unused gas is not paid.
const (
	batchBaseGas      = 21_000 + 60_000
	batchCalldataGas  = 16 // per byte of calldata
	batchFirstNonce   = 150_000
	batchAuthorizeGas = 50_000
	// batchValueCallGas is added for a call that moves ETH: a call with value pays 9,000 inside
	// the batch, and a new account more (25,000 on mainnet, far more under geth --dev's state
	// pricing), none of which a top-level estimate of the same transfer includes.
	batchValueCallGas = 9_000 + 150_000
	// DefaultDeadline is how long a batch the account signed may wait to be included, when the
	// request gives no deadline.
	DefaultDeadline = time.Hour
)

// preparedBatch is what Prepare found for a sponsored send or a batch of several calls: the
// calls, the account's delegation and nonces, the gas and fees of the outer transaction, and
// the eth.tx of each call for policies.
type preparedBatch struct {
	sponsored bool
	network   string
	chainID   *big.Int
	account   common.Address
	calls     []ethereum.BatchCall
	delegate  common.Address
	// needAuth: the account does not delegate to the delegate yet; authNonce is the nonce its
	// authorization names (the account's next transaction nonce).
	needAuth  bool
	authNonce uint64
	// chainGSNonce is the delegate nonce on chain (0 when not delegated); given is the request's
	// gasStationNonce (nil: the next free one).
	chainGSNonce *big.Int
	given        *big.Int
	deadline     uint32
	// txNonce is the outer transaction's nonce when the account sends it itself (not sponsored).
	txNonce      uint64
	gas          uint64
	maxFee, prio *big.Int
	price        *big.Rat
	envs         []map[string]policy.Value
}

// batchCalls reads and checks the request's calls (1..ethereum.MaxBatchCalls).
func batchCalls(in []wire.EthCallParams) ([]ethereum.BatchCall, error) {
	calls := make([]ethereum.BatchCall, 0, len(in))
	if len(in) > ethereum.MaxBatchCalls { // before reading them
		return nil, apierr.Invalid("parameters.calls", "%d calls, more than the gas-station delegate's limit of %d",
			len(in), ethereum.MaxBatchCalls)
	}
	for i, c := range in {
		field := "parameters.calls[" + strconv.Itoa(i) + "]"
		if !common.IsHexAddress(c.To) {
			return nil, apierr.Invalid(field+".to", "must be an Ethereum address")
		}
		v, err := decimal(field+".value", c.Value, big.NewInt(0))
		if err != nil {
			return nil, err
		}
		var data []byte
		if c.Data != "" && c.Data != "0x" {
			if data, err = hexutil.Decode(c.Data); err != nil {
				return nil, apierr.Invalid(field+".data", "must be 0x-prefixed hex")
			}
		}
		if len(data) > ethereum.MaxTransactionSize {
			return nil, apierr.Invalid(field+".data", "%d bytes: a transaction is at most %d bytes",
				len(data), ethereum.MaxTransactionSize)
		}
		calls = append(calls, ethereum.BatchCall{To: common.HexToAddress(c.To), Value: v, Data: data})
	}
	if err := ethereum.CheckBatchCalls(calls); err != nil {
		return nil, batchInvalid(err)
	}
	return calls, nil
}

// batchInvalid turns an ethereum.ErrInvalidBatch ("parameters.x: why") into a 400 naming the field.
func batchInvalid(err error) error {
	msg := strings.TrimPrefix(err.Error(), ethereum.ErrInvalidBatch.Error()+": ")
	field, why, ok := strings.Cut(msg, ": ")
	if !ok || !strings.HasPrefix(field, "parameters.") {
		field, why = "parameters.calls", msg
	}
	return apierr.Invalid(field, "%s", why)
}

// prepareBatch checks a sponsored send or a batch and reads, before the transaction, what it
// needs from the node: the account's code (delegated?), its nonce, the delegate nonce, fees and
// gas. A sponsored send is refused here when the network is not sponsored or over the
// operator's caps.
func (d *Deps) prepareBatch(x *activity.Exec, s ethSend) (*preparedBatch, error) {
	n, chainID, err := evmNetwork("eth_send_transaction", s.caip2)
	if err != nil {
		return nil, err
	}
	b := &preparedBatch{sponsored: s.sponsored(), network: n, chainID: chainID}
	var cfg *gasstation.EVMNetwork
	if b.sponsored {
		if cfg, err = d.GasStation.EVMNetwork(n); err != nil {
			return nil, err
		}
		b.delegate, b.price = cfg.DelegateAddr, cfg.Price
	} else {
		delegate, ok := d.GasStation.Delegate(n)
		if !ok {
			return nil, apierr.New(apierr.FailedPrecondition, gasstation.CodeNotSponsored,
				"several calls in one transaction run through the gas-station delegate, and none is configured for %s "+
					"on this deployment (the operator's gas-station file); send one call each", n)
		}
		b.delegate = delegate
	}
	if !common.IsHexAddress(s.from) {
		return nil, apierr.Invalid("parameters.from", "must be an Ethereum address of the organization")
	}
	b.account = common.HexToAddress(s.from)
	if b.calls, err = batchCalls(s.calls); err != nil {
		return nil, err
	}
	if b.given, err = decimal("parameters.gasStationNonce", s.gasStationNonce, nil); err != nil {
		return nil, err
	}
	if b.deadline, err = batchDeadline(s.deadline, x.Now); err != nil {
		return nil, err
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	st, err := readDelegation(x.Ctx, c, b.account, b.delegate, "latest")
	if err != nil {
		return nil, err
	}
	b.chainGSNonce = st.nonce
	if b.given != nil && b.given.Cmp(b.chainGSNonce) < 0 {
		return nil, apierr.Invalid("parameters.gasStationNonce",
			"%v is stale: the account's gas-station nonce on %s is already %v (get_nonces with gasStationNonce)",
			b.given, n, b.chainGSNonce)
	}
	eoaNonce, err := pendingNonce(x.Ctx, c, b.account)
	if err != nil {
		return nil, err
	}
	b.needAuth = !st.delegated
	b.authNonce, b.txNonce = eoaNonce, eoaNonce
	if !b.sponsored {
		if given, ok, err := optionalUint64("parameters.nonce", s.nonce); err != nil {
			return nil, err
		} else if ok {
			b.txNonce = given
		}
		// The account sends its own type-4 transaction: its nonce is consumed before the
		// authorization is applied, so the authorization names the next one.
		b.authNonce = b.txNonce + 1
	}
	// Gas: each call's estimate, plus the batch's own (the constants above), unless given.
	if b.gas, err = d.batchGas(x.Ctx, c, b, st, s.gasLimit); err != nil {
		return nil, err
	}
	if b.prio, b.maxFee, err = fees(x.Ctx, c, n, s.prio, s.maxFee); err != nil {
		return nil, err
	}
	if cfg != nil {
		if err := withinCaps(cfg, n, b.gas, &b.maxFee, b.prio, s.maxFee != ""); err != nil {
			return nil, err
		}
	}
	// Policies see each call as its own eth.tx from the account (fee fields 0 when sponsored).
	for _, call := range b.calls {
		var env map[string]policy.Value
		if b.sponsored {
			env, err = callEnv(chainID, 0, new(big.Int), new(big.Int), 0, b.account, call)
		} else {
			env, err = callEnv(chainID, b.txNonce, b.prio, b.maxFee, b.gas, b.account, call)
		}
		if err != nil {
			return nil, err
		}
		b.envs = append(b.envs, env)
	}
	return b, nil
}

// withinCaps refuses a sponsored transaction over the operator's caps: its gas, or its fee per gas
// when given or when the tip alone is over. A fee cap computed as twice the base fee plus the tip
// is a margin, not a need: over the operator's cap, the operator's cap is offered instead.
func withinCaps(cfg *gasstation.EVMNetwork, n string, gas uint64, maxFee **big.Int, prio *big.Int, given bool) error {
	if gas > cfg.MaxGasPerTransaction {
		return apierr.New(apierr.FailedPrecondition, "GAS_SPONSORSHIP_CAP",
			"the sponsored transaction needs %d gas, over the operator's cap of %d per transaction on %s",
			gas, cfg.MaxGasPerTransaction, n)
	}
	if (*maxFee).Cmp(cfg.MaxFeePerGas) > 0 {
		if given || prio.Cmp(cfg.MaxFeePerGas) > 0 {
			return apierr.New(apierr.FailedPrecondition, "GAS_SPONSORSHIP_CAP",
				"the fee per gas (%v wei) is over the operator's cap of %v wei on %s; try later",
				*maxFee, cfg.MaxFeePerGas, n)
		}
		*maxFee = new(big.Int).Set(cfg.MaxFeePerGas)
	}
	return nil
}

// batchDeadline reads the request's deadline (unix seconds, in the future) or gives the default.
func batchDeadline(given string, now time.Time) (uint32, error) {
	v, err := decimal("parameters.deadline", given, nil)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return uint32(now.Add(DefaultDeadline).Unix()), nil
	}
	if !v.IsUint64() || v.Uint64() > 1<<32-1 || int64(v.Uint64()) <= now.Unix() {
		return 0, apierr.Invalid("parameters.deadline", "must be a future unix time in seconds (32 bits)")
	}
	return uint32(v.Uint64()), nil
}

// callEnv is the eth.tx a policy sees for one call: the EIP-1559 transaction the account would
// send for it alone.
func callEnv(chainID *big.Int, nonce uint64, prio, maxFee *big.Int, gas uint64, from common.Address,
	call ethereum.BatchCall) (map[string]policy.Value, error) {
	body, err := rlp.EncodeToBytes([]any{chainID, nonce, prio, maxFee, gas, common.Address(call.To), call.Value,
		call.Data, []any{}})
	if err != nil {
		return nil, apierr.Internalf(err, "encoding a call")
	}
	p, err := ethereum.ParseUnsigned(append([]byte{types.DynamicFeeTxType}, body...))
	if err != nil {
		return nil, apierr.Internalf(err, "reading a call back")
	}
	return map[string]policy.Value{"eth": policy.Map{"tx": policy.FromGo(p.PolicyView(strings.ToLower(from.Hex())))}},
		nil
}

// delegation is what the chain says of an account: whether its code delegates to the delegate,
// and the delegate nonce in its storage (0 when it does not delegate).
type delegation struct {
	delegated bool
	nonce     *big.Int
}

// readDelegation reads an account's code and delegate nonce at block ("latest", or a number).
func readDelegation(ctx context.Context, c *rpc.Client, account, delegate common.Address,
	block string) (delegation, error) {
	to, ok, err := delegatedTo(ctx, c, account, block)
	if err != nil {
		return delegation{}, err
	}
	st := delegation{nonce: new(big.Int), delegated: ok && to == delegate}
	if !ok {
		return st, nil // no delegate runs in this account: no nonce either
	}
	n, err := delegateNonce(ctx, c, account, block)
	if err != nil {
		return delegation{}, err
	}
	st.nonce = n
	return st, nil
}

// delegatedTo reads an account's code at block: the contract it delegates to, if any.
func delegatedTo(
	ctx context.Context,
	c *rpc.Client,
	account common.Address,
	block string,
) (common.Address, bool, error) {
	var code hexutil.Bytes
	if err := c.Call(ctx, "eth_getCode", []any{account.Hex(), block}, &code); err != nil {
		return common.Address{}, false, rpcError(err)
	}
	to, ok := ethereum.DelegatedTo(code)
	return to, ok, nil
}

// delegateNonce reads the delegate nonce from the account's storage (ethereum.DelegateNonceSlot).
func delegateNonce(ctx context.Context, c *rpc.Client, account common.Address, block string) (*big.Int, error) {
	slot := ethereum.DelegateNonceSlot()
	var word hexutil.Bytes
	if err := c.Call(ctx, "eth_getStorageAt", []any{account.Hex(), hexutil.Encode(slot[:]), block}, &word); err != nil {
		return nil, rpcError(err)
	}
	if len(word) > 32 {
		return nil, rpcError(errors.New("eth_getStorageAt answered more than 32 bytes"))
	}
	var w [32]byte
	copy(w[32-len(word):], word)
	return ethereum.DelegateNonceFromSlot(w), nil
}

// pendingNonce is an address's next transaction nonce (pending).
func pendingNonce(ctx context.Context, c *rpc.Client, addr common.Address) (uint64, error) {
	var n hexutil.Uint64
	if err := c.Call(ctx, "eth_getTransactionCount", []any{addr.Hex(), "pending"}, &n); err != nil {
		return 0, rpcError(err)
	}
	return uint64(n), nil
}

// batchGas is the outer transaction's gas limit: given, or the calls' estimates plus the batch's
// own gas.
func (d *Deps) batchGas(ctx context.Context, c *rpc.Client, b *preparedBatch, st delegation,
	given string) (uint64, error) {
	if g, ok, err := optionalUint64("parameters.gasLimit", given); err != nil || ok {
		return g, err
	}
	// The calldata's size does not depend on the signature's value.
	sample := ethereum.BatchExecution{ChainID: b.chainID, Account: b.account, Nonce: big.NewInt(0), Calls: b.calls}
	sig := make([]byte, 65)
	sig[63], sig[64] = 1, 27
	calldata, err := sample.ExecuteBatchCalldata(sig)
	if err != nil {
		return 0, batchInvalid(err)
	}
	gas := uint64(batchBaseGas + batchCalldataGas*len(calldata))
	if st.nonce.Sign() == 0 {
		gas += batchFirstNonce
	}
	if !st.delegated {
		gas += batchAuthorizeGas
	}
	for i, call := range b.calls {
		msg := map[string]any{"from": b.account.Hex(), "to": common.Address(call.To).Hex(),
			"value": hexutil.EncodeBig(call.Value), "data": hexutil.Encode(call.Data)}
		var est hexutil.Uint64
		if err := c.Call(ctx, "eth_estimateGas", []any{msg}, &est); err != nil {
			e := apierr.From(rpcError(err))
			e.Message = "parameters.calls[" + strconv.Itoa(i) + "]: the node cannot run this call: " + e.Message
			return 0, e
		}
		gas += uint64(est)
		if call.Value.Sign() > 0 {
			gas += batchValueCallGas
		}
	}
	return gas, nil
}

// fees are the priority fee and fee cap: given, or the node's tip and twice the base fee plus it.
func fees(ctx context.Context, c *rpc.Client, n, givenPrio, givenMax string) (prio, maxFee *big.Int, err error) {
	if prio, err = decimal("parameters.maxPriorityFeePerGas", givenPrio, nil); err != nil {
		return nil, nil, err
	}
	if prio == nil {
		var p hexutil.Big
		if err := c.Call(ctx, "eth_maxPriorityFeePerGas", nil, &p); err != nil {
			return nil, nil, rpcError(err)
		}
		prio = p.ToInt()
	}
	if maxFee, err = decimal("parameters.maxFeePerGas", givenMax, nil); err != nil {
		return nil, nil, err
	}
	if maxFee == nil {
		var block struct {
			BaseFee *hexutil.Big `json:"baseFeePerGas"`
		}
		if err := c.Call(ctx, "eth_getBlockByNumber", []any{"latest", false}, &block); err != nil {
			return nil, nil, rpcError(err)
		}
		if block.BaseFee == nil {
			return nil, nil, apierr.New(apierr.FailedPrecondition, "CHAIN_RPC_ERROR",
				"%s has no base fee (not an EIP-1559 network): give maxFeePerGas", n)
		}
		maxFee = new(big.Int).Add(new(big.Int).Mul(block.BaseFee.ToInt(), big.NewInt(2)), prio)
	}
	if givenPrio == "" && prio.Cmp(maxFee) > 0 { // the node's tip over the caller's fee cap
		prio = new(big.Int).Set(maxFee)
	}
	return prio, maxFee, nil
}

// executeBatch signs, in the activity's transaction, what the account signs: the BatchExecution
// (and, on its first send, the EIP-7702 authorization); reserves the delegate nonce (a second
// send with it is refused here) and, when sponsored, the usage; and records the send: queued for
// the paymaster (paymaster.go), or signed by the account and broadcast after commit.
func (d *Deps) executeBatch(x *activity.Exec, intent any, b *preparedBatch) (any, error) {
	if d.SignEthereumDigest == nil || d.SignEthereum == nil {
		return nil, activity.ErrNotSupported("eth_send_transaction without wallets")
	}
	account := strings.ToLower(b.account.Hex())
	nonce, err := d.nextGasStationNonce(x, b, account)
	if err != nil {
		return nil, err
	}
	exec := ethereum.BatchExecution{ChainID: b.chainID, Account: b.account, Nonce: nonce, Deadline: b.deadline,
		Calls: b.calls}
	digest, err := exec.Digest()
	if err != nil {
		return nil, batchInvalid(err)
	}
	r, sv, v, err := d.SignEthereumDigest(x, account, digest)
	if err != nil {
		return nil, fromError(err)
	}
	sig := append(append(append([]byte{}, r[:]...), sv[:]...), v+27)
	calldata, err := exec.ExecuteBatchCalldata(sig)
	if err != nil {
		return nil, apierr.Internalf(err, "encoding executeBatch")
	}
	var auth *types.SetCodeAuthorization
	if b.needAuth {
		if auth, err = d.signAuthorization(x, account, b.chainID, b.delegate, b.authNonce); err != nil {
			return nil, err
		}
	}
	send := &Send{ID: id.New(), OrgID: x.OrgID, Caip2: b.network, CreatedAt: x.Now, Account: account,
		GasStationNonce: nonce.String(), Calldata: hexutil.Encode(calldata), Auth: auth, Gas: b.gas,
		MaxFee: b.maxFee.String(), Prio: b.prio.String()}
	if b.sponsored {
		send.Sponsored = true
		err = d.queue(x, send, b.price)
	} else {
		err = d.sendOwnBatch(x, send, b)
	}
	if apierr.From(err).Code == apierr.AlreadyExists { // the unique key of (network, account, nonce)
		if b.given != nil {
			return nil, apierr.Invalid("parameters.gasStationNonce", "%v is already used by another send of %s on %s",
				b.given, account, b.network)
		}
		return nil, apierr.New(apierr.AlreadyExists, "GAS_STATION_NONCE_TAKEN",
			"another send of %s took gas-station nonce %v at the same moment: send again", account, nonce)
	}
	if err != nil {
		return nil, err
	}
	if _, v2 := intent.(*wire.EthSendTransactionIntentV2); v2 {
		return wire.EthSendTransactionResultV2{SendTransactionStatusId: send.ID}, nil
	}
	return wire.EthSendTransactionResult{SendTransactionStatusId: send.ID}, nil
}

// fromError names parameters.from in a signer's refusal.
func fromError(err error) error {
	if e := apierr.From(err); e.Code == apierr.InvalidArgument || e.Code == apierr.NotFound {
		return apierr.Invalid("parameters.from", "%s", strings.TrimPrefix(e.Message, "parameters.signWith: "))
	}
	return err
}

// nextGasStationNonce is the delegate nonce the send consumes: the one given (refused when a send
// not yet final holds it), or the next one after the chain's and those held.
func (d *Deps) nextGasStationNonce(x *activity.Exec, b *preparedBatch, account string) (*big.Int, error) {
	held, err := heldGasStationNonces(x.Ctx, x.Tx, b.network, account)
	if err != nil {
		return nil, err
	}
	if b.given != nil {
		for _, h := range held {
			if h.Cmp(b.given) == 0 {
				return nil, apierr.Invalid("parameters.gasStationNonce",
					"%v is already used by another send of %s on %s (get_nonces with gasStationNonce)",
					b.given, account, b.network)
			}
		}
		return b.given, nil
	}
	return nextFreeNonce(b.chainGSNonce, held), nil
}

// nextFreeNonce is the first delegate nonce at or after the chain's that comes after every held one.
func nextFreeNonce(chain *big.Int, held []*big.Int) *big.Int {
	next := new(big.Int).Set(chain)
	for _, h := range held {
		if h.Cmp(next) >= 0 {
			next.Add(h, big.NewInt(1))
		}
	}
	return next
}

// heldGasStationNonces are the delegate nonces of an account's sends that are not final yet.
func heldGasStationNonces(ctx context.Context, r store.Reader, network, account string) ([]*big.Int, error) {
	refs, err := r.Lookup(ctx, keySendHeldNonce, network+"|"+account)
	if err != nil {
		return nil, err
	}
	var out []*big.Int
	for _, ref := range refs {
		s, err := records.Load[Send](ctx, r, KindSend, "", ref.ID, "send")
		if err != nil {
			return nil, err
		}
		if v, ok := new(big.Int).SetString(s.GasStationNonce, 10); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

// signAuthorization signs the EIP-7702 authorization 0x05 ‖ rlp([chainId, delegate, nonce]) with
// the account's key (delegate 0 undelegates).
func (d *Deps) signAuthorization(x *activity.Exec, account string, chainID *big.Int, delegate common.Address,
	nonce uint64) (*types.SetCodeAuthorization, error) {
	enc, err := rlp.EncodeToBytes([]any{chainID, delegate, nonce})
	if err != nil {
		return nil, apierr.Internalf(err, "encoding the authorization")
	}
	digest := [32]byte(crypto.Keccak256(append([]byte{0x05}, enc...)))
	r, s, v, err := d.SignEthereumDigest(x, account, digest)
	if err != nil {
		return nil, fromError(err)
	}
	a := &types.SetCodeAuthorization{Address: delegate, Nonce: nonce, V: v}
	a.ChainID.SetFromBig(chainID)
	a.R.SetBytes(r[:])
	a.S.SetBytes(s[:])
	return a, nil
}

// sendOwnBatch is a batch the account sends and pays for itself: a transaction to itself calling
// executeBatch, of type 4 with the authorization when the account does not delegate yet; signed
// here and broadcast after commit like any unsponsored send.
func (d *Deps) sendOwnBatch(x *activity.Exec, send *Send, b *preparedBatch) error {
	data := common.FromHex(send.Calldata)
	var inner types.TxData
	if send.Auth != nil {
		inner = &types.SetCodeTx{ChainID: uint256.MustFromBig(b.chainID), Nonce: b.txNonce,
			GasTipCap: uint256.MustFromBig(b.prio), GasFeeCap: uint256.MustFromBig(b.maxFee), Gas: b.gas,
			To: b.account, Value: new(uint256.Int), Data: data, AuthList: []types.SetCodeAuthorization{*send.Auth}}
	} else {
		inner = &types.DynamicFeeTx{ChainID: b.chainID, Nonce: b.txNonce, GasTipCap: b.prio, GasFeeCap: b.maxFee,
			Gas: b.gas, To: &b.account, Value: new(big.Int), Data: data}
	}
	unsigned, err := unsignedBytes(types.NewTx(inner))
	if err != nil {
		return err
	}
	signed, err := d.SignEthereum(x, send.Account, unsigned)
	if err != nil {
		return fromError(err)
	}
	var tx types.Transaction
	if err := tx.UnmarshalBinary(signed); err != nil {
		return apierr.Internalf(err, "reading the signed transaction")
	}
	c, err := d.provider(b.network)
	if err != nil {
		return err
	}
	send.TxHash = strings.ToLower(tx.Hash().Hex())
	return d.record(x, send, c, "eth_sendRawTransaction", []any{"0x" + hex.EncodeToString(signed)})
}

// unsignedBytes is the unsigned form sign_transaction takes: type ‖ rlp(the fields without v, r, s).
func unsignedBytes(tx *types.Transaction) ([]byte, error) {
	signedForm, err := tx.MarshalBinary() // v, r, s are 0: three empty strings at the end
	if err != nil {
		return nil, apierr.Internalf(err, "encoding the transaction")
	}
	_, content, _, err := rlp.Split(signedForm[1:])
	if err != nil || len(content) < 3 {
		return nil, apierr.Internalf(err, "encoding the transaction")
	}
	content = content[:len(content)-3]
	return append(append([]byte{tx.Type()}, rlpListHeader(len(content))...), content...), nil
}

// rlpListHeader is the RLP header of a list whose content is n bytes.
func rlpListHeader(n int) []byte {
	if n < 56 {
		return []byte{0xc0 + byte(n)}
	}
	var size []byte
	for v := n; v > 0; v >>= 8 {
		size = append([]byte{byte(v)}, size...)
	}
	return append([]byte{0xf7 + byte(len(size))}, size...)
}
