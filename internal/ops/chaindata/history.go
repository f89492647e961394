package chaindata

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/ops/wallets"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// Transaction history (list_eth_transaction_history) on the eip155 networks that have a
// provider. The balance follower's block walk (balancefollow.go) hands every block it reads at
// the "latest" and "finalized" tags to the index here, whether or not a webhook subscribes:
// each transaction sent by or to a wallet account address (native value or not, contract
// creations included) and each ERC-20 Transfer log (any token contract) from or to one becomes
// one item per (organization, network, address, transaction), written in the transaction that
// moves the follower's cursor past the block. An item is CONFIRMED when its block is first read
// at "latest" and FINALIZED once the "finalized" tag passes it; an item whose block hash is no
// longer the canonical one at its height is deleted (reorgs), when the next block's parent hash
// or the finalized block says so. A transaction Latchkey sent (a send_transaction record) carries
// the activity that sent it in its "turnkey" member.
//
// The index starts when the follower first reads a network (its cursor starts at the head) and
// an account is indexed from the time it exists in Latchkey: earlier history is not there unless
// the operator backfills a bounded block range (Backfill, `latchkey history backfill`).

// KindHistory is one indexed transaction of one wallet account address.
const KindHistory = "tx_history"

const (
	// keyHistoryAddress lists an address's items: "caip2 address".
	keyHistoryAddress = "tx_history.address"
	// keyHistoryBlock finds the items of one block height: "caip2 number".
	keyHistoryBlock = "tx_history.block"
)

// Bounds on what one item and one block may hold, so a hostile or huge block cannot make an
// item or a page unbounded.
const (
	maxTransfersPerItem = 64
	// maxHistoryTxsPerBlock bounds the receipts one block may cost (transactions touching a
	// wallet account address); a block with more is indexed up to the bound and says so in the log.
	maxHistoryTxsPerBlock = 512
)

// historyItem is the stored item: the wire item plus where it sits.
type historyItem struct {
	OrgID   string                         `json:"orgId"`
	Caip2   string                         `json:"caip2"`
	Address string                         `json:"address"`
	Block   uint64                         `json:"block"`
	Index   uint64                         `json:"index"`
	Item    wire.EthTransactionHistoryItem `json:"item"`
}

func historyID(orgID, caip2, addr string, block, index uint64) string {
	h := sha256.Sum256([]byte(orgID + "\x00" + caip2 + "\x00" + addr))
	return fmt.Sprintf("%012d.%06d.%s", block, index, hex.EncodeToString(h[:12]))
}

func (h *historyItem) keys() []store.Key {
	return []store.Key{
		{Name: keyHistoryAddress, Value: h.Caip2 + " " + h.Address},
		{Name: keyHistoryBlock, Value: h.Caip2 + " " + strconv.FormatUint(h.Block, 10)},
	}
}

// transferLog is an ERC-20 Transfer log as eth_getLogs answers it.
type transferLog struct {
	Address string   `json:"address"`
	Topics  []string `json:"topics"`
	Data    string   `json:"data"`
	TxHash  string   `json:"transactionHash"`
}

// erc20Move is a decoded ERC-20 Transfer: from, to (lower-case hex) and the amount.
type erc20Move struct {
	token, from, to, txHash string
	amount                  *big.Int
}

// parseTransfer decodes an ERC-20 Transfer log (three topics, a 32-byte amount); ERC-721
// Transfers (four topics) and malformed logs are not ERC-20 transfers.
func parseTransfer(l transferLog) (erc20Move, bool) {
	if len(l.Topics) != 3 || !strings.EqualFold(l.Topics[0], erc20Transfer.Hex()) {
		return erc20Move{}, false
	}
	raw, err := hexutil.Decode(l.Data)
	if err != nil || len(raw) != 32 {
		return erc20Move{}, false
	}
	var addrs [2]string
	for i, t := range l.Topics[1:] {
		b, err := hexutil.Decode(t)
		if err != nil || len(b) != 32 {
			return erc20Move{}, false
		}
		addrs[i] = strings.ToLower(common.BytesToAddress(b).Hex())
	}
	tok, err := hexutil.Decode(l.Address)
	if err != nil || len(tok) != 20 {
		return erc20Move{}, false
	}
	return erc20Move{token: strings.ToLower(l.Address), from: addrs[0], to: addrs[1], txHash: l.TxHash,
		amount: new(big.Int).SetBytes(raw)}, true
}

