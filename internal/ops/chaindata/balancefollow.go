package chaindata

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/ops/wallets"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/webhooks"
)

// Balance updates (BALANCE_CONFIRMED_UPDATES, BALANCE_FINALIZED_UPDATES) on the eip155 networks
// that have a provider: the follower reads each new block at the "latest" tag (confirmed: first
// seen in a block) and at the "finalized" tag (the network's finality), finds the native
// transfers and the ERC-20 Transfer logs of the catalog's tokens that touch a wallet account
// address, and queues one delivery per address, operation and asset for the endpoints of the
// address's top-level organization, in the transaction that advances the network's cursor (so a
// block is reported once, whichever process reads it first). On the eip155 networks the same
// walk feeds the transaction history index (history.go), so it runs whenever a provider is
// configured; balance deliveries are queued only while an endpoint subscribes to them. On
// Solana it asks the nodes for nothing while no endpoint subscribes.

// KindBalanceCursor is the last block reported per network and tag.
const KindBalanceCursor = "balance_cursor"

// maxBlocksPerPass bounds how far one pass catches up.
const maxBlocksPerPass = 20

type balanceCursor struct {
	Block uint64 `json:"block"`
}

var erc20Transfer = common.HexToHash("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")

// FollowBalancesOnce runs one pass of the balance follower (Follow runs it every FollowEvery);
// tests drive it directly.
func (d *Deps) FollowBalancesOnce(ctx context.Context) int { return d.followBalances(ctx) }

// followBalances runs one pass over every eip155 network with a provider.
func (d *Deps) followBalances(ctx context.Context) int {
	var endpoints []store.Ref
	if err := d.Store.View(ctx, func(r store.Reader) (err error) {
		endpoints, err = r.Lookup(ctx, webhooks.KeyBalanceEndpoint, "1")
		return err
	}); err != nil {
		return 0
	}
	subscribed := len(endpoints) > 0
	n := 0
	for caip2, c := range d.Providers {
		if isSolana(caip2) {
			if !subscribed {
				continue
			}
			for _, cm := range []struct{ commitment, event, typ string }{
				{"confirmed", webhooks.EventBalanceConfirmed, "balances:confirmed"},
				{"finalized", webhooks.EventBalanceFinalized, "balances:finalized"},
			} {
				got, err := d.followSolana(ctx, caip2, c, cm.commitment, cm.event, cm.typ)
				if err != nil && d.Log != nil {
					d.Log.Warn(
						"chaindata: following balances",
						"network",
						caip2,
						"commitment",
						cm.commitment,
						"err",
						err,
					)
				}
				n += got
			}
			continue
		}
		if _, ok := evmChainID(caip2); !ok {
			continue
		}
		for _, tag := range []struct{ tag, event, typ string }{
			{"latest", webhooks.EventBalanceConfirmed, "balances:confirmed"},
			{"finalized", webhooks.EventBalanceFinalized, "balances:finalized"},
		} {
			got, err := d.followTag(ctx, caip2, c, tag.tag, tag.event, tag.typ, subscribed)
			if err != nil && d.Log != nil {
				d.Log.Warn("chaindata: following balances", "network", caip2, "tag", tag.tag, "err", err)
			}
			n += got
		}
	}
	return n
}

type rpcCaller interface {
	Call(ctx context.Context, method string, params []any, out any) error
}

type evmBlock struct {
	Number       hexutil.Uint64 `json:"number"`
	Hash         string         `json:"hash"`
	ParentHash   string         `json:"parentHash"`
	Timestamp    hexutil.Uint64 `json:"timestamp"`
	Transactions []struct {
		Hash  string       `json:"hash"`
		From  string       `json:"from"`
		To    *string      `json:"to"`
		Value *hexutil.Big `json:"value"`
	} `json:"transactions"`
}

// balanceMove is one balance change of one address.
type balanceMove struct {
	address, operation, txHash, amount string
	asset                              Asset
}

