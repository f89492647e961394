package server_test

import (
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// SEND_TRANSACTION_STATUS_UPDATES: an endpoint of the top-level organization hears of a send's
// BROADCASTING, then INCLUDED once the node has a receipt, in the body Turnkey sends
// ("transaction:status", msg with the status id, activity id, caip2, idempotency key, txHash).
// A sub-organization cannot subscribe (billing-scoped, as at Turnkey).
func TestSendTransactionStatusWebhooks(t *testing.T) {
	var mined atomic.Bool
	evm := newFakeNode(t, map[string]func([]json.RawMessage) string{
		"eth_sendRawTransaction": func([]json.RawMessage) string { return `"0x00"` },
		"eth_getTransactionReceipt": func([]json.RawMessage) string {
			if mined.Load() {
				return `{"status":"0x1","blockNumber":"0x11"}`
			}
			return `null`
		},
	})
	recv := newHookRecorder(t)
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{"eip155:11155111": evm.srv.URL}
		c.LoopbackWebhooks = true
	}))
	h.Server.Webhooks.Poll = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); h.Server.Webhooks.Run(ctx) }()
	go func() { defer wg.Done(); h.Server.ChainDeps().Follow(ctx, h.Server.Webhooks.Wake) }()
	defer func() { cancel(); wg.Wait() }()

	root, created := h.RootOrg("Acme")
	servertest.MustOK(
		t,
		createEndpoint(root, recv.URL, "sends", "SEND_TRANSACTION_STATUS_UPDATES"),
	)
	key, _ := crypto.GenerateKey()
	to := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
	tx, _ := types.SignNewTx(
		key,
		types.LatestSignerForChainID(big.NewInt(11155111)),
		&types.DynamicFeeTx{ChainID: big.NewInt(11155111), Nonce: 1,
			GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2e9), Gas: 21000, To: &to, Value: big.NewInt(1)},
	)
	raw, _ := tx.MarshalBinary()
	r := root.Submit(
		"eth_send_raw_transaction",
		"ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION",
		map[string]any{"signedTransaction": hexutil.Encode(raw), "caip2": "eip155:11155111"},
	)
	servertest.MustOK(t, r)
	mined.Store(true)
	bodies := recv.waitFor(2, 15*time.Second, "SEND_TRANSACTION_STATUS_UPDATES")
	if len(bodies) < 2 {
		t.Fatalf("%d status deliveries: %v", len(bodies), bodies)
	}
	statuses := []string{}
	for _, b := range bodies {
		msg := b["msg"].(map[string]any)
		statuses = append(statuses, msg["status"].(string))
		if b["type"] != "transaction:status" || b["organizationId"] != created.OrganizationID ||
			b["parentOrganizationId"] != created.OrganizationID ||
			msg["activityId"] != r.Str("activity", "id") ||
			msg["caip2"] != "eip155:11155111" ||
			msg["idempotencyKey"] == "" {
			t.Fatalf("body: %v", b)
		}
		if msg["status"] == "INCLUDED" && !strings.EqualFold(msg["txHash"].(string), tx.Hash().Hex()) {
			t.Fatalf("INCLUDED without the hash: %v", b)
		}
	}
	if strings.Join(statuses, ",") != "BROADCASTING,INCLUDED" {
		t.Fatalf("statuses %v", statuses)
	}
	// Billing-scoped: a sub-organization cannot subscribe.
	subPriv, subPub := h.NewKey()
	s := root.Submit(
		"create_sub_organization",
		"ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7",
		map[string]any{"subOrganizationName": "sub", "rootQuorumThreshold": 1,
			"rootUsers": []any{
				map[string]any{
					"userName": "u",
					"apiKeys": []any{
						map[string]any{"apiKeyName": "k", "publicKey": subPub, "curveType": "API_KEY_CURVE_P256"},
					},
					"authenticators": []any{},
					"oauthProviders": []any{},
				},
			}},
	)
	servertest.MustOK(t, s)
	sub := h.Client(s.Str("activity", "result", "createSubOrganizationResultV7", "subOrganizationId"), subPriv)
	servertest.WantError(
		t,
		createEndpoint(sub, recv.URL, "x", "SEND_TRANSACTION_STATUS_UPDATES"),
		http.StatusForbidden,
		7,
		"billing",
	)
}
