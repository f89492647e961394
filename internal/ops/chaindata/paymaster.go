package chaindata

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/holiman/uint256"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/rpc"
	"github.com/latchkey/latchkey/internal/gasstation"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// The paymaster queue. A sponsored send is recorded QUEUED in its activity's transaction, with
// everything the account signed. After commit (and in the follower, for restarts and for sends
// another process queued) a store transaction claims the oldest queued send of a network,
// allocates the paymaster's next nonce from the network's counter record, signs the paymaster's
// transaction and stores its bytes on the send; only then, after that commit, is it broadcast.
// The counter and the claim live in the store, under a lock per network, so two processes over
// PostgreSQL never give one nonce to two transactions; a signed transaction is only ever sent
// again with the same bytes. A transaction the node refuses marks its send FAILED and a 0-value
// self-transfer of the paymaster takes its nonce, so the sends after it are not stuck.

// paymasterKey is the deployment's EVM paymaster key (custody.SponsorKeys): its address, and a
// signature (r ‖ s ‖ v, v in {0,1}) of a transaction digest.
type paymasterKey interface {
	PaymasterAddress() [20]byte
	SignPaymasterDigest(digest [32]byte) ([65]byte, error)
}

// paymaster is the sponsor keys' paymaster, or nil on a deployment without sponsor keys.
func (d *Deps) paymaster() paymasterKey {
	if d.Sponsor == nil {
		return nil
	}
	return d.Sponsor
}

// KindPaymasterNonce is the per-network counter of the paymaster's next nonce (id: the network).
const KindPaymasterNonce = "paymaster_nonce"

type paymasterNonce struct {
	Next uint64 `json:"next"`
}

// StatusQueued is a sponsored send the paymaster has not signed yet (webhook status).
const StatusQueued = "QUEUED"

// maxClaims bounds the sends one pump signs before it returns (the follower's next tick goes on).
const maxClaims = 64

// queue records a sponsored send, in the activity's transaction: the usage it may cost is
// reserved (gas × fee cap, in USD) and the paymaster is woken after commit.
func (d *Deps) queue(x *activity.Exec, s *Send, price *big.Rat) error {
	if d.paymaster() == nil {
		return apierr.New(apierr.FailedPrecondition, gasstation.CodeNotSponsored,
			"this deployment has no EVM paymaster key: sponsorship cannot run")
	}
	maxFee, _ := new(big.Int).SetString(s.MaxFee, 10)
	wei := new(big.Int).Mul(new(big.Int).SetUint64(s.Gas), maxFee)
	if err := gasstation.Reserve(x.Ctx, x.Tx, x.OrgID, s.Caip2, s.ID, gasstation.USD(price, wei, 18), x.Now); err != nil {
		return err
	}
	s.ActivityID = x.ActivityID
	if err := records.Save(x.Ctx, x.Tx, KindSend, s.ID, s.OrgID, s.CreatedAt, s.CreatedAt, s, s.keys()...); err != nil {
		return err
	}
	if err := d.statusEvent(x.Ctx, x.Tx, s, StatusQueued, nil, x.Now); err != nil {
		return err
	}
	network := s.Caip2
	x.AfterCommit(func(ctx context.Context) { d.pump(ctx, network) })
	return nil
}

// pumps serializes the pumps of one process per network (the store serializes processes).
var pumps sync.Map // network → *sync.Mutex

