package server_test

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mr-tron/base58"

	"github.com/latchkey/latchkey/internal/ops/chaindata"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

// Policies see a Solana send's transaction as solana.tx, as they see sign_transaction's: a DENY
// on a transfer's recipient stops sol_send_transaction for a user another policy allows to send.
func TestSolSendTransactionPolicies(t *testing.T) {
	var sent atomic.Int64 // written by the node's handler goroutine
	sol := newFakeNode(t, map[string]func([]json.RawMessage) string{
		"sendTransaction": func(p []json.RawMessage) string {
			var b64 string
			_ = json.Unmarshal(p[0], &b64)
			raw, _ := base64.StdEncoding.DecodeString(b64)
			sent.Add(1)
			return `"` + base58.Encode(raw[1:65]) + `"`
		},
	})
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.ChainRPC = map[string]string{chaindata.SolanaDevnet: sol.srv.URL}
	}))
	root, _ := h.RootOrg("Acme")
	_, solAddr, _ := ethAndSolana(t, root)
	bobID, bob := h.NewUser(root, "bob", "bob@example.com")
	root.MustSubmit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{
		"policyName": "bob sends", "effect": "EFFECT_ALLOW", "notes": "",
		"consensus": "approvers.any(user, user.id == '" + bobID + "')",
		"condition": "activity.type == 'ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2'",
	})
	blocked := make([]byte, 32)
	blocked[0] = 7
	root.MustSubmit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{
		"policyName": "no blocked recipient", "effect": "EFFECT_DENY", "notes": "",
		"condition": "solana.tx.transfers.any(t, t.to == '" + base58.Encode(blocked) + "')",
	})
	sys := make([]byte, 32) // the System Program
	bh := make([]byte, 32)
	bh[0] = 9
	send := func(to []byte) servertest.Response {
		h.Advance(time.Millisecond)
		return bob.Submit("sol_send_transaction", "ACTIVITY_TYPE_SOL_SEND_TRANSACTION_V2", map[string]any{
			"unsignedTransaction": hex.EncodeToString(solLegacy([3]byte{1, 0, 1}, [][]byte{solKey(solAddr), to, sys},
				solIns{2, []byte{0, 1}, solTransfer(1_000_000)})),
			"signWiths": []string{solAddr},
			"caip2":     "solana:devnet", "recentBlockhash": base58.Encode(bh),
		})
	}
	servertest.WantError(t, send(blocked), http.StatusForbidden, 7, "policy engine denied request explicitly")
	if sent.Load() != 0 {
		t.Fatalf("a denied send reached the node")
	}
	other := make([]byte, 32)
	other[0] = 8
	servertest.MustOK(t, send(other))
	if n := sent.Load(); n != 1 {
		t.Fatalf("the allowed send was sent %d times", n)
	}
}
