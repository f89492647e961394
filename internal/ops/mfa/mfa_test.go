package mfa_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/servertest"
)

func TestMFAPolicies(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	uid := created.UserID
	// A second API key of the root user: the MFA proof.
	k2Priv, k2Pub := h.NewKey()
	r := root.Submit(
		"create_api_keys",
		"ACTIVITY_TYPE_CREATE_API_KEYS_V2",
		map[string]any{
			"userId": uid,
			"apiKeys": []any{
				map[string]any{"apiKeyName": "second", "publicKey": k2Pub, "curveType": "API_KEY_CURVE_P256"},
			},
		},
	)
	servertest.MustOK(t, r)
	k2ID := r.Str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	second := h.Client(created.OrganizationID, k2Priv)

	steps := []any{
		map[string]any{"any": []any{map[string]any{"type": "AUTHENTICATION_TYPE_API_KEY"}}},
		map[string]any{
			"any": []any{
				map[string]any{"type": "AUTHENTICATION_TYPE_PASSKEY"},
				map[string]any{"type": "AUTHENTICATION_TYPE_API_KEY", "id": k2ID},
			},
		},
	}
	// Bad input names its field.
	for _, tc := range []struct {
		params map[string]any
		field  string
	}{
		{map[string]any{"userId": uid, "mfaPolicyName": "x", "condition": "activity.type ==", "requiredAuthenticationMethods": steps, "order": 0}, "parameters.condition"},
		{map[string]any{"userId": uid, "mfaPolicyName": "x", "condition": "true", "requiredAuthenticationMethods": []any{}, "order": 0}, "parameters.requiredAuthenticationMethods"},
		{map[string]any{"userId": uid, "mfaPolicyName": "x", "condition": "true", "order": 0, "requiredAuthenticationMethods": []any{
			map[string]any{"any": []any{map[string]any{"type": "AUTHENTICATION_TYPE_EMAIL_OTP"}}}}}, "parameters.requiredAuthenticationMethods[0].any[0].type"},
		{map[string]any{"userId": uid, "mfaPolicyName": "x", "condition": "true", "order": 0, "requiredAuthenticationMethods": []any{
			map[string]any{"any": []any{map[string]any{"type": "AUTHENTICATION_TYPE_API_KEY", "id": "nope"}}}}}, "parameters.requiredAuthenticationMethods[0].any[0].id"},
		{map[string]any{"userId": uid, "mfaPolicyName": "", "condition": "true", "requiredAuthenticationMethods": steps, "order": 0}, "parameters.mfaPolicyName"},
	} {
		servertest.WantError(
			t,
			root.Submit("create_mfa_policy", "ACTIVITY_TYPE_CREATE_MFA_POLICY", tc.params),
			http.StatusBadRequest,
			3,
			tc.field,
		)
	}

	c := root.Submit(
		"create_mfa_policy",
		"ACTIVITY_TYPE_CREATE_MFA_POLICY",
		map[string]any{"userId": uid, "mfaPolicyName": "tags need two keys",
			"condition": "activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'", "requiredAuthenticationMethods": steps, "order": 1},
	)
	servertest.MustOK(t, c)
	policyID := c.Str("activity", "result", "createMfaPolicyResult", "mfaPolicyId")
	g := root.Query("get_mfa_policies", map[string]any{"userId": uid})
	servertest.MustOK(t, g)
	if g.Str("mfaPolicies", "0", "mfaPolicyId") != policyID ||
		g.Str("mfaPolicies", "0", "requiredAuthenticationMethods", "1", "any", "1", "id") != k2ID {
		t.Fatalf("get_mfa_policies: %s", g.Raw)
	}

	// An activity the condition does not match runs at once.
	servertest.MustOK(
		t,
		root.Submit(
			"create_private_key_tag",
			"ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG",
			map[string]any{"privateKeyTagName": "free", "privateKeyIds": []string{}},
		),
	)
	// A matching one waits for the second step.
	r = root.Submit(
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "guarded", "userIds": []string{}},
	)
	if r.Status != 200 || r.Str("activity", "status") != "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED" {
		t.Fatalf("want AUTHENTICATORS_NEEDED: %s", r.Raw)
	}
	actID, fp := r.Str("activity", "id"), r.Str("activity", "fingerprint")
	st := root.Query("get_mfa_status", map[string]any{"activityId": actID})
	servertest.MustOK(t, st)
	if st.Str("mfaStatuses", "0", "mfaPolicyId") != policyID || st.Str("mfaStatuses", "0", "satisfied") != "false" ||
		st.Str("mfaStatuses", "0", "satisfiedMethods", "0", "type") != "AUTHENTICATION_TYPE_API_KEY" {
		t.Fatalf("get_mfa_status: %s", st.Raw)
	}
	// Another user cannot supply the initiator's factors.
	otherPriv, otherPub := h.NewKey()
	u := root.Submit(
		"create_users",
		"ACTIVITY_TYPE_CREATE_USERS_V4",
		map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
			map[string]any{
				"apiKeyName": "b",
				"publicKey":  otherPub,
				"curveType":  "API_KEY_CURVE_P256",
			}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}},
	)
	servertest.MustOK(t, u)
	bob := h.Client(created.OrganizationID, otherPriv)
	servertest.WantError(
		t,
		bob.Submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp}),
		http.StatusBadRequest,
		9,
		"initiator",
	)
	// Approving with the first key again proves nothing new.
	a := root.Submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp})
	if a.Status != 200 || a.Str("activity", "status") != "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED" {
		t.Fatalf("same key satisfied the second step: %s", a.Raw)
	}
	if n := len(root.Query("list_user_tags", nil).Body["userTags"].([]any)); n != 0 {
		t.Fatal("executed before MFA")
	}
	// The second key completes it.
	a = second.Submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp})
	servertest.MustOK(t, a)
	if a.Str("activity", "status") != "ACTIVITY_STATUS_COMPLETED" ||
		a.Str("activity", "result", "createUserTagResult", "userTagId") == "" {
		t.Fatalf("MFA approval did not execute: %s", a.Raw)
	}
	if st := root.Query("get_mfa_status", map[string]any{"activityId": actID}); len(
		st.Body["mfaStatuses"].([]any),
	) != 0 {
		t.Fatalf("finished activity still has MFA status: %s", st.Raw)
	}

	// Signing with the second key from the start satisfies only the first step (steps go in order).
	h.Advance(time.Second)
	r = second.Submit(
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "second", "userIds": []string{}},
	)
	if r.Str("activity", "status") != "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED" {
		t.Fatalf("want AUTHENTICATORS_NEEDED: %s", r.Raw)
	}
	// The initiator may reject it instead.
	rj := second.Submit(
		"reject_activity",
		"ACTIVITY_TYPE_REJECT_ACTIVITY",
		map[string]any{"fingerprint": r.Str("activity", "fingerprint")},
	)
	if rj.Status != 200 || rj.Str("activity", "status") != "ACTIVITY_STATUS_REJECTED" {
		t.Fatalf("reject: %s", rj.Raw)
	}

	// Updating the condition away, then deleting the policy.
	servertest.MustOK(
		t,
		root.Submit(
			"update_mfa_policy",
			"ACTIVITY_TYPE_UPDATE_MFA_POLICY",
			map[string]any{"userId": uid, "mfaPolicyId": policyID, "condition": "false"},
		),
	)
	h.Advance(time.Second)
	servertest.MustOK(
		t,
		root.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "free now", "userIds": []string{}},
		),
	)
	gp := root.Query("get_mfa_policy", map[string]any{"userId": uid, "mfaPolicyId": policyID})
	if gp.Str("mfaPolicy", "condition") != "false" || gp.Str("mfaPolicy", "mfaPolicyName") != "tags need two keys" {
		t.Fatalf("get_mfa_policy: %s", gp.Raw)
	}
	// Bob cannot manage the root user's MFA policies; he may manage his own.
	servertest.WantError(
		t,
		bob.Submit(
			"delete_mfa_policy",
			"ACTIVITY_TYPE_DELETE_MFA_POLICY",
			map[string]any{"userId": uid, "mfaPolicyId": policyID},
		),
		http.StatusForbidden,
		7,
		"denied",
	)
	servertest.MustOK(
		t,
		root.Submit(
			"delete_mfa_policy",
			"ACTIVITY_TYPE_DELETE_MFA_POLICY",
			map[string]any{"userId": uid, "mfaPolicyId": policyID},
		),
	)
	servertest.WantError(
		t,
		root.Query("get_mfa_policy", map[string]any{"userId": uid, "mfaPolicyId": policyID}),
		http.StatusNotFound,
		5,
		"MFA policy not found",
	)
}