// pump signs and broadcasts the network's queued sponsored sends, oldest first.
func (d *Deps) pump(ctx context.Context, network string) {
	c := d.Providers[network]
	pk := d.paymaster()
	if c == nil || pk == nil || d.Store == nil {
		return
	}
	mu, _ := pumps.LoadOrStore(network, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	pm := common.Address(pk.PaymasterAddress())
	for range maxClaims {
		if !d.anyQueued(ctx, network) { // an idle tick costs one read, no node call, no write
			return
		}
		// The chain's pending nonce is read before the transaction (no I/O inside it).
		pending, err := pendingNonce(ctx, c, pm)
		if err != nil {
			d.warn("chaindata: reading the paymaster's nonce", network, err)
			return
		}
		s, err := d.claim(ctx, network, pending)
		if err != nil {
			d.warn("chaindata: signing a sponsored send", network, err)
			return
		}
		if s == nil {
			return
		}
		d.broadcastSponsored(ctx, c, s)
	}
}

// anyQueued reports whether a sponsored send waits for the paymaster on network.
func (d *Deps) anyQueued(ctx context.Context, network string) bool {
	var refs []store.Ref
	err := d.Store.View(ctx, func(r store.Reader) (err error) {
		refs, err = r.Lookup(ctx, keySendQueued, network)
		return err
	})
	return err == nil && len(refs) > 0
}

func (d *Deps) warn(msg, network string, err error) {
	if d.Log != nil {
		d.Log.Warn(msg, "network", network, "err", err)
	}
}

// claim takes the network's oldest queued send, gives it the paymaster's next nonce and signs
// the paymaster's transaction, in one store transaction; nil when nothing is queued.
func (d *Deps) claim(ctx context.Context, network string, pending uint64) (*Send, error) {
	var claimed *Send
	err := d.Store.Update(ctx, func(tx store.Tx) error {
		claimed = nil
		if err := tx.Lock(ctx, "paymaster:"+network); err != nil {
			return err
		}
		refs, err := tx.Lookup(ctx, keySendQueued, network)
		if err != nil || len(refs) == 0 {
			return err
		}
		var queued []*Send
		for _, ref := range refs {
			s, err := records.Load[Send](ctx, tx, KindSend, "", ref.ID, "send")
			if err != nil {
				return err
			}
			if s.Raw == "" && s.Final == "" {
				queued = append(queued, s)
			}
		}
		if len(queued) == 0 {
			return nil
		}
		sort.Slice(queued, func(i, j int) bool {
			if !queued[i].CreatedAt.Equal(queued[j].CreatedAt) {
				return queued[i].CreatedAt.Before(queued[j].CreatedAt)
			}
			return queued[i].ID < queued[j].ID
		})
		s := queued[0]
		nonce, err := d.nextPaymasterNonce(ctx, tx, network, pending)
		if err != nil {
			return err
		}
		raw, hash, err := d.signPaymaster(s, nonce)
		if err != nil {
			return err
		}
		s.PaymasterNonce, s.Raw, s.TxHash = &nonce, raw, hash
		now := time.Now().UTC()
		if err := records.Save(ctx, tx, KindSend, s.ID, s.OrgID, s.CreatedAt, now, s, s.keys()...); err != nil {
			return err
		}
		claimed = s
		return d.statusEvent(ctx, tx, s, "BROADCASTING", nil, now)
	})
	return claimed, err
}

// nextPaymasterNonce allocates the paymaster's next nonce on network, in tx: the counter, or the
// chain's pending nonce when that is ahead (the paymaster also sent elsewhere).
func (d *Deps) nextPaymasterNonce(ctx context.Context, tx store.Tx, network string, pending uint64) (uint64, error) {
	ctr := paymasterNonce{}
	created := time.Now().UTC()
	rec, err := tx.Get(ctx, KindPaymasterNonce, network)
	switch {
	case err == nil:
		if err := json.Unmarshal(rec.Data, &ctr); err != nil {
			return 0, apierr.Internalf(err, "reading the paymaster nonce")
		}
		created = rec.CreatedAt
	case !errors.Is(err, store.ErrNotFound):
		return 0, err
	}
	nonce := max(ctr.Next, pending)
	ctr.Next = nonce + 1
	return nonce, records.Save(ctx, tx, KindPaymasterNonce, network, "", created, time.Now().UTC(), ctr)
}

// signPaymaster signs the paymaster's transaction for s with nonce: to the user's account calling
// executeBatch (type 4 with the authorization on the account's first send, else type 2).
func (d *Deps) signPaymaster(s *Send, nonce uint64) (raw, hash string, err error) {
	chainID, _ := evmChainID(s.Caip2)
	maxFee, _ := new(big.Int).SetString(s.MaxFee, 10)
	prio, _ := new(big.Int).SetString(s.Prio, 10)
	if maxFee == nil || prio == nil {
		return "", "", apierr.Internalf(nil, "a queued send without its fees")
	}
	to := common.HexToAddress(s.Account)
	data := common.FromHex(s.Calldata)
	var inner types.TxData
	if s.Auth != nil {
		inner = &types.SetCodeTx{ChainID: uint256.MustFromBig(chainID), Nonce: nonce,
			GasTipCap: uint256.MustFromBig(prio), GasFeeCap: uint256.MustFromBig(maxFee), Gas: s.Gas, To: to,
			Value: new(uint256.Int), Data: data, AuthList: []types.SetCodeAuthorization{*s.Auth}}
	} else {
		inner = &types.DynamicFeeTx{ChainID: chainID, Nonce: nonce, GasTipCap: prio, GasFeeCap: maxFee, Gas: s.Gas,
			To: &to, Value: new(big.Int), Data: data}
	}
	return d.signByPaymaster(types.NewTx(inner), chainID)
}

// signByPaymaster signs tx with the paymaster key and returns its bytes and hash.
func (d *Deps) signByPaymaster(tx *types.Transaction, chainID *big.Int) (raw, hash string, err error) {
	signer := types.LatestSignerForChainID(chainID)
	sig, err := d.paymaster().SignPaymasterDigest([32]byte(signer.Hash(tx)))
	if err != nil {
		return "", "", apierr.Internalf(err, "signing with the paymaster")
	}
	signed, err := tx.WithSignature(signer, sig[:])
	if err != nil {
		return "", "", apierr.Internalf(err, "the paymaster's signature")
	}
	b, err := signed.MarshalBinary()
	if err != nil {
		return "", "", apierr.Internalf(err, "encoding the paymaster's transaction")
	}
	return hexutil.Encode(b), strings.ToLower(signed.Hash().Hex()), nil
}

// broadcastSponsored sends a signed sponsored transaction. A node's refusal marks the send FAILED
// and fills its nonce; a failure to reach the node leaves it for the follower to send again.
func (d *Deps) broadcastSponsored(ctx context.Context, c *rpc.Client, s *Send) {
	err := sendRawOnce(ctx, c, s.Raw)
	if err == nil || !errors.As(err, new(*rpc.Error)) {
		return
	}
	d.refused(ctx, c, s, "the node refused the transaction: "+err.Error())
}

// sendRawOnce broadcasts signed bytes; a node that already has them is not an error.
func sendRawOnce(ctx context.Context, c *rpc.Client, raw string) error {
	var ignored json.RawMessage
	err := c.Call(ctx, "eth_sendRawTransaction", []any{raw}, &ignored)
	var re *rpc.Error
	if errors.As(err, &re) && (strings.Contains(re.Message, "already known") ||
		strings.Contains(re.Message, "known transaction")) {
		return nil
	}
	return err
}

// refused records a refused sponsored send as FAILED with the node's words, releases its usage
// and delegate nonce, and signs a 0-value paymaster self-transfer with its nonce (broadcast after
// commit) so that the paymaster's later transactions are not stuck behind a gap.
func (d *Deps) refused(ctx context.Context, c *rpc.Client, s *Send, why string) {
	var filler string
	err := d.Store.Update(ctx, func(tx store.Tx) error {
		filler = ""
		cur, err := records.Load[Send](ctx, tx, KindSend, "", s.ID, "send")
		if err != nil || cur.Final != "" {
			return err
		}
		now := time.Now().UTC()
		cur.BroadcastError, cur.Final = why, StatusFailed
		if cur.PaymasterNonce != nil {
			chainID, _ := evmChainID(cur.Caip2)
			maxFee, _ := new(big.Int).SetString(cur.MaxFee, 10)
			prio, _ := new(big.Int).SetString(cur.Prio, 10)
			pm := common.Address(d.paymaster().PaymasterAddress())
			raw, hash, err := d.signByPaymaster(types.NewTx(&types.DynamicFeeTx{ChainID: chainID,
				Nonce: *cur.PaymasterNonce, GasTipCap: prio, GasFeeCap: maxFee, Gas: 21_000, To: &pm,
				Value: new(big.Int)}), chainID)
			if err != nil {
				return err
			}
			cur.FillerRaw, cur.FillerHash, filler = raw, hash, raw
		}
		if err := records.Save(ctx, tx, KindSend, cur.ID, cur.OrgID, cur.CreatedAt, now, cur, cur.keys()...); err != nil {
			return err
		}
		if err := gasstation.Settle(ctx, tx, cur.ID, new(big.Rat), now); err != nil {
			return err
		}
		return d.statusEvent(ctx, tx, cur, StatusFailed, &wire.TxError{Message: why}, now)
	})
	if err != nil {
		d.warn("chaindata: recording a refused sponsored send", s.Caip2, err)
		return
	}
	if filler != "" {
		if err := sendRawOnce(ctx, c, filler); err != nil {
			d.warn("chaindata: filling a refused paymaster nonce", s.Caip2, err)
		}
	}
}

// followPaymaster is the follower's share of the queue: it claims what is queued on every
// sponsored network (sends queued by another process, or before a restart) and sends again the
// signed transactions the chain has not included yet.
func (d *Deps) followPaymaster(ctx context.Context) {
	if d.paymaster() == nil || d.GasStation == nil {
		return
	}
	for network := range d.GasStation.EVM {
		if d.Providers[network] != nil {
			d.pump(ctx, network)
		}
	}
}

// rebroadcast sends a signed sponsored transaction again (same bytes) while it is pending.
func (d *Deps) rebroadcast(ctx context.Context, s *Send) {
	c := d.Providers[s.Caip2]
	if c == nil || s.Raw == "" {
		return
	}
	if err := sendRawOnce(ctx, c, s.Raw); err != nil && !errors.As(err, new(*rpc.Error)) {
		d.warn("chaindata: sending a sponsored transaction again", s.Caip2, err)
	}
}
