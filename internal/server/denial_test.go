package server_test

import (
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

// A denial must be explainable: the FAILED activity of an implicit denial (no policy allowed
// it) and of an explicit one (a DENY policy matched), found through list_activities, has its
// policy evaluation, which used to be written in the transaction that was rolled back.
func TestDeniedActivitiesKeepTheirPolicyEvaluation(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	bobID, bob := h.NewUser(root, "bob", "bob@example.com")
	w := root.Submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]},
	)
	servertest.MustOK(t, w)
	addr := w.Str("activity", "result", "createWalletResult", "addresses", "0")
	servertest.MustOK(
		t,
		root.Submit(
			"create_policy",
			"ACTIVITY_TYPE_CREATE_POLICY_V3",
			map[string]any{"policyName": "bob signs", "effect": "EFFECT_ALLOW",
				"consensus": "approvers.any(user, user.id == '" + bobID + "')", "condition": "activity.action == 'SIGN'", "notes": ""},
		),
	)
	servertest.MustOK(
		t,
		root.Submit(
			"create_policy",
			"ACTIVITY_TYPE_CREATE_POLICY_V3",
			map[string]any{"policyName": "no tags by bob", "effect": "EFFECT_DENY",
				"condition": "activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'", "notes": ""},
		),
	)
	// Implicit: nothing allows bob to create a wallet.
	servertest.WantError(
		t,
		bob.Submit(
			"create_wallet",
			"ACTIVITY_TYPE_CREATE_WALLET",
			map[string]any{"walletName": "mine", "accounts": servertest.WalletAccounts[:1]},
		),
		http.StatusForbidden,
		7,
		"denied request implicitly",
	)
	// Explicit: the DENY policy matches.
	servertest.WantError(
		t,
		bob.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "t", "userIds": []string{}},
		),
		http.StatusForbidden,
		7,
		"denied request explicitly",
	)
	servertest.MustOK(
		t,
		bob.Submit(
			"sign_raw_payload",
			"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
			map[string]any{"signWith": addr, "payload": hex.EncodeToString(make([]byte, 32)),
				"encoding": "PAYLOAD_ENCODING_HEXADECIMAL", "hashFunction": "HASH_FUNCTION_NO_OP"},
		),
	)

	l := root.Query("list_activities", map[string]any{"filterByStatus": []string{"ACTIVITY_STATUS_FAILED"}})
	servertest.MustOK(t, l)
	acts, _ := l.Body["activities"].([]any)
	seen := map[string]bool{}
	for _, a := range acts {
		act := a.(map[string]any)
		typ, id := act["type"].(string), act["id"].(string)
		ev := root.Query("get_policy_evaluations", map[string]any{"activityId": id})
		servertest.MustOK(t, ev)
		evs, _ := ev.Body["policyEvaluations"].([]any)
		if len(evs) == 0 {
			t.Fatalf("the denied %s has no policy evaluation: %s", typ, ev.Raw)
		}
		seen[typ] = true
		if typ == "ACTIVITY_TYPE_CREATE_USER_TAG" && !strings.Contains(string(ev.Raw), "DENY") {
			t.Fatalf("the explicit denial does not show the DENY policy: %s", ev.Raw)
		}
	}
	if !seen["ACTIVITY_TYPE_CREATE_WALLET"] || !seen["ACTIVITY_TYPE_CREATE_USER_TAG"] {
		t.Fatalf("the denied activities were not listed as FAILED: %s", l.Raw)
	}
}