// followTag walks caip2's blocks at tag: each block goes to the history index and, while an
// endpoint subscribes (subscribed), to the balance deliveries.
func (d *Deps) followTag(
	ctx context.Context,
	caip2 string,
	c rpcCaller,
	tag, event, typ string,
	subscribed bool,
) (int, error) {
	var head struct {
		Number hexutil.Uint64 `json:"number"`
	}
	if err := c.Call(ctx, "eth_getBlockByNumber", []any{tag, false}, &head); err != nil {
		return 0, err
	}
	var batch *historyBatch
	return d.advanceIndexed(
		ctx,
		caip2,
		caip2+"/"+tag,
		uint64(head.Number),
		event,
		typ,
		func(b uint64) ([]balanceMove, *evmBlock, error) {
			block, logs, err := readBlock(ctx, c, b)
			if err != nil {
				return nil, nil, err
			}
			if batch, err = d.historyOf(ctx, caip2, c, block, logs, tag == "finalized"); err != nil {
				return nil, nil, err
			}
			if !subscribed {
				return nil, block, nil
			}
			return d.blockMoves(caip2, block, logs), block, nil
		},
		func(tx store.Tx, now time.Time) error { return batch.write(ctx, tx, now) },
	)
}

// advance reports the blocks (or slots) after the cursor up to head, at most maxBlocksPerPass,
// each in the transaction that moves the cursor past it; read returns a block's moves. A
// cursor seen for the first time starts at head: what happened before is not news.
func (d *Deps) advance(ctx context.Context, caip2, cursorID string, head uint64, event, typ string,
	read func(b uint64) ([]balanceMove, *evmBlock, error)) (int, error) {
	return d.advanceIndexed(ctx, caip2, cursorID, head, event, typ, read, nil)
}

// advanceIndexed is advance where index (when not nil) writes what else the block read last
// adds, in the transaction that moves the cursor past it.
func (d *Deps) advanceIndexed(ctx context.Context, caip2, cursorID string, head uint64, event, typ string,
	read func(b uint64) ([]balanceMove, *evmBlock, error), index func(store.Tx, time.Time) error) (int, error) {
	var cur *balanceCursor
	if err := d.Store.View(ctx, func(r store.Reader) (err error) {
		cur, err = records.Load[balanceCursor](ctx, r, KindBalanceCursor, "", cursorID, "cursor")
		return err
	}); err != nil {
		return 0, d.Store.Update(ctx, func(tx store.Tx) error {
			if _, err := records.Load[balanceCursor](ctx, tx, KindBalanceCursor, "", cursorID, "cursor"); err == nil {
				return nil
			}
			now := time.Now().UTC()
			return records.Save(ctx, tx, KindBalanceCursor, cursorID, "", now, now, balanceCursor{Block: head})
		})
	}
	sent := 0
	for b := cur.Block + 1; b <= head && b <= cur.Block+maxBlocksPerPass; b++ {
		moves, block, err := read(b)
		if err != nil {
			return sent, err
		}
		err = d.Store.Update(ctx, func(tx store.Tx) error {
			now := time.Now().UTC()
			at, err := records.Load[balanceCursor](ctx, tx, KindBalanceCursor, "", cursorID, "cursor")
			if err != nil || at.Block >= b {
				return err // another process reported this block
			}
			for _, m := range moves {
				if err := d.balanceEvent(ctx, tx, caip2, event, typ, m, block, now); err != nil {
					return err
				}
			}
			if index != nil {
				if err := index(tx, now); err != nil {
					return err
				}
			}
			return records.Save(ctx, tx, KindBalanceCursor, cursorID, "", now, now, balanceCursor{Block: b})
		})
		if err != nil {
			return sent, err
		}
		sent += len(moves)
	}
	return sent, nil
}

// readBlock reads block b with its transactions and every ERC-20 (and ERC-721) Transfer log it
// holds, whatever the token contract: the history index wants them all, the balance deliveries
// the catalog's. Both answers are bounded by the provider client's response size limit.
func readBlock(ctx context.Context, c rpcCaller, b uint64) (*evmBlock, []transferLog, error) {
	var block evmBlock
	if err := c.Call(ctx, "eth_getBlockByNumber", []any{hexutil.EncodeUint64(b), true}, &block); err != nil {
		return nil, nil, err
	}
	if uint64(block.Number) != b {
		return nil, nil, fmt.Errorf("the node answered block %d for block %d", uint64(block.Number), b)
	}
	var logs []transferLog
	q := map[string]any{"blockHash": block.Hash, "topics": []any{erc20Transfer.Hex()}}
	if err := c.Call(ctx, "eth_getLogs", []any{q}, &logs); err != nil {
		return nil, nil, err
	}
	return &block, logs, nil
}

