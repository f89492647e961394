package chaindata

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/latchkey/latchkey/internal/chain/rpc"
)

// Balance updates on Solana networks: the follower reads each new slot at the "confirmed" and
// "finalized" commitments (getSlot, then getBlock with full transaction details) and derives the
// balance changes of wallet account addresses from each transaction's pre/post lamport balances
// (native SOL) and pre/post token balances by owner (the asset list's SPL mints). Like the EVM
// follower, a slot is reported in the transaction that advances the network's cursor.

type solBlock struct {
	Blockhash    string `json:"blockhash"`
	BlockTime    *int64 `json:"blockTime"`
	Transactions []struct {
		Meta *struct {
			Err               json.RawMessage `json:"err"`
			PreBalances       []uint64        `json:"preBalances"`
			PostBalances      []uint64        `json:"postBalances"`
			PreTokenBalances  []solTokenBal   `json:"preTokenBalances"`
			PostTokenBalances []solTokenBal   `json:"postTokenBalances"`
			LoadedAddresses   *struct {
				Writable []string `json:"writable"`
				Readonly []string `json:"readonly"`
			} `json:"loadedAddresses"`
		} `json:"meta"`
		Transaction struct {
			Signatures []string `json:"signatures"`
			Message    struct {
				AccountKeys []string `json:"accountKeys"`
			} `json:"message"`
		} `json:"transaction"`
	} `json:"transactions"`
}

type solTokenBal struct {
	AccountIndex  int    `json:"accountIndex"`
	Mint          string `json:"mint"`
	Owner         string `json:"owner"`
	UITokenAmount struct {
		Amount   string `json:"amount"`
		Decimals int32  `json:"decimals"`
	} `json:"uiTokenAmount"`
}

// ownerMint names one owner's balance of one SPL mint.
type ownerMint struct{ owner, mint string }

// tokenDeltas is the change of each (owner, mint) balance between a transaction's pre- and
// post-token balances, for the mints keep accepts, with each mint's decimals. Amounts that are
// not decimal integers of at most 40 digits (a u64 has 20) are skipped.
func tokenDeltas(pre, post []solTokenBal, keep func(mint string) bool) (map[ownerMint]*big.Int, map[string]int32) {
	delta := map[ownerMint]*big.Int{}
	decimals := map[string]int32{}
	for _, side := range []struct {
		bals []solTokenBal
		sign int64
	}{{pre, -1}, {post, 1}} {
		for _, b := range side.bals {
			if b.Owner == "" || len(b.UITokenAmount.Amount) > 40 || !keep(b.Mint) {
				continue
			}
			v, ok := new(big.Int).SetString(b.UITokenAmount.Amount, 10)
			if !ok {
				continue
			}
			k := ownerMint{b.Owner, b.Mint}
			if delta[k] == nil {
				delta[k] = new(big.Int)
			}
			delta[k].Add(delta[k], v.Mul(v, big.NewInt(side.sign)))
			decimals[b.Mint] = b.UITokenAmount.Decimals
		}
	}
	return delta, decimals
}

func (d *Deps) followSolana(
	ctx context.Context,
	caip2 string,
	c rpcCaller,
	commitment, event, typ string,
) (int, error) {
	var slot uint64
	if err := c.Call(ctx, "getSlot", []any{map[string]string{"commitment": commitment}}, &slot); err != nil {
		return 0, err
	}
	return d.advance(
		ctx,
		caip2,
		caip2+"/"+commitment,
		slot,
		event,
		typ,
		func(s uint64) ([]balanceMove, *evmBlock, error) {
			var block *solBlock
			err := c.Call(
				ctx,
				"getBlock",
				[]any{s, map[string]any{"encoding": "json", "transactionDetails": "full", "rewards": false,
					"commitment": commitment, "maxSupportedTransactionVersion": 0}},
				&block,
			)
			var re *rpc.Error
			if errors.As(err, &re) && (re.Code == -32007 || re.Code == -32009) {
				block, err = nil, nil // a skipped slot, or one missing from long-term storage: nothing to report
			}
			if err != nil {
				return nil, nil, err
			}
			at := &evmBlock{Number: hexutil.Uint64(s)}
			if block != nil {
				at.Hash = block.Blockhash
				if block.BlockTime != nil {
					at.Timestamp = hexutil.Uint64(uint64(*block.BlockTime))
				}
			}
			return d.solanaMoves(caip2, block), at, nil
		},
	)
}

// solanaMoves derives the balance changes of one block: lamports per account, and token amounts
// per owner and mint (the asset list's mints only). Failed transactions still pay their fee.
func (d *Deps) solanaMoves(caip2 string, block *solBlock) []balanceMove {
	if block == nil {
		return nil
	}
	native, mints := d.solAssets(caip2)
	var moves []balanceMove
	add := func(addr, sig string, a Asset, diff *big.Int) {
		if diff.Sign() == 0 || a.Caip19 == "" {
			return
		}
		op := "deposit"
		if diff.Sign() < 0 {
			op = "withdraw"
		}
		moves = append(
			moves,
			balanceMove{address: addr, operation: op, txHash: sig, asset: a, amount: new(big.Int).Abs(diff).String()},
		)
	}
	for _, t := range block.Transactions {
		if t.Meta == nil || len(t.Transaction.Signatures) == 0 {
			continue
		}
		sig, keys, m := t.Transaction.Signatures[0], t.Transaction.Message.AccountKeys, t.Meta
		if m.LoadedAddresses != nil { // v0: balances cover the lookup tables' accounts after the static keys
			keys = append(
				append(append([]string{}, keys...), m.LoadedAddresses.Writable...),
				m.LoadedAddresses.Readonly...)
		}
		for i, k := range keys {
			if i < len(m.PreBalances) && i < len(m.PostBalances) {
				add(
					k,
					sig,
					native,
					new(
						big.Int,
					).Sub(new(big.Int).SetUint64(m.PostBalances[i]), new(big.Int).SetUint64(m.PreBalances[i])),
				)
			}
		}
		delta, _ := tokenDeltas(m.PreTokenBalances, m.PostTokenBalances, func(mint string) bool {
			_, ok := mints[mint]
			return ok
		})
		for k, v := range delta {
			add(k.owner, sig, mints[k.mint], v)
		}
	}
	return moves
}

// solAssets is the asset list's native coin and SPL mints of a Solana network.
func (d *Deps) solAssets(caip2 string) (native Asset, mints map[string]Asset) {
	mints = map[string]Asset{}
	for _, a := range d.Catalog[caip2] {
		switch {
		case strings.Contains(a.Caip19, "/slip44:"):
			native = a
		case strings.Contains(a.Caip19, "/token:"):
			mints[a.Caip19[strings.Index(a.Caip19, "/token:")+len("/token:"):]] = a
		}
	}
	return native, mints
}
