package server

import (
	"encoding/hex"
	"math/big"
	"net/http"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rlp"
)

// unsignedEthTx is an unsigned EIP-1559 transaction: 0x02 ‖ rlp([chainId, nonce, tip, feeCap, gas,
// to, value, data, accessList]), as viem serializes it before signing.
func unsignedEthTx(to string) string {
	addr := common.HexToAddress(to)
	b, _ := rlp.EncodeToBytes([]any{big.NewInt(11155111), uint64(1), big.NewInt(1), big.NewInt(2), uint64(21000), addr, big.NewInt(5), []byte{}, []any{}})
	return "02" + hex.EncodeToString(b)
}

func TestPoliciesGateSigning(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	bobPriv, bobPub := h.newKey()
	u := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
		map[string]any{"apiKeyName": "b", "publicKey": bobPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	mustOK(t, u)
	bobID := u.str("activity", "result", "createUsersResult", "userIds", "0")
	bob := h.client(created.OrganizationID, bobPriv)
	w1 := root.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "allowed", "accounts": testAccounts[:1]})
	w2 := root.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "other", "accounts": testAccounts[:1]})
	mustOK(t, w1)
	mustOK(t, w2)
	wallet1 := w1.str("activity", "result", "createWalletResult", "walletId")
	addr1 := w1.str("activity", "result", "createWalletResult", "addresses", "0")
	addr2 := w2.str("activity", "result", "createWalletResult", "addresses", "0")
	digest := hex.EncodeToString(make([]byte, 32))
	sign := func(c *client, addr string) response {
		return c.submit("sign_raw_payload", "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", map[string]any{"signWith": addr, "payload": digest, "encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"})
	}
	// A non-root user is denied signing by default.
	wantError(t, sign(bob, addr1), http.StatusForbidden, 7, "policy engine denied request implicitly")
	// An ALLOW policy scoped to bob and one wallet lets him sign with that wallet only.
	p := root.submit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{"policyName": "bob signs w1", "effect": "EFFECT_ALLOW",
		"consensus": "approvers.any(user, user.id == '" + bobID + "')", "condition": "activity.action == 'SIGN' && wallet.id == '" + wallet1 + "'", "notes": "delegated"})
	mustOK(t, p)
	s := sign(bob, addr1)
	mustOK(t, s)
	wantError(t, sign(bob, addr2), http.StatusForbidden, 7, "denied")
	// The evaluation is recorded.
	ev := root.query("get_policy_evaluations", map[string]any{"activityId": s.str("activity", "id")})
	mustOK(t, ev)
	if ev.str("policyEvaluations", "0", "policyEvaluations", "0", "outcome") != "OUTCOME_ALLOW" {
		t.Fatalf("evaluations: %s", ev.raw)
	}
	// A DENY on eth.tx.to blocks a transaction to that address even for an allowed user.
	blocked := "0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7"
	mustOK(t, root.submit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{"policyName": "no blocked", "effect": "EFFECT_DENY",
		"condition": "eth.tx.to == '" + blocked + "'", "notes": "deny list"}))
	tx := func(to string) response {
		return bob.submit("sign_transaction", "ACTIVITY_TYPE_SIGN_TRANSACTION_V2", map[string]any{"signWith": addr1, "unsignedTransaction": unsignedEthTx(to), "type": "TRANSACTION_TYPE_ETHEREUM"})
	}
	wantError(t, tx(blocked), http.StatusForbidden, 7, "policy engine denied request explicitly")
	mustOK(t, tx("0x1111111111111111111111111111111111111111"))
	// Root is not restricted by policies (threshold 1).
	mustOK(t, root.submit("sign_transaction", "ACTIVITY_TYPE_SIGN_TRANSACTION_V2", map[string]any{"signWith": addr1, "unsignedTransaction": unsignedEthTx(blocked), "type": "TRANSACTION_TYPE_ETHEREUM"}))
}

