package server_test

import (
	"encoding/hex"
	"math/big"
	"net/http"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/latchkey/latchkey/internal/servertest"
)

func TestPoliciesGateSigning(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	bobID, bob := h.NewUser(root, "bob", "bob@example.com")
	w1 := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "allowed", "accounts": servertest.WalletAccounts[:1]},
	)
	w2 := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "other", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, w1)
	servertest.MustOK(t, w2)
	wallet1 := w1.Str("activity", "result", "createWalletResult", "walletId")
	addr1 := w1.Str("activity", "result", "createWalletResult", "addresses", "0")
	addr2 := w2.Str("activity", "result", "createWalletResult", "addresses", "0")
	digest := hex.EncodeToString(make([]byte, 32))
	sign := func(c *servertest.Client, addr string) servertest.Response {
		return c.Submit(
			"sign_raw_payload",
			"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
			map[string]any{
				"signWith":     addr,
				"payload":      digest,
				"encoding":     "PAYLOAD_ENCODING_HEXADECIMAL",
				"hashFunction": "HASH_FUNCTION_NO_OP",
			},
		)
	}
	// A non-root user is denied signing by default.
	servertest.WantError(t, sign(bob, addr1), http.StatusForbidden, 7, "policy engine denied request implicitly")
	// An ALLOW policy scoped to bob and one wallet lets him sign with that wallet only.
	p := root.Submit(
		"create_policy",
		"ACTIVITY_TYPE_CREATE_POLICY_V3",
		map[string]any{"policyName": "bob signs w1", "effect": "EFFECT_ALLOW",
			"consensus": "approvers.any(user, user.id == '" + bobID + "')", "condition": "activity.action == 'SIGN' && wallet.id == '" + wallet1 + "'", "notes": "delegated"},
	)
	servertest.MustOK(t, p)
	s := sign(bob, addr1)
	servertest.MustOK(t, s)
	servertest.WantError(t, sign(bob, addr2), http.StatusForbidden, 7, "denied")
	// The evaluation is recorded.
	ev := root.Query("get_policy_evaluations", map[string]any{"activityId": s.Str("activity", "id")})
	servertest.MustOK(t, ev)
	if ev.Str("policyEvaluations", "0", "policyEvaluations", "0", "outcome") != "OUTCOME_ALLOW" {
		t.Fatalf("evaluations: %s", ev.Raw)
	}
	// A DENY on eth.tx.to blocks a transaction to that address even for an allowed user.
	blocked := "0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7"
	servertest.MustOK(
		t,
		root.Submit(
			"create_policy",
			"ACTIVITY_TYPE_CREATE_POLICY_V3",
			map[string]any{"policyName": "no blocked", "effect": "EFFECT_DENY",
				"condition": "eth.tx.to == '" + blocked + "'", "notes": "deny list"},
		),
	)
	tx := func(to string) servertest.Response {
		return bob.Submit(
			"sign_transaction",
			"ACTIVITY_TYPE_SIGN_TRANSACTION_V2",
			map[string]any{
				"signWith":            addr1,
				"unsignedTransaction": servertest.UnsignedEthTx(to),
				"type":                "TRANSACTION_TYPE_ETHEREUM",
			},
		)
	}
	servertest.WantError(t, tx(blocked), http.StatusForbidden, 7, "policy engine denied request explicitly")
	servertest.MustOK(t, tx("0x1111111111111111111111111111111111111111"))
	// Root is not restricted by policies (threshold 1).
	servertest.MustOK(
		t,
		root.Submit(
			"sign_transaction",
			"ACTIVITY_TYPE_SIGN_TRANSACTION_V2",
			map[string]any{
				"signWith":            addr1,
				"unsignedTransaction": servertest.UnsignedEthTx(blocked),
				"type":                "TRANSACTION_TYPE_ETHEREUM",
			},
		),
	)
}