// blockMoves returns block's native transfers and the catalog's ERC-20 Transfer logs as
// balance moves.
func (d *Deps) blockMoves(caip2 string, block *evmBlock, logs []transferLog) []balanceMove {
	native := d.nativeAsset(caip2)
	tokens := map[string]Asset{}
	for _, a := range d.Catalog[caip2] {
		if strings.Contains(a.Caip19, "/erc20:") {
			tokens[strings.ToLower(a.Caip19[strings.Index(a.Caip19, "/erc20:")+len("/erc20:"):])] = a
		}
	}
	var moves []balanceMove
	for _, t := range block.Transactions {
		if t.Value == nil || t.Value.ToInt().Sign() == 0 || t.To == nil || native.Caip19 == "" {
			continue
		}
		amount := t.Value.ToInt().String()
		moves = append(
			moves,
			balanceMove{address: *t.To, operation: "deposit", txHash: t.Hash, asset: native, amount: amount},
			balanceMove{address: t.From, operation: "withdraw", txHash: t.Hash, asset: native, amount: amount},
		)
	}
	for _, l := range logs {
		a, ok := tokens[strings.ToLower(l.Address)]
		if !ok || len(l.Topics) != 3 {
			continue
		}
		raw, err := hexutil.Decode(l.Data)
		if err != nil {
			continue
		}
		amount := new(big.Int).SetBytes(raw).String()
		from, to := common.HexToAddress(l.Topics[1]).Hex(), common.HexToAddress(l.Topics[2]).Hex()
		moves = append(
			moves,
			balanceMove{address: to, operation: "deposit", txHash: l.TxHash, asset: a, amount: amount},
			balanceMove{address: from, operation: "withdraw", txHash: l.TxHash, asset: a, amount: amount},
		)
	}
	return moves
}

// balanceEvent queues a move's delivery when its address is a wallet account (not a private
// key: as at Turnkey), for the endpoints of the account's top-level organization.
func (d *Deps) balanceEvent(
	ctx context.Context,
	tx store.Tx,
	caip2, event, typ string,
	m balanceMove,
	block *evmBlock,
	now time.Time,
) error {
	addr := address.Normalize(m.address)
	refs, err := tx.Lookup(ctx, wallets.KeyAccountAddress, addr)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if ref.Kind != wallets.KindAccount {
			continue
		}
		org, err := directory.LoadOrganization(ctx, tx, ref.OrgID)
		if err != nil {
			return err
		}
		billing := org
		if org.ParentID != "" {
			if billing, err = directory.LoadOrganization(ctx, tx, org.ParentID); err != nil {
				return err
			}
		}
		body, err := json.Marshal(
			map[string]any{"type": typ, "organizationId": org.ID, "parentOrganizationId": billing.ID,
				"msg": map[string]any{"operation": m.operation, "caip2": caip2, "txHash": m.txHash, "address": addr,
					"idempotencyKey": strings.Join(
						[]string{typ, caip2, m.txHash, addr, m.operation, m.asset.Caip19},
						":",
					),
					"asset": map[string]string{
						"symbol":   m.asset.Symbol,
						"name":     m.asset.Name,
						"decimals": strconv.Itoa(int(m.asset.Decimals)),
						"caip19":   m.asset.Caip19,
						"amount":   m.amount,
					},
					"block": map[string]string{
						"number":    strconv.FormatUint(uint64(block.Number), 10),
						"hash":      block.Hash,
						"timestamp": strconv.FormatUint(uint64(block.Timestamp), 10),
					}}},
		)
		if err != nil {
			return err
		}
		if err := webhooks.EnqueueEvent(ctx, tx, billing, event, now, body); err != nil {
			return err
		}
	}
	return nil
}
