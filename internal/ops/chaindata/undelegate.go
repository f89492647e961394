package chaindata

import (
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/wire"
)

// UndelegateGas is the gas limit of an undelegation when the request gives none: the
// transaction's 21,000, the authorization's 25,000, and a margin for networks that price
// account state higher (geth --dev).
const UndelegateGas = 100_000

// preparedUndelegate is what Prepare found for eth_undelegate_7702.
type preparedUndelegate struct {
	network      string
	chainID      *big.Int
	account      common.Address
	authNonce    uint64
	gas          uint64
	maxFee, prio *big.Int
	price        *big.Rat
}

// prepareUndelegate checks eth_undelegate_7702 and reads what it needs before the transaction:
// the network must be sponsored (the paymaster sends the authorization; the account may hold no
// ETH), the account must delegate to something, and the fees within the operator's caps.
func (d *Deps) prepareUndelegate(x *activity.Exec, in *wire.EthUndelegate7702Intent) (any, error) {
	n, chainID, err := evmNetwork("eth_undelegate_7702", in.Caip2)
	if err != nil {
		return nil, err
	}
	cfg, err := d.GasStation.EVMNetwork(n)
	if err != nil {
		return nil, err
	}
	if !common.IsHexAddress(in.From) {
		return nil, apierr.Invalid("parameters.from", "must be an Ethereum address of the organization")
	}
	p := &preparedUndelegate{network: n, chainID: chainID, account: common.HexToAddress(in.From), gas: UndelegateGas,
		price: cfg.Price}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	if _, delegated, err := delegatedTo(x.Ctx, c, p.account, "latest"); err != nil {
		return nil, err
	} else if !delegated {
		return nil, apierr.New(apierr.FailedPrecondition, "NOT_DELEGATED",
			"%s delegates to no contract on %s: there is nothing to undelegate", p.account.Hex(), n)
	}
	if p.authNonce, err = pendingNonce(x.Ctx, c, p.account); err != nil {
		return nil, err
	}
	if g, ok, err := optionalUint64("parameters.gasLimit", in.GasLimit); err != nil {
		return nil, err
	} else if ok {
		p.gas = g
	}
	if p.prio, p.maxFee, err = fees(x.Ctx, c, n, in.MaxPriorityFeePerGas, in.MaxFeePerGas); err != nil {
		return nil, err
	}
	if err := withinCaps(cfg, n, p.gas, &p.maxFee, p.prio, in.MaxFeePerGas != ""); err != nil {
		return nil, err
	}
	return p, nil
}

// undelegate signs, in the activity's transaction, the account's authorization to address 0 and
// queues it for the paymaster, which sends it in a type-4 transaction to the account (no call
// data) and pays; the usage counts like a sponsored send's.
func (d *Deps) undelegate(x *activity.Exec, in *wire.EthUndelegate7702Intent) (any, error) {
	p, ok := x.Prepared.(*preparedUndelegate)
	if !ok {
		return nil, apierr.Internalf(nil, "eth_undelegate_7702 ran without its prepared transaction")
	}
	if d.SignEthereumDigest == nil {
		return nil, activity.ErrNotSupported("eth_undelegate_7702 without wallets")
	}
	account := strings.ToLower(p.account.Hex())
	auth, err := d.signAuthorization(x, account, p.chainID, common.Address{}, p.authNonce)
	if err != nil {
		return nil, err
	}
	send := &Send{ID: id.New(), OrgID: x.OrgID, Caip2: p.network, CreatedAt: x.Now, Account: account, Auth: auth,
		Undelegate: true, Sponsored: true, Gas: p.gas, MaxFee: p.maxFee.String(), Prio: p.prio.String()}
	if err := d.queue(x, send, p.price); err != nil {
		return nil, err
	}
	return wire.EthUndelegate7702Result{SendTransactionStatusId: send.ID}, nil
}
