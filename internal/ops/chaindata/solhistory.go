package chaindata

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/chain/solana"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// list_sol_transaction_history is read from the node on demand (docs/operations.md, "Solana
// transaction history"): one getSignaturesForAddress for the page, then one getTransaction per
// signature (at most solHistoryMaxPage, a few at a time). Latchkey keeps no Solana index.

const (
	solHistoryDefaultPage = 10
	// solHistoryMaxPage bounds a page: each item is one getTransaction call.
	solHistoryMaxPage = 25
	// solHistoryScan bounds the signatures read to page back towards newer transactions (before).
	solHistoryScan    = 1000
	solHistoryWorkers = 4
)

type solSigInfo struct {
	Signature          string          `json:"signature"`
	Slot               uint64          `json:"slot"`
	Err                json.RawMessage `json:"err"`
	BlockTime          *int64          `json:"blockTime"`
	ConfirmationStatus string          `json:"confirmationStatus"`
}

// solHistoryTx is getTransaction's answer (json encoding), the parts history reads.
type solHistoryTx struct {
	Slot      uint64 `json:"slot"`
	BlockTime *int64 `json:"blockTime"`
	Meta      *struct {
		Fee               uint64        `json:"fee"`
		PreBalances       []uint64      `json:"preBalances"`
		PostBalances      []uint64      `json:"postBalances"`
		PreTokenBalances  []solTokenBal `json:"preTokenBalances"`
		PostTokenBalances []solTokenBal `json:"postTokenBalances"`
		LoadedAddresses   *struct {
			Writable []string `json:"writable"`
			Readonly []string `json:"readonly"`
		} `json:"loadedAddresses"`
	} `json:"meta"`
	Transaction struct {
		Message struct {
			Header struct {
				NumRequiredSignatures       int `json:"numRequiredSignatures"`
				NumReadonlySignedAccounts   int `json:"numReadonlySignedAccounts"`
				NumReadonlyUnsignedAccounts int `json:"numReadonlyUnsignedAccounts"`
			} `json:"header"`
			AccountKeys []string `json:"accountKeys"`
		} `json:"message"`
	} `json:"transaction"`
}

func (d *Deps) solHistory(q *activity.Read, in *wire.ListSolTransactionHistoryRequest) (any, error) {
	n, err := checkNetwork("caip2", in.Caip2, true)
	if err != nil {
		return nil, err
	}
	if !isSolana(n) {
		return nil, apierr.Invalid("caip2", "%s is not a Solana network", in.Caip2)
	}
	addr, err := walletAddress(q, "address", in.Address)
	if err != nil {
		return nil, err
	}
	if err := checkAddressFor("address", n, addr); err != nil {
		return nil, err
	}
	limit := solHistoryDefaultPage
	var older, newer string
	if p := in.PaginationOptions; p != nil {
		if p.Limit != "" {
			if limit, err = strconv.Atoi(p.Limit); err != nil || limit < 1 || limit > 100 {
				return nil, apierr.Invalid("paginationOptions.limit", "between 1 and 100")
			}
			limit = min(limit, solHistoryMaxPage)
		}
		if p.Before != "" && p.After != "" {
			return nil, apierr.Invalid("paginationOptions.after", "give after or before, not both")
		}
		// As for list_eth_transaction_history (historylist.go): "after" (an endCursor) pages on to
		// older transactions, "before" (a startCursor) back to newer ones.
		if older, err = readHistoryCursor(q, "paginationOptions.after", n, addr, p.After); err != nil {
			return nil, err
		}
		if newer, err = readHistoryCursor(q, "paginationOptions.before", n, addr, p.Before); err != nil {
			return nil, err
		}
	}
	c, err := d.provider(n)
	if err != nil {
		return nil, err
	}
	opts := map[string]any{"commitment": "confirmed", "limit": limit + 1}
	if older != "" {
		opts["before"] = older
	}
	if newer != "" {
		opts["until"], opts["limit"] = newer, solHistoryScan
	}
	var sigs []solSigInfo
	if err := c.Call(q.Ctx, "getSignaturesForAddress", []any{addr, opts}, &sigs); err != nil {
		return nil, rpcError(err)
	}
	hasNext, hasPrev := false, older != ""
	if newer != "" {
		hasNext = true // the cursor's own transaction is older
		if len(sigs) > limit {
			hasPrev, sigs = true, sigs[len(sigs)-limit:]
		}
	} else if len(sigs) > limit {
		hasNext, sigs = true, sigs[:limit]
	}
	items, err := d.solHistoryItems(q.Ctx, q, c, n, addr, sigs)
	if err != nil {
		return nil, err
	}
	out := wire.ListSolTransactionHistoryResponse{Transactions: items,
		PageInfo: &wire.PageInfo{HasNextPage: &hasNext, HasPreviousPage: &hasPrev}}
	if len(sigs) > 0 {
		out.PageInfo.StartCursor = makeHistoryCursor(q, n, addr, sigs[0].Signature)
		out.PageInfo.EndCursor = makeHistoryCursor(q, n, addr, sigs[len(sigs)-1].Signature)
	}
	return out, nil
}

