package server_test

import (
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// eth_send_transaction without sponsorship: Latchkey asks the node for the nonce, gas and fees
// the caller left out (before the activity's transaction), signs with the `from` account,
// broadcasts after commit, and get_send_transaction_status follows it to INCLUDED. A sponsored
// send where the operator sponsors nothing is refused with the reason. The exact body is @turnkey/core's
// ethSendTransaction (V1: from, to, value, data, caip2, sponsor false).
func TestEthSendTransaction(t *testing.T) {
	var sent []byte
	methods := sendingNode(&sent)
	methods["eth_getTransactionReceipt"] = func([]json.RawMessage) string { return `{"status":"0x1","blockNumber":"0x11"}` }
	evm := newFakeNode(t, methods)
	h := servertest.New(
		t,
		servertest.WithConfig(
			func(c *server.Config) { c.ChainRPC = map[string]string{"eip155:11155111": evm.srv.URL} },
		),
	)
	root, _ := h.RootOrg("Acme")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "main", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, w)
	from := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	to := "0x000000000000000000000000000000000000dEaD"
	r := root.Submit(
		"eth_send_transaction",
		"ACTIVITY_TYPE_ETH_SEND_TRANSACTION",
		map[string]any{"from": from, "to": to, "value": "1000",
			"data": "0x", "caip2": "eip155:11155111", "sponsor": false},
	)
	servertest.MustOK(t, r)
	id := r.Str("activity", "result", "ethSendTransactionResult", "sendTransactionStatusId")
	var tx types.Transaction
	if err := tx.UnmarshalBinary(sent); err != nil {
		t.Fatalf("nothing (or garbage) was broadcast: %v", err)
	}
	sender, err := types.Sender(types.LatestSignerForChainID(big.NewInt(11155111)), &tx)
	if err != nil || !strings.EqualFold(sender.Hex(), from) {
		t.Fatalf("signed by %v (%v), want %s", sender, err, from)
	}
	if tx.Nonce() != 7 || tx.Gas() != 21000 || tx.GasTipCap().Int64() != 1e9 || tx.GasFeeCap().Int64() != 2*2e9+1e9 ||
		*tx.To() != common.HexToAddress(to) || tx.Value().Int64() != 1000 {
		t.Fatalf(
			"transaction: nonce %d gas %d tip %v cap %v to %v value %v",
			tx.Nonce(),
			tx.Gas(),
			tx.GasTipCap(),
			tx.GasFeeCap(),
			tx.To(),
			tx.Value(),
		)
	}
	st := root.Query("get_send_transaction_status", map[string]any{"sendTransactionStatusId": id})
	servertest.MustOK(t, st)
	if st.Str("txStatus") != "INCLUDED" || !strings.EqualFold(st.Str("eth", "txHash"), tx.Hash().Hex()) {
		t.Fatalf("status: %s", st.Raw)
	}
	// Given values are used as given.
	h.Advance(1)
	r = root.Submit(
		"eth_send_transaction",
		"ACTIVITY_TYPE_ETH_SEND_TRANSACTION",
		map[string]any{"from": from, "to": to, "caip2": "eip155:11155111",
			"nonce": "9", "gasLimit": "30000", "maxFeePerGas": "5000000000", "maxPriorityFeePerGas": "2000000000"},
	)
	servertest.MustOK(t, r)
	_ = tx.UnmarshalBinary(sent)
	if tx.Nonce() != 9 || tx.Gas() != 30000 || tx.GasFeeCap().Int64() != 5e9 || tx.GasTipCap().Int64() != 2e9 {
		t.Fatalf("given values not used: nonce %d gas %d", tx.Nonce(), tx.Gas())
	}
	// Sponsored without a gas-station file: refused, with the reason; an unknown from: 400 naming it.
	h.Advance(1)
	sp := root.Submit(
		"eth_send_transaction",
		"ACTIVITY_TYPE_ETH_SEND_TRANSACTION",
		map[string]any{"from": from, "to": to, "caip2": "eip155:11155111", "sponsor": true},
	)
	if sp.Status != http.StatusBadRequest || !strings.Contains(string(sp.Raw), "GAS_SPONSORSHIP_UNAVAILABLE") {
		t.Fatalf("sponsored: %d %s", sp.Status, sp.Raw)
	}
	h.Advance(1)
	servertest.WantError(
		t,
		root.Submit(
			"eth_send_transaction",
			"ACTIVITY_TYPE_ETH_SEND_TRANSACTION",
			map[string]any{"from": "0x1111111111111111111111111111111111111111",
				"to": to, "caip2": "eip155:11155111"},
		),
		400,
		3,
		"from",
	)
}

// sendingNode is a fake EVM node's methods for an eth_send_transaction: nonce 7, 21,000 gas, a
// 1 gwei tip over a 2 gwei base fee, and eth_sendRawTransaction keeping the raw bytes in *sent.
func sendingNode(sent *[]byte) map[string]func([]json.RawMessage) string {
	return map[string]func([]json.RawMessage) string{
		"eth_getTransactionCount":  func([]json.RawMessage) string { return `"0x7"` },
		"eth_estimateGas":          func([]json.RawMessage) string { return `"0x5208"` },
		"eth_maxPriorityFeePerGas": func([]json.RawMessage) string { return `"0x3b9aca00"` },
		"eth_getBlockByNumber":     func([]json.RawMessage) string { return `{"number":"0x10","baseFeePerGas":"0x77359400"}` },
		"eth_sendRawTransaction": func(p []json.RawMessage) string {
			var h string
			_ = json.Unmarshal(p[0], &h)
			*sent, _ = hexutil.Decode(h)
			var tx types.Transaction
			_ = tx.UnmarshalBinary(*sent)
			return `"` + tx.Hash().Hex() + `"`
		},
	}
}