func TestRootQuorumConsensus(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	aliceID, alice := h.NewUser(root, "alice", "alice@example.com")
	servertest.MustOK(
		t,
		root.Submit(
			"update_root_quorum",
			"ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
			map[string]any{"threshold": 2, "userIds": []string{created.UserID, aliceID}},
		),
	)

	// A root user's activity now needs the second root user.
	r := root.Submit(
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "needs two", "userIds": []string{}},
	)
	if r.Status != 200 || r.Str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("want CONSENSUS_NEEDED: %s", r.Raw)
	}
	if r.Str("activity", "canApprove") != "false" {
		t.Fatalf("the initiator cannot approve again: %s", r.Raw)
	}
	fp := r.Str("activity", "fingerprint")
	g := alice.Query("get_activity", map[string]any{"activityId": r.Str("activity", "id")})
	if g.Str("activity", "canApprove") != "true" || g.Str("activity", "canReject") != "true" {
		t.Fatalf("alice may vote: %s", g.Raw)
	}
	if n := len(root.Query("list_user_tags", nil).Body["userTags"].([]any)); n != 0 {
		t.Fatal("executed before consensus")
	}
	a := alice.Submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp})
	servertest.MustOK(t, a)
	if a.Str("activity", "result", "createUserTagResult", "userTagId") == "" ||
		len(a.Body["activity"].(map[string]any)["votes"].([]any)) != 2 {
		t.Fatalf("approval did not execute: %s", a.Raw)
	}
	// Approving again changes nothing; the tag exists once.
	servertest.MustOK(
		t,
		alice.Submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp}),
	)
	if n := len(root.Query("list_user_tags", nil).Body["userTags"].([]any)); n != 1 {
		t.Fatalf("%d tags after approvals", n)
	}
	// An identical resubmission by the other root user counts as an approval.
	body := root.SubmitBody(
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "by resubmission", "userIds": []string{}},
	)
	r = root.Post("/public/v1/submit/create_user_tag", body)
	if r.Str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("want CONSENSUS_NEEDED: %s", r.Raw)
	}
	r2 := alice.Post("/public/v1/submit/create_user_tag", body)
	servertest.MustOK(t, r2)
	if r2.Str("activity", "id") != r.Str("activity", "id") {
		t.Fatal("resubmission made a new activity")
	}
	// A rejection ends it and leaves nothing changed.
	r = root.Submit(
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "rejected", "userIds": []string{}},
	)
	rj := alice.Submit(
		"reject_activity",
		"ACTIVITY_TYPE_REJECT_ACTIVITY",
		map[string]any{"fingerprint": r.Str("activity", "fingerprint")},
	)
	if rj.Status != 200 || rj.Str("activity", "status") != "ACTIVITY_STATUS_REJECTED" {
		t.Fatalf("reject: %s", rj.Raw)
	}
	if n := len(root.Query("list_user_tags", nil).Body["userTags"].([]any)); n != 2 {
		t.Fatalf("%d tags after a rejection", n)
	}
	// An unknown fingerprint is a 404 with Turnkey's message.
	servertest.WantError(
		t,
		alice.Submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": "sha256:00"}),
		http.StatusNotFound,
		5,
		"No activity found with fingerprint",
	)
	// A policy naming one root user lets them act alone.
	servertest.MustOK(
		t,
		alice.Submit(
			"approve_activity",
			"ACTIVITY_TYPE_APPROVE_ACTIVITY",
			map[string]any{"fingerprint": root.Submit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{
				"policyName": "root alone for tags", "effect": "EFFECT_ALLOW", "consensus": "approvers.any(user, user.id == '" + created.UserID + "')",
				"condition": "activity.resource == 'USER' && activity.action == 'CREATE'", "notes": "n"}).Str("activity", "fingerprint")},
		),
	)
	servertest.MustOK(
		t,
		root.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "alone", "userIds": []string{}},
		),
	)
}

// unsignedEthCall is an unsigned EIP-1559 contract call.
func unsignedEthCall(to, data string) string {
	addr := common.HexToAddress(to)
	d, _ := hex.DecodeString(data)
	b, _ := rlp.EncodeToBytes(
		[]any{big.NewInt(1), uint64(1), big.NewInt(1), big.NewInt(2), uint64(60000), addr, big.NewInt(0), d, []any{}},
	)
	return "02" + hex.EncodeToString(b)
}

func TestPolicyOnDecodedContractCall(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	bobPriv, bobPub := h.NewKey()
	u := root.Submit(
		"create_users",
		"ACTIVITY_TYPE_CREATE_USERS_V4",
		map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
			map[string]any{
				"apiKeyName": "b",
				"publicKey":  bobPub,
				"curveType":  "API_KEY_CURVE_P256",
			}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}},
	)
	servertest.MustOK(t, u)
	bob := h.Client(created.OrganizationID, bobPriv)
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, w)
	addr := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	const token = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"
	servertest.MustOK(
		t,
		root.Submit("create_smart_contract_interface", "ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE", map[string]any{
			"smartContractAddress": token, "type": "SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM", "label": "WETH", "notes": "",
			"smartContractInterface": `[{"type":"function","name":"transfer","inputs":[{"name":"dst","type":"address"},{"name":"wad","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]}]`}),
	)
	servertest.MustOK(
		t,
		root.Submit(
			"create_policy",
			"ACTIVITY_TYPE_CREATE_POLICY_V3",
			map[string]any{
				"policyName": "small transfers to one address",
				"effect":     "EFFECT_ALLOW",
				"notes":      "example #12",
				"condition":  "eth.tx.function_name == 'transfer' && eth.tx.contract_call_args['wad'] < 1000000000000000000 && eth.tx.contract_call_args['dst'] == '0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7'",
			},
		),
	)
	call := func(wad string) servertest.Response {
		data := "a9059cbb000000000000000000000000" + "08d2b0a37f869ff76bacb5bab3278e26ab7067b7" + wad
		return bob.Submit(
			"sign_transaction",
			"ACTIVITY_TYPE_SIGN_TRANSACTION_V2",
			map[string]any{
				"signWith":            addr,
				"unsignedTransaction": unsignedEthCall(token, data),
				"type":                "TRANSACTION_TYPE_ETHEREUM",
			},
		)
	}
	servertest.MustOK(
		t,
		call("00000000000000000000000000000000000000000000000006f05b59d3b20000"),
	) // 0.5e18
	servertest.WantError(
		t,
		call("0000000000000000000000000000000000000000000000001bc16d674ec80000"),
		http.StatusForbidden,
		7,
		"denied",
	) // 2e18
}