// solHistoryItems reads each signature's transaction, a few at a time, and builds the items in
// the signatures' order (newest first).
func (d *Deps) solHistoryItems(
	ctx context.Context,
	q *activity.Read,
	c rpcCaller,
	caip2, addr string,
	sigs []solSigInfo,
) ([]wire.SolTransactionHistoryItem, error) {
	txs := make([]*solHistoryTx, len(sigs))
	errs := make([]error, len(sigs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(solHistoryWorkers, len(sigs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = c.Call(ctx, "getTransaction", []any{sigs[i].Signature, map[string]any{"encoding": "json",
					"commitment": "confirmed", "maxSupportedTransactionVersion": 0}}, &txs[i])
			}
		}()
	}
	for i := range sigs {
		next <- i
	}
	close(next)
	wg.Wait()
	items := make([]wire.SolTransactionHistoryItem, 0, len(sigs))
	for i, s := range sigs {
		if errs[i] != nil {
			return nil, rpcError(errs[i])
		}
		if txs[i] == nil || txs[i].Meta == nil {
			continue // not served by this node (yet): the next page's cursor still holds
		}
		it, err := d.solHistoryItem(q, caip2, addr, s, txs[i])
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// solHistoryItem is one transaction as the address saw it: SOL moved (its balance change, the
// fee left out when it paid it) and each token's change by owner.
func (d *Deps) solHistoryItem(
	q *activity.Read,
	caip2, addr string,
	s solSigInfo,
	t *solHistoryTx,
) (wire.SolTransactionHistoryItem, error) {
	it, err := d.solHistoryBase(caip2, addr, s, t)
	if err != nil {
		return it, err
	}
	// Latchkey's own sends.
	ids, err := records.LookupIDs(q.Ctx, q.R, keySendTxn, s.Signature, KindSend, q.OrgID)
	if err != nil || len(ids) == 0 {
		return it, err
	}
	send, err := records.Load[Send](q.Ctx, q.R, KindSend, q.OrgID, ids[0], "send")
	if err != nil {
		return it, err
	}
	sp, err := records.LookupIDs(q.Ctx, q.R, keySolSponsoredSig, s.Signature, KindSolSponsored, q.OrgID)
	if err != nil {
		return it, err
	}
	it.Origin = "TURNKEY"
	it.Turnkey = &wire.TransactionHistoryTurnkey{Sponsored: len(sp) > 0,
		SubmittedAt: send.CreatedAt.UTC().Format(time.RFC3339)}
	if send.ActivityID != "" {
		a, err := q.R.GetActivity(q.Ctx, send.ActivityID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return it, err
		}
		it.Turnkey.ActivityFingerprint = a.Fingerprint
	}
	return it, nil
}

// solHistoryBase reads the node's answer for one transaction. The answer is untrusted: a
// transaction has at most solana.MaxAccounts accounts, so an answer listing more is refused, and
// the work is then bounded (at most MaxAccounts² steps finding counterparties).
func (d *Deps) solHistoryBase(
	caip2, addr string,
	s solSigInfo,
	t *solHistoryTx,
) (wire.SolTransactionHistoryItem, error) {
	m, msg := t.Meta, t.Transaction.Message
	n := len(msg.AccountKeys)
	if m.LoadedAddresses != nil {
		n += len(m.LoadedAddresses.Writable) + len(m.LoadedAddresses.Readonly)
	}
	if n > solana.MaxAccounts || len(m.PreBalances) > solana.MaxAccounts || len(m.PostBalances) > solana.MaxAccounts ||
		len(m.PreTokenBalances) > solana.MaxAccounts || len(m.PostTokenBalances) > solana.MaxAccounts {
		return wire.SolTransactionHistoryItem{}, apierr.New(apierr.FailedPrecondition, "CHAIN_RPC_ERROR",
			"the node's getTransaction for %s lists more accounts than a transaction can have", s.Signature)
	}
	native, mints := d.solAssets(caip2)
	if native.Caip19 == "" {
		native = Asset{Caip19: caip2 + "/slip44:501", Symbol: "SOL", Name: "Solana", Decimals: 9}
	}
	it := wire.SolTransactionHistoryItem{
		Signature: s.Signature,
		Block:     wire.TransactionHistoryBlock{Number: strconv.FormatUint(t.Slot, 10)},
		Status:    "CONFIRMED",
		Origin:    "EXTERNAL",
		Signers:   []wire.SolTransactionHistorySigner{},
		Fee:       wire.TransactionHistoryFee{Amount: strconv.FormatUint(m.Fee, 10), Caip19: native.Caip19},
		Transfers: []wire.TransactionHistoryTransfer{},
	}
	if s.ConfirmationStatus == "finalized" {
		it.Status = "FINALIZED"
	}
	if bt := t.BlockTime; bt != nil {
		it.Block.Timestamp = time.Unix(*bt, 0).UTC().Format(time.RFC3339)
	}
	keys := msg.AccountKeys
	if len(keys) > 0 {
		it.FeePayer = keys[0]
	}
	h := msg.Header
	for i := 0; i < h.NumRequiredSignatures && i < len(keys); i++ {
		it.Signers = append(it.Signers, wire.SolTransactionHistorySigner{Address: keys[i],
			Writable: i < h.NumRequiredSignatures-h.NumReadonlySignedAccounts})
	}
	if m.LoadedAddresses != nil {
		keys = append(append(append([]string{}, keys...), m.LoadedAddresses.Writable...), m.LoadedAddresses.Readonly...)
	}
	// SOL: the address's change, and the counterparty the largest change the other way.
	deltas := make([]*big.Int, len(keys))
	for i := range keys {
		if i < len(m.PreBalances) && i < len(m.PostBalances) {
			deltas[i] = new(
				big.Int,
			).Sub(new(big.Int).SetUint64(m.PostBalances[i]), new(big.Int).SetUint64(m.PreBalances[i]))
			if i == 0 {
				deltas[i].Add(deltas[i], new(big.Int).SetUint64(m.Fee))
			}
		}
	}
	for i, k := range keys {
		if k == addr && deltas[i] != nil && deltas[i].Sign() != 0 {
			cp := ""
			var best *big.Int
			for j, o := range deltas {
				if j != i && o != nil && o.Sign() == -deltas[i].Sign() && (best == nil || o.CmpAbs(best) > 0) {
					cp, best = keys[j], o
				}
			}
			it.Transfers = append(it.Transfers, d.historyTransfer(native, deltas[i], cp))
		}
	}
	// Tokens: the change per (owner, mint).
	tok, decimals := tokenDeltas(m.PreTokenBalances, m.PostTokenBalances, func(string) bool { return true })
	var mintsSeen []string
	for k, v := range tok {
		if k.owner == addr && v.Sign() != 0 {
			mintsSeen = append(mintsSeen, k.mint)
		}
	}
	sort.Strings(mintsSeen)
	for _, mint := range mintsSeen {
		v := tok[ownerMint{addr, mint}]
		cp := ""
		var best *big.Int
		for k, o := range tok {
			if k.mint == mint && k.owner != addr && o.Sign() == -v.Sign() &&
				(best == nil || o.CmpAbs(best) > 0 || (o.CmpAbs(best) == 0 && k.owner < cp)) {
				cp, best = k.owner, o
			}
		}
		a, ok := mints[mint]
		if !ok {
			a = Asset{Caip19: caip2 + "/token:" + mint, Name: mint, Decimals: decimals[mint]}
		}
		it.Transfers = append(it.Transfers, d.historyTransfer(a, v, cp))
	}
	return it, nil
}

func (d *Deps) historyTransfer(a Asset, delta *big.Int, counterparty string) wire.TransactionHistoryTransfer {
	dir := "IN"
	if delta.Sign() < 0 {
		dir = "OUT"
	}
	amount := new(big.Int).Abs(delta).String()
	t := wire.TransactionHistoryTransfer{
		Direction: dir,
		Asset: &wire.TransactionHistoryAsset{
			Caip19:   a.Caip19,
			Symbol:   a.Symbol,
			Name:     a.Name,
			Decimals: a.Decimals,
		},
		Amount:       amount,
		Counterparty: counterparty,
	}
	if a.Decimals >= 0 && a.Decimals <= 36 { // an unlisted mint's decimals come from the node
		b := d.withDisplay(wire.AssetBalance{Caip19: a.Caip19, Balance: amount, Decimals: &a.Decimals})
		if b.Display != nil {
			t.Display = &wire.TransactionHistoryDisplay{Crypto: b.Display.Crypto, Usd: b.Display.Usd}
		}
	}
	return t
}