// historyBatch is what one block adds to the index: computed from RPC answers and store reads
// before the write transaction, written inside it.
type historyBatch struct {
	caip2      string
	final      bool
	number     uint64
	hash       string
	parentHash string
	items      []*historyItem
}

// receipt is the part of a receipt the index reads: the fee, and whether the transaction
// reverted (its value then did not move).
type receipt struct {
	Status            *hexutil.Uint64 `json:"status"` // absent before Byzantium
	GasUsed           *hexutil.Big    `json:"gasUsed"`
	EffectiveGasPrice *hexutil.Big    `json:"effectiveGasPrice"`
}

// historyOf builds block's history batch: it finds the transactions and Transfer logs that
// touch a wallet account address, asks the node for those transactions' receipts (the fee), and
// marks Latchkey's own sends. No store write happens here.
func (d *Deps) historyOf(
	ctx context.Context,
	caip2 string,
	c rpcCaller,
	block *evmBlock,
	logs []transferLog,
	final bool,
) (*historyBatch, error) {
	hb := &historyBatch{caip2: caip2, final: final, number: uint64(block.Number), hash: block.Hash,
		parentHash: block.ParentHash}
	var moves []erc20Move
	for _, l := range logs {
		if m, ok := parseTransfer(l); ok {
			moves = append(moves, m)
		}
	}
	type txInfo struct {
		index      int
		from, to   string
		value      *big.Int
		tokenMoves []erc20Move
	}
	txs := map[string]*txInfo{}
	for i, t := range block.Transactions {
		ti := &txInfo{index: i, from: strings.ToLower(t.From), value: new(big.Int)}
		if t.To != nil {
			ti.to = strings.ToLower(*t.To)
		}
		if t.Value != nil {
			ti.value = t.Value.ToInt()
		}
		txs[strings.ToLower(t.Hash)] = ti
	}
	for _, m := range moves {
		if ti := txs[strings.ToLower(m.txHash)]; ti != nil {
			ti.tokenMoves = append(ti.tokenMoves, m)
		}
	}
	// The wallet accounts (and their organizations) of every address the block touches.
	owners := map[string][]string{}
	if err := d.Store.View(ctx, func(r store.Reader) error {
		check := func(a string) error {
			if a == "" {
				return nil
			}
			if _, seen := owners[a]; seen {
				return nil
			}
			refs, err := r.Lookup(ctx, wallets.KeyAccountAddress, address.Normalize(a))
			if err != nil {
				return err
			}
			orgs := []string{}
			for _, ref := range refs {
				if ref.Kind == wallets.KindAccount && !slices.Contains(orgs, ref.OrgID) {
					orgs = append(orgs, ref.OrgID)
				}
			}
			owners[a] = orgs
			return nil
		}
		for _, t := range block.Transactions {
			ti := txs[strings.ToLower(t.Hash)]
			if err := check(ti.from); err != nil {
				return err
			}
			if err := check(ti.to); err != nil {
				return err
			}
			for _, m := range ti.tokenMoves {
				if err := check(m.from); err != nil {
					return err
				}
				if err := check(m.to); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	native := d.nativeAsset(caip2)
	count := 0
	for _, t := range block.Transactions {
		hash := strings.ToLower(t.Hash)
		ti := txs[hash]
		touched := map[string]bool{}
		for _, a := range []string{ti.from, ti.to} {
			if len(owners[a]) > 0 {
				touched[a] = true
			}
		}
		for _, m := range ti.tokenMoves {
			for _, a := range []string{m.from, m.to} {
				if len(owners[a]) > 0 {
					touched[a] = true
				}
			}
		}
		if len(touched) == 0 {
			continue
		}
		if count++; count > maxHistoryTxsPerBlock {
			if d.Log != nil {
				d.Log.Warn("chaindata: history: too many wallet transactions in one block; the rest are not indexed",
					"network", caip2, "block", uint64(block.Number), "max", maxHistoryTxsPerBlock)
			}
			break
		}
		var rc *receipt
		if err := c.Call(ctx, "eth_getTransactionReceipt", []any{t.Hash}, &rc); err != nil {
			return nil, err
		}
		if rc == nil || rc.GasUsed == nil || rc.EffectiveGasPrice == nil {
			// The node does not have it yet (still indexing): the block is read again next pass.
			return nil, fmt.Errorf("the node has no receipt for %s in block %d", t.Hash, uint64(block.Number))
		}
		fee := new(big.Int).Mul(rc.GasUsed.ToInt(), rc.EffectiveGasPrice.ToInt())
		reverted := rc.Status != nil && *rc.Status == 0
		for a := range touched {
			item := wire.EthTransactionHistoryItem{
				TransactionHash: t.Hash,
				Block: wire.TransactionHistoryBlock{
					Number:    strconv.FormatUint(uint64(block.Number), 10),
					Hash:      block.Hash,
					Timestamp: time.Unix(int64(block.Timestamp), 0).UTC().Format(time.RFC3339),
				},
				Origin:    "EXTERNAL",
				From:      ti.from,
				To:        ti.to,
				Fee:       wire.TransactionHistoryFee{Amount: fee.String(), Caip19: native.Caip19},
				Transfers: []wire.TransactionHistoryTransfer{},
			}
			if ti.value.Sign() > 0 && !reverted {
				nat := &wire.TransactionHistoryAsset{Caip19: native.Caip19, Symbol: native.Symbol, Name: native.Name,
					Decimals: int32(native.Decimals)}
				if native.Caip19 == "" {
					nat = nil
				}
				item.Transfers = appendTransfers(item.Transfers, a, ti.from, ti.to, ti.value, nat)
			}
			for _, m := range ti.tokenMoves {
				if len(item.Transfers) >= maxTransfersPerItem {
					break
				}
				item.Transfers = appendTransfers(
					item.Transfers,
					a,
					m.from,
					m.to,
					m.amount,
					d.tokenAsset(caip2, m.token),
				)
			}
			for _, org := range owners[a] {
				it := item
				it.Transfers = append([]wire.TransactionHistoryTransfer(nil), item.Transfers...)
				hb.items = append(hb.items, &historyItem{OrgID: org, Caip2: caip2, Address: a,
					Block: uint64(block.Number), Index: uint64(ti.index), Item: it})
			}
		}
	}
	return hb, d.markSends(ctx, hb)
}

// appendTransfers adds the transfer from→to of amount as seen by addr: OUT when addr sends it,
// IN when addr receives it (both, to itself).
func appendTransfers(
	ts []wire.TransactionHistoryTransfer,
	addr, from, to string,
	amount *big.Int,
	asset *wire.TransactionHistoryAsset,
) []wire.TransactionHistoryTransfer {
	if from == addr {
		ts = append(ts, wire.TransactionHistoryTransfer{Direction: "OUT", Asset: asset, Amount: amount.String(),
			Counterparty: to})
	}
	if to == addr {
		ts = append(ts, wire.TransactionHistoryTransfer{Direction: "IN", Asset: asset, Amount: amount.String(),
			Counterparty: from})
	}
	return ts
}

// nativeAsset is the catalog's native coin of caip2 (zero Asset when the catalog lists none).
func (d *Deps) nativeAsset(caip2 string) Asset {
	for _, a := range d.Catalog[caip2] {
		if strings.Contains(a.Caip19, "/slip44:") {
			return a
		}
	}
	return Asset{}
}

// tokenAsset describes the ERC-20 token contract of caip2: from the catalog when it lists the
// token, else by its CAIP-19 id alone (its name is the contract address; decimals 0: unknown).
func (d *Deps) tokenAsset(caip2, token string) *wire.TransactionHistoryAsset {
	for _, a := range d.Catalog[caip2] {
		if i := strings.Index(a.Caip19, "/erc20:"); i >= 0 && strings.EqualFold(a.Caip19[i+len("/erc20:"):], token) {
			return &wire.TransactionHistoryAsset{Caip19: a.Caip19, Symbol: a.Symbol, Name: a.Name,
				Decimals: int32(a.Decimals)}
		}
	}
	return &wire.TransactionHistoryAsset{Caip19: caip2 + "/erc20:" + token, Name: token}
}

// markSends marks the items of the transactions Latchkey sent for the same organization: origin
// TURNKEY, and the sending activity's fingerprint and time.
func (d *Deps) markSends(ctx context.Context, hb *historyBatch) error {
	if len(hb.items) == 0 {
		return nil
	}
	return d.Store.View(ctx, func(r store.Reader) error {
		for _, it := range hb.items {
			// EVM sends are recorded under the lower-case hash.
			sends, err := records.LookupAll[Send](ctx, r, keySendTxn, strings.ToLower(it.Item.TransactionHash),
				KindSend, it.OrgID)
			if err != nil {
				return err
			}
			if len(sends) == 0 || sends[0].Caip2 != hb.caip2 {
				continue
			}
			s := sends[0]
			tk := &wire.TransactionHistoryTurnkey{SubmittedAt: s.CreatedAt.UTC().Format(time.RFC3339),
				Sponsored: s.Sponsored}
			if s.ActivityID != "" {
				a, err := r.GetActivity(ctx, s.ActivityID)
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				tk.ActivityFingerprint = a.Fingerprint
			}
			it.Item.Origin = "TURNKEY"
			it.Item.Turnkey = tk
		}
		return nil
	})
}

// write stores the batch in tx: the items of block heights whose hash is no longer canonical go
// (this block's height, and its parent's when the parent hash differs), then the batch's items
// are written, CONFIRMED or FINALIZED (a FINALIZED item is never set back to CONFIRMED), in the
// order of their ids, so two processes writing one block's items (at the two tags) lock them in
// the same order.
func (hb *historyBatch) write(ctx context.Context, tx store.Tx, now time.Time) error {
	slices.SortFunc(hb.items, func(a, b *historyItem) int {
		return strings.Compare(historyID(a.OrgID, a.Caip2, a.Address, a.Block, a.Index),
			historyID(b.OrgID, b.Caip2, b.Address, b.Block, b.Index))
	})
	if err := dropStale(ctx, tx, hb.caip2, hb.number, hb.hash); err != nil {
		return err
	}
	if hb.number > 0 && hb.parentHash != "" {
		if err := dropStale(ctx, tx, hb.caip2, hb.number-1, hb.parentHash); err != nil {
			return err
		}
	}
	for _, it := range hb.items {
		// The account may have gone (with its organization) since the block was read.
		ids, err := records.LookupIDs(ctx, tx, wallets.KeyAccountAddress, it.Address, wallets.KindAccount, it.OrgID)
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			continue
		}
		id := historyID(it.OrgID, it.Caip2, it.Address, it.Block, it.Index)
		it.Item.Status = "CONFIRMED"
		if hb.final {
			it.Item.Status = "FINALIZED"
		} else if old, err := records.Load[historyItem](ctx, tx, KindHistory, "", id, "history item"); err == nil &&
			old.Item.Status == "FINALIZED" && strings.EqualFold(old.Item.Block.Hash, it.Item.Block.Hash) {
			continue
		}
		at, err := time.Parse(time.RFC3339, it.Item.Block.Timestamp)
		if err != nil {
			return err
		}
		if err := records.Save(ctx, tx, KindHistory, id, it.OrgID, at, now, it, it.keys()...); err != nil {
			return err
		}
	}
	return nil
}

// dropStale deletes the items indexed at height number of caip2 whose block hash is not hash.
func dropStale(ctx context.Context, tx store.Tx, caip2 string, number uint64, hash string) error {
	refs, err := tx.Lookup(ctx, keyHistoryBlock, caip2+" "+strconv.FormatUint(number, 10))
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if ref.Kind != KindHistory {
			continue
		}
		it, err := records.Load[historyItem](ctx, tx, KindHistory, "", ref.ID, "history item")
		if err != nil {
			continue
		}
		if !strings.EqualFold(it.Item.Block.Hash, hash) {
			if err := records.Delete(ctx, tx, KindHistory, ref.ID); err != nil {
				return err
			}
		}
	}
	return nil
}
