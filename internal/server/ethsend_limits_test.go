package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/latchkey/latchkey/internal/chain/ethereum"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// eth_send_transaction refuses data that would make its transaction larger than
// ethereum.MaxTransactionSize (the 128 KiB a node's pool takes) with a 400 on parameters.data:
// data over the limit before any call to the node (V1's data and V2's one call alike), and data
// that fits alone but not with the rest of the transaction once it is encoded, before anything
// is signed or broadcast. Data that fits is sent whole.
func TestEthSendTransactionDataBound(t *testing.T) {
	var sent []byte
	evm := newFakeNode(t, sendingNode(&sent))
	h := servertest.New(t, servertest.WithConfig(
		func(c *server.Config) { c.ChainRPC = map[string]string{"eip155:11155111": evm.srv.URL} }))
	root, _ := h.RootOrg("Acme")
	w := root.MustSubmit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts[:1]})
	from := w.Result("createWalletResult", "addresses", "0")
	const to = "0x000000000000000000000000000000000000dEaD"
	data := func(n int) string { return hexutil.Encode(make([]byte, n)) }
	v1 := func(d string) map[string]any {
		return map[string]any{"from": from, "to": to, "value": "0", "data": d, "caip2": "eip155:11155111",
			"sponsor": false}
	}
	v2 := func(d string) map[string]any {
		return map[string]any{"from": from, "caip2": "eip155:11155111", "sponsor": false,
			"calls": []any{map[string]any{"to": to, "value": "0", "data": d}}}
	}
	send := func(typ string, params map[string]any) servertest.Response {
		h.Advance(1)
		return root.Submit("eth_send_transaction", typ, params)
	}
	over := data(ethereum.MaxTransactionSize + 1)
	for _, tc := range []struct {
		name, typ string
		params    map[string]any
	}{
		{"V1 data", "ACTIVITY_TYPE_ETH_SEND_TRANSACTION", v1(over)},
		{"V2 call data", "ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2", v2(over)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := evm.calls.Load()
			r := send(tc.typ, tc.params)
			servertest.WantError(t, r, http.StatusBadRequest, 3, "parameters.data")
			if want := fmt.Sprintf("at most %d bytes", ethereum.MaxTransactionSize); !strings.Contains(
				r.Str("message"), want) {
				t.Errorf("message %q does not name %q", r.Str("message"), want)
			}
			if n := evm.calls.Load() - before; n != 0 {
				t.Errorf("the node was called %d times for data over the limit", n)
			}
		})
	}
	// Data that fits alone but not with the rest of the transaction: refused once encoded,
	// before anything is signed or broadcast.
	r := send("ACTIVITY_TYPE_ETH_SEND_TRANSACTION", v1(data(ethereum.MaxTransactionSize-8)))
	servertest.WantError(t, r, http.StatusBadRequest, 3, "parameters.data")
	if !strings.Contains(r.Str("message"), "the transaction would be") || sent != nil {
		t.Fatalf("a transaction over the limit once encoded: %s (broadcast: %v)", r.Raw, sent != nil)
	}
	// Data that fits is sent whole.
	servertest.MustOK(t, send("ACTIVITY_TYPE_ETH_SEND_TRANSACTION", v1(data(100<<10))))
	var tx types.Transaction
	if err := tx.UnmarshalBinary(sent); err != nil || len(tx.Data()) != 100<<10 {
		t.Fatalf("broadcast %d bytes of data (%v), want %d", len(tx.Data()), err, 100<<10)
	}
}
