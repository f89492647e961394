package chaindata

import (
	"encoding/hex"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/policy"
	"github.com/latchkey/latchkey/internal/wire"
)

// ethSend is eth_send_transaction. One call without sponsorship: Latchkey fills what the caller
// left out (nonce, gas limit, fees) from the network's provider, signs with the `from` account,
// records the send and broadcasts it after the activity commits; get_send_transaction_status
// follows it. Sponsored sends and batches of several calls go through the gas-station delegate
// (ethsend_batch.go, paymaster.go).
type ethSend struct {
	from, caip2                   string
	to, value, data               string
	nonce, gasLimit, maxFee, prio string
	sponsor                       *bool
	gasStationNonce, deadline     string
	calls                         []wire.EthCallParams
}

func readEthSend(intent any) ethSend {
	switch in := intent.(type) {
	case *wire.EthSendTransactionIntent:
		return ethSend{from: in.From, caip2: in.Caip2, to: in.To, value: in.Value, data: in.Data, nonce: in.Nonce,
			gasLimit: in.GasLimit, maxFee: in.MaxFeePerGas, prio: in.MaxPriorityFeePerGas, sponsor: in.Sponsor,
			gasStationNonce: in.GasStationNonce, deadline: in.Deadline,
			calls: []wire.EthCallParams{{To: in.To, Value: in.Value, Data: in.Data}}}
	case *wire.EthSendTransactionIntentV2:
		s := ethSend{from: in.From, caip2: in.Caip2, nonce: in.Nonce, gasLimit: in.GasLimit, maxFee: in.MaxFeePerGas,
			prio: in.MaxPriorityFeePerGas, sponsor: in.Sponsor, gasStationNonce: in.GasStationNonce,
			deadline: in.Deadline, calls: in.Calls}
		if len(in.Calls) == 1 {
			s.to, s.value, s.data = in.Calls[0].To, in.Calls[0].Value, in.Calls[0].Data
		}
		return s
	}
	return ethSend{}
}

// sponsored reports whether the request asks the gas station to pay.
func (s ethSend) sponsored() bool { return s.sponsor != nil && *s.sponsor }

// preparedSend is what Prepare found before the transaction: the unsigned transaction and what
// policies see of it.
type preparedSend struct {
	unsigned []byte
	env      map[string]policy.Value
}

