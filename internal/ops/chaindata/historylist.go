package chaindata

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"github.com/latchkey/latchkey/internal/activity"
	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/ops/organizations"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/store"
	"github.com/latchkey/latchkey/internal/wire"
)

// list_eth_transaction_history: one page of an address's indexed items (history.go), most recent
// first. A page's cursors name its first and last items; each is the item's id with an HMAC
// (keyed by the keyring, custody.Keyring.MAC) over the organization, the network, the address and
// the id, so a cursor cannot be forged, nor used for another address, network or organization.
// "after" pages on to older items, "before" back to newer ones.

// maxCursor bounds a cursor's length before it is decoded.
const maxCursor = 256

func historyCursorMAC(q *activity.Read, caip2, addr, id string) []byte {
	return q.Services.Keyring.MAC("history_cursor", []byte(q.OrgID+"\x00"+caip2+"\x00"+addr+"\x00"+id))
}

func makeHistoryCursor(q *activity.Read, caip2, addr, id string) string {
	return base64.RawURLEncoding.EncodeToString(
		[]byte(id + "." + hex.EncodeToString(historyCursorMAC(q, caip2, addr, id))),
	)
}

// readHistoryCursor returns the item id a cursor names, or a 400 naming field when the cursor
// was not made by this server for this organization, network and address.
func readHistoryCursor(q *activity.Read, field, caip2, addr, cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	bad := apierr.Invalid(field, "is not a cursor of this address's history on %s", caip2)
	if len(cursor) > maxCursor {
		return "", bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", bad
	}
	i := strings.LastIndexByte(string(raw), '.')
	if i < 0 {
		return "", bad
	}
	id := string(raw[:i])
	mac, err := hex.DecodeString(string(raw[i+1:]))
	if err != nil || !hmac.Equal(mac, historyCursorMAC(q, caip2, addr, id)) {
		return "", bad
	}
	return id, nil
}

func (d *Deps) listHistory(q *activity.Read, in *wire.ListEthTransactionHistoryRequest) (any, error) {
	n, err := checkNetwork("caip2", in.Caip2, true)
	if err != nil {
		return nil, err
	}
	if _, ok := evmChainID(n); !ok {
		return nil, apierr.Invalid("caip2", "list_eth_transaction_history serves eip155 networks; %s is not one", n)
	}
	addr, err := walletAddress(q, "address", in.Address)
	if err != nil {
		return nil, err
	}
	if err := checkAddressFor("address", n, addr); err != nil {
		return nil, err
	}
	if _, err := d.provider(n); err != nil {
		return nil, err
	}
	opts, err := organizations.ListOptions(in.PaginationOptions, "paginationOptions", true)
	if err != nil {
		return nil, err
	}
	if opts.After, err = readHistoryCursor(q, "paginationOptions.after", n, addr, opts.After); err != nil {
		return nil, err
	}
	if opts.Before, err = readHistoryCursor(q, "paginationOptions.before", n, addr, opts.Before); err != nil {
		return nil, err
	}
	limit := opts.Limit
	opts.Limit++ // one more than the page tells whether there is more in the direction read
	opts.Key = store.Key{Name: keyHistoryAddress, Value: n + " " + addr}
	items, err := records.List[historyItem](q.Ctx, q.R, KindHistory, q.OrgID, opts)
	if err != nil {
		return nil, err
	}
	backward := opts.Before != ""
	more := len(items) > limit
	if more && backward {
		items = items[len(items)-limit:]
	} else if more {
		items = items[:limit]
	}
	hasNext, hasPrev := more, opts.After != ""
	if backward {
		hasNext, hasPrev = true, more
	}
	out := wire.ListEthTransactionHistoryResponse{Transactions: make([]wire.EthTransactionHistoryItem, 0, len(items)),
		PageInfo: &wire.PageInfo{HasNextPage: &hasNext, HasPreviousPage: &hasPrev}}
	for _, it := range items {
		out.Transactions = append(out.Transactions, d.historyDisplay(it.Item))
	}
	if len(items) > 0 {
		first, last := items[0], items[len(items)-1]
		out.PageInfo.StartCursor = makeHistoryCursor(
			q,
			n,
			addr,
			historyID(first.OrgID, n, addr, first.Block, first.Index),
		)
		out.PageInfo.EndCursor = makeHistoryCursor(q, n, addr, historyID(last.OrgID, n, addr, last.Block, last.Index))
	}
	return out, nil
}

// historyDisplay adds the transfers' display values (whole units, and USD with a price file), as
// balances have them, computed when read.
func (d *Deps) historyDisplay(item wire.EthTransactionHistoryItem) wire.EthTransactionHistoryItem {
	for i, t := range item.Transfers {
		if t.Asset == nil || t.Asset.Symbol == "" {
			continue
		}
		dec := t.Asset.Decimals
		b := d.withDisplay(wire.AssetBalance{Caip19: t.Asset.Caip19, Balance: t.Amount, Decimals: &dec})
		if b.Display != nil {
			item.Transfers[i].Display = &wire.TransactionHistoryDisplay{Crypto: b.Display.Crypto, Usd: b.Display.Usd}
		}
	}
	return item
}