func TestRootQuorumConsensus(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	alicePriv, alicePub := h.newKey()
	u := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{"userName": "alice", "apiKeys": []any{
		map[string]any{"apiKeyName": "a", "publicKey": alicePub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	mustOK(t, u)
	aliceID := u.str("activity", "result", "createUsersResult", "userIds", "0")
	alice := h.client(created.OrganizationID, alicePriv)
	mustOK(t, root.submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 2, "userIds": []string{created.UserID, aliceID}}))

	// A root user's activity now needs the second root user.
	r := root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "needs two", "userIds": []string{}})
	if r.status != 200 || r.str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("want CONSENSUS_NEEDED: %s", r.raw)
	}
	if r.str("activity", "canApprove") != "false" {
		t.Fatalf("the initiator cannot approve again: %s", r.raw)
	}
	fp := r.str("activity", "fingerprint")
	g := alice.query("get_activity", map[string]any{"activityId": r.str("activity", "id")})
	if g.str("activity", "canApprove") != "true" || g.str("activity", "canReject") != "true" {
		t.Fatalf("alice may vote: %s", g.raw)
	}
	if n := len(root.query("list_user_tags", nil).body["userTags"].([]any)); n != 0 {
		t.Fatal("executed before consensus")
	}
	a := alice.submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp})
	mustOK(t, a)
	if a.str("activity", "result", "createUserTagResult", "userTagId") == "" || len(a.body["activity"].(map[string]any)["votes"].([]any)) != 2 {
		t.Fatalf("approval did not execute: %s", a.raw)
	}
	// Approving again changes nothing; the tag exists once.
	mustOK(t, alice.submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp}))
	if n := len(root.query("list_user_tags", nil).body["userTags"].([]any)); n != 1 {
		t.Fatalf("%d tags after approvals", n)
	}
	// An identical resubmission by the other root user counts as an approval.
	body := root.submitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "by resubmission", "userIds": []string{}})
	r = root.post("/public/v1/submit/create_user_tag", body)
	if r.str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("want CONSENSUS_NEEDED: %s", r.raw)
	}
	r2 := alice.post("/public/v1/submit/create_user_tag", body)
	mustOK(t, r2)
	if r2.str("activity", "id") != r.str("activity", "id") {
		t.Fatal("resubmission made a new activity")
	}
	// A rejection ends it and leaves nothing changed.
	r = root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "rejected", "userIds": []string{}})
	rj := alice.submit("reject_activity", "ACTIVITY_TYPE_REJECT_ACTIVITY", map[string]any{"fingerprint": r.str("activity", "fingerprint")})
	if rj.status != 200 || rj.str("activity", "status") != "ACTIVITY_STATUS_REJECTED" {
		t.Fatalf("reject: %s", rj.raw)
	}
	if n := len(root.query("list_user_tags", nil).body["userTags"].([]any)); n != 2 {
		t.Fatalf("%d tags after a rejection", n)
	}
	// An unknown fingerprint is a 404 with Turnkey's message.
	wantError(t, alice.submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": "sha256:00"}), http.StatusNotFound, 5, "No activity found with fingerprint")
	// A policy naming one root user lets them act alone.
	mustOK(t, alice.submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": root.submit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{
		"policyName": "root alone for tags", "effect": "EFFECT_ALLOW", "consensus": "approvers.any(user, user.id == '" + created.UserID + "')",
		"condition": "activity.resource == 'USER' && activity.action == 'CREATE'", "notes": "n"}).str("activity", "fingerprint")}))
	mustOK(t, root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "alone", "userIds": []string{}}))
}

// unsignedEthCall is an unsigned EIP-1559 contract call.
func unsignedEthCall(to, data string) string {
	addr := common.HexToAddress(to)
	d, _ := hex.DecodeString(data)
	b, _ := rlp.EncodeToBytes([]any{big.NewInt(1), uint64(1), big.NewInt(1), big.NewInt(2), uint64(60000), addr, big.NewInt(0), d, []any{}})
	return "02" + hex.EncodeToString(b)
}

func TestPolicyOnDecodedContractCall(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	bobPriv, bobPub := h.newKey()
	u := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
		map[string]any{"apiKeyName": "b", "publicKey": bobPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	mustOK(t, u)
	bob := h.client(created.OrganizationID, bobPriv)
	w := root.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", map[string]any{"walletName": "w", "accounts": testAccounts[:1]})
	mustOK(t, w)
	addr := w.str("activity", "result", "createWalletResult", "addresses", "0")
	const token = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2"
	mustOK(t, root.submit("create_smart_contract_interface", "ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE", map[string]any{
		"smartContractAddress": token, "type": "SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM", "label": "WETH", "notes": "",
		"smartContractInterface": `[{"type":"function","name":"transfer","inputs":[{"name":"dst","type":"address"},{"name":"wad","type":"uint256"}],"outputs":[{"name":"","type":"bool"}]}]`}))
	mustOK(t, root.submit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{"policyName": "small transfers to one address", "effect": "EFFECT_ALLOW", "notes": "example #12",
		"condition": "eth.tx.function_name == 'transfer' && eth.tx.contract_call_args['wad'] < 1000000000000000000 && eth.tx.contract_call_args['dst'] == '0x08d2b0a37f869ff76bacb5bab3278e26ab7067b7'"}))
	call := func(wad string) response {
		data := "a9059cbb000000000000000000000000" + "08d2b0a37f869ff76bacb5bab3278e26ab7067b7" + wad
		return bob.submit("sign_transaction", "ACTIVITY_TYPE_SIGN_TRANSACTION_V2", map[string]any{"signWith": addr, "unsignedTransaction": unsignedEthCall(token, data), "type": "TRANSACTION_TYPE_ETHEREUM"})
	}
	mustOK(t, call("00000000000000000000000000000000000000000000000006f05b59d3b20000"))                                       // 0.5e18
	wantError(t, call("0000000000000000000000000000000000000000000000001bc16d674ec80000"), http.StatusForbidden, 7, "denied") // 2e18
}