// update_mfa_policy changes what it is given and refuses what is bad, naming the field; a
// policy is its user's and its organization's: another organization neither reads nor changes it.
func TestMFAPolicyUpdateAndOwnership(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	uid := created.UserID
	steps := []any{map[string]any{"any": []any{map[string]any{"type": "AUTHENTICATION_TYPE_API_KEY"}}}}
	policyID := root.MustSubmit("create_mfa_policy", "ACTIVITY_TYPE_CREATE_MFA_POLICY", map[string]any{"userId": uid, "mfaPolicyName": "first",
		"condition": "activity.type == 'ACTIVITY_TYPE_CREATE_WALLET'", "requiredAuthenticationMethods": steps, "order": 0}).
		Result("createMfaPolicyResult", "mfaPolicyId")
	update := func(params map[string]any) servertest.Response {
		h.Advance(time.Millisecond)
		params["userId"], params["mfaPolicyId"] = uid, policyID
		return root.Submit("update_mfa_policy", "ACTIVITY_TYPE_UPDATE_MFA_POLICY", params)
	}
	servertest.MustOK(
		t,
		update(
			map[string]any{
				"mfaPolicyName": "renamed",
				"condition":     "activity.type == 'ACTIVITY_TYPE_CREATE_USERS_V4'",
				"order":         2,
				"notes":         "n",
			},
		),
	)
	g := root.MustQuery("get_mfa_policy", map[string]any{"userId": uid, "mfaPolicyId": policyID})
	if g.Str("mfaPolicy", "mfaPolicyName") != "renamed" ||
		g.Str("mfaPolicy", "condition") != "activity.type == 'ACTIVITY_TYPE_CREATE_USERS_V4'" ||
		g.Str("mfaPolicy", "order") != "2" {
		t.Fatalf("get_mfa_policy after update: %s", g.Raw)
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		field  string
	}{
		{"bad condition", map[string]any{"condition": "activity.type =="}, "parameters.condition"},
		{"negative order", map[string]any{"order": -1}, "parameters.order"},
		{"no steps", map[string]any{"requiredAuthenticationMethods": []any{}}, "parameters.requiredAuthenticationMethods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servertest.WantError(t, update(tc.params), http.StatusBadRequest, 3, tc.field)
		})
	}

	other, otherOrg := h.RootOrg("Other")
	servertest.WantError(
		t,
		other.Query("get_mfa_policy", map[string]any{"userId": uid, "mfaPolicyId": policyID}),
		http.StatusNotFound,
		5,
		"MFA policy not found",
	)
	h.Advance(time.Millisecond)
	if r := other.Submit("delete_mfa_policy", "ACTIVITY_TYPE_DELETE_MFA_POLICY", map[string]any{"userId": otherOrg.UserID, "mfaPolicyId": policyID}); r.Status == http.StatusOK {
		t.Fatalf("another organization deleted Acme's MFA policy: %s", r.Raw)
	}
	if g := root.MustQuery("get_mfa_policies", map[string]any{"userId": uid}); g.Len("mfaPolicies") != 1 {
		t.Fatalf("Acme's MFA policies: %s", g.Raw)
	}
}
