package chaindata

import (
	"context"
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/latchkey/latchkey/internal/chain/address"
	"github.com/latchkey/latchkey/internal/ops/wallets"
	"github.com/latchkey/latchkey/internal/store"
)

// MaxBackfillBlocks bounds the block range one backfill reads: each block costs two RPC calls
// (the block with its transactions, its Transfer logs) and one receipt per transaction of the
// address.
const MaxBackfillBlocks = 10_000

// Backfill indexes the history of one wallet account address over the blocks from..to of caip2
// (at most MaxBackfillBlocks), which the follower did not index because they came before the
// account or before the follower first read the network. Blocks at or below the node's
// "finalized" block are indexed FINALIZED, later ones CONFIRMED. Each block is written in its own
// store transaction, after its RPC calls; progress, when not nil, is told each block written.
// It returns the number of items written.
func (d *Deps) Backfill(
	ctx context.Context,
	caip2, addr string,
	from, to uint64,
	progress func(block uint64, items int),
) (int, error) {
	n := Canonical(caip2)
	if _, ok := evmChainID(n); !ok {
		return 0, fmt.Errorf("--caip2 %s: the history index serves eip155 networks", caip2)
	}
	c := d.Providers[n]
	if c == nil {
		return 0, fmt.Errorf("no RPC provider is given for %s (--chain-rpc %s=URL)", n, n)
	}
	if err := checkAddressFor("address", n, addr); err != nil {
		return 0, fmt.Errorf("--address %s: not an Ethereum address", addr)
	}
	if to < from {
		return 0, fmt.Errorf("--to-block %d is before --from-block %d", to, from)
	}
	if to-from >= MaxBackfillBlocks {
		return 0, fmt.Errorf("blocks %d..%d are %d blocks; one backfill reads at most %d (run several ranges)",
			from, to, to-from+1, MaxBackfillBlocks)
	}
	addr = address.Normalize(addr)
	var accounts int
	if err := d.Store.View(ctx, func(r store.Reader) error {
		refs, err := r.Lookup(ctx, wallets.KeyAccountAddress, addr)
		for _, ref := range refs {
			if ref.Kind == wallets.KindAccount {
				accounts++
			}
		}
		return err
	}); err != nil {
		return 0, err
	}
	if accounts == 0 {
		return 0, fmt.Errorf("--address %s is not a wallet account address of any organization", addr)
	}
	var fin struct {
		Number hexutil.Uint64 `json:"number"`
	}
	if err := c.Call(ctx, "eth_getBlockByNumber", []any{"finalized", false}, &fin); err != nil {
		return 0, err
	}
	written := 0
	for b := from; b <= to; b++ {
		block, logs, err := readBlock(ctx, c, b)
		if err != nil {
			return written, fmt.Errorf("block %d: %w", b, err)
		}
		hb, err := d.historyOf(ctx, n, c, block, logs, b <= uint64(fin.Number))
		if err != nil {
			return written, fmt.Errorf("block %d: %w", b, err)
		}
		mine := hb.items[:0]
		for _, it := range hb.items {
			if it.Address == addr {
				mine = append(mine, it)
			}
		}
		hb.items = mine
		hb.parentHash = "" // a range's first parent is not read; the follower checks parents
		if err := d.Store.Update(ctx, func(tx store.Tx) error { return hb.write(ctx, tx, time.Now().UTC()) }); err != nil {
			return written, err
		}
		written += len(mine)
		if progress != nil {
			progress(b, len(mine))
		}
	}
	return written, nil
}