// prepareEthSend runs before the activity's transaction (network I/O belongs there): it checks
// the request and asks the provider for what the caller left out.
func (d *Deps) prepareEthSend(x *activity.Exec, intent any) (any, error) {
	s := readEthSend(intent)
	if s.sponsored() || len(s.calls) != 1 {
		return d.prepareBatch(x, s)
	}
	if s.gasStationNonce != "" {
		return nil, apierr.Invalid("parameters.gasStationNonce",
			"is for sponsored sends and batches of several calls; this is one call with sponsor false")
	}
	n, chainID, err := evmNetwork("eth_send_transaction", s.caip2)
	if err != nil {
		return nil, err
	}
	if !common.IsHexAddress(s.from) {
		return nil, apierr.Invalid("parameters.from", "must be an Ethereum address of the organization")
	}
	if !common.IsHexAddress(s.to) {
		return nil, apierr.Invalid("parameters.to", "must be an Ethereum address")
	}
	value, err := decimal("parameters.value", s.value, big.NewInt(0))
	if err != nil {
		return nil, err
	}
	var data []byte
	if s.data != "" {
		if data, err = hexutil.Decode(s.data); err != nil {
			return nil, apierr.Invalid("parameters.data", "must be 0x-prefixed hex")
		}
	}
	if len(data) > ethereum.MaxTransactionSize { // before any RPC call; the whole is checked below
		return nil, apierr.Invalid("parameters.data", "%d bytes: a transaction is at most %d bytes",
			len(data), ethereum.MaxTransactionSize)
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	from, to := common.HexToAddress(s.from), common.HexToAddress(s.to)
	call := map[string]any{
		"from":  from.Hex(),
		"to":    to.Hex(),
		"value": hexutil.EncodeBig(value),
		"data":  hexutil.Encode(data),
	}
	nonce, err := decimal("parameters.nonce", s.nonce, nil)
	if err != nil {
		return nil, err
	}
	if nonce == nil {
		n, err := pendingNonce(x.Ctx, c, from)
		if err != nil {
			return nil, err
		}
		nonce = new(big.Int).SetUint64(n)
	}
	gas, err := decimal("parameters.gasLimit", s.gasLimit, nil)
	if err != nil {
		return nil, err
	}
	if gas == nil {
		var est hexutil.Big
		if err := c.Call(x.Ctx, "eth_estimateGas", []any{call}, &est); err != nil {
			return nil, rpcError(err)
		}
		gas = est.ToInt()
	}
	prio, maxFee, err := fees(x.Ctx, c, n, s.prio, s.maxFee)
	if err != nil {
		return nil, err
	}
	if !nonce.IsUint64() || !gas.IsUint64() {
		return nil, apierr.Invalid("parameters.nonce", "nonce and gasLimit must fit in 64 bits")
	}
	// The unsigned EIP-1559 form that sign_transaction takes: 0x02 ‖ rlp([chainId, nonce,
	// maxPriorityFeePerGas, maxFeePerGas, gas, to, value, data, accessList]).
	body, err := rlp.EncodeToBytes([]any{chainID, nonce.Uint64(), prio, maxFee, gas.Uint64(), to, value, data, []any{}})
	if err != nil {
		return nil, apierr.Internalf(err, "encoding the transaction")
	}
	unsigned := append([]byte{types.DynamicFeeTxType}, body...)
	if len(unsigned) > ethereum.MaxTransactionSize {
		return nil, apierr.Invalid("parameters.data", "the transaction would be %d bytes; at most %d",
			len(unsigned), ethereum.MaxTransactionSize)
	}
	// What a policy sees is what sign_transaction shows for the same transaction (eth.tx).
	p, err := ethereum.ParseUnsigned(unsigned)
	if err != nil {
		return nil, apierr.Internalf(err, "reading the transaction back")
	}
	env := map[string]policy.Value{"eth": policy.Map{"tx": policy.FromGo(p.PolicyView(strings.ToLower(from.Hex())))}}
	return preparedSend{unsigned: unsigned, env: env}, nil
}

// ethSendExecute signs the prepared transaction in the activity's transaction and records the
// send; it is broadcast once the activity commits.
func (d *Deps) ethSendExecute(x *activity.Exec, intent any) (any, error) {
	if b, ok := x.Prepared.(*preparedBatch); ok {
		return d.executeBatch(x, intent, b)
	}
	p, ok := x.Prepared.(preparedSend)
	if !ok {
		return nil, apierr.Internalf(nil, "eth_send_transaction ran without its prepared transaction")
	}
	if d.SignEthereum == nil {
		return nil, activity.ErrNotSupported("eth_send_transaction without wallets")
	}
	s := readEthSend(intent)
	n, _ := checkNetwork("parameters.caip2", s.caip2, false)
	signed, err := d.SignEthereum(x, s.from, p.unsigned)
	if err != nil {
		if e := apierr.From(err); e.Code == apierr.InvalidArgument || e.Code == apierr.NotFound {
			return nil, apierr.Invalid("parameters.from", "%s", strings.TrimPrefix(e.Message, "parameters.signWith: "))
		}
		return nil, err
	}
	var tx types.Transaction
	if err := tx.UnmarshalBinary(signed); err != nil {
		return nil, apierr.Internalf(err, "reading the signed transaction")
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	send := &Send{ID: id.New(), OrgID: x.OrgID, Caip2: n, TxHash: strings.ToLower(tx.Hash().Hex()), CreatedAt: x.Now}
	if err := d.record(x, send, c, "eth_sendRawTransaction", []any{"0x" + hex.EncodeToString(signed)}); err != nil {
		return nil, err
	}
	if _, v2 := intent.(*wire.EthSendTransactionIntentV2); v2 {
		return wire.EthSendTransactionResultV2{SendTransactionStatusId: send.ID}, nil
	}
	return wire.EthSendTransactionResult{SendTransactionStatusId: send.ID}, nil
}

// ethSendEnvs is what policies see: one eth.tx, or one per call of a batch (each decided on its
// own; one denied call denies the send).
func (d *Deps) ethSendEnvs(x *activity.Exec, _ any) []map[string]policy.Value {
	switch p := x.Prepared.(type) {
	case preparedSend:
		return []map[string]policy.Value{p.env}
	case *preparedBatch:
		return p.envs
	}
	return nil
}

// evmNetwork reads parameters.caip2 of an operation that runs on eip155 networks only: the
// canonical network and its chain id.
func evmNetwork(op, caip2 string) (string, *big.Int, error) {
	n, err := checkNetwork("parameters.caip2", caip2, false)
	if err != nil {
		return "", nil, err
	}
	chainID, ok := evmChainID(n)
	if !ok {
		return "", nil, apierr.Invalid("parameters.caip2", "%s runs on eip155 networks; %s is not one", op, n)
	}
	return n, chainID, nil
}

// optionalUint64 reads an optional decimal (or 0x-hex) that must fit in 64 bits; ok is false when empty.
func optionalUint64(field, s string) (v uint64, ok bool, err error) {
	b, err := decimal(field, s, nil)
	if err != nil || b == nil {
		return 0, false, err
	}
	if !b.IsUint64() {
		return 0, false, apierr.Invalid(field, "must fit in 64 bits")
	}
	return b.Uint64(), true, nil
}

// decimal reads an optional decimal (or 0x-hex) amount; def when empty.
func decimal(field, s string, def *big.Int) (*big.Int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	v, ok := new(big.Int).SetString(s, 0)
	if !ok || v.Sign() < 0 || v.BitLen() > 256 {
		return nil, apierr.Invalid(field, "must be a non-negative integer (decimal, or 0x hex)")
	}
	return v, nil
}
