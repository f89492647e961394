package server

import (
	"net/http"
	"testing"
	"time"
)

func TestMFAPolicies(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	uid := created.UserID
	// A second API key of the root user: the MFA proof.
	k2Priv, k2Pub := h.newKey()
	r := root.submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": uid, "apiKeys": []any{map[string]any{"apiKeyName": "second", "publicKey": k2Pub, "curveType": "API_KEY_CURVE_P256"}}})
	mustOK(t, r)
	k2ID := r.str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	second := h.client(created.OrganizationID, k2Priv)

	steps := []any{
		map[string]any{"any": []any{map[string]any{"type": "AUTHENTICATION_TYPE_API_KEY"}}},
		map[string]any{"any": []any{map[string]any{"type": "AUTHENTICATION_TYPE_PASSKEY"}, map[string]any{"type": "AUTHENTICATION_TYPE_API_KEY", "id": k2ID}}},
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
		wantError(t, root.submit("create_mfa_policy", "ACTIVITY_TYPE_CREATE_MFA_POLICY", tc.params), http.StatusBadRequest, 3, tc.field)
	}

	c := root.submit("create_mfa_policy", "ACTIVITY_TYPE_CREATE_MFA_POLICY", map[string]any{"userId": uid, "mfaPolicyName": "tags need two keys",
		"condition": "activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'", "requiredAuthenticationMethods": steps, "order": 1})
	mustOK(t, c)
	policyID := c.str("activity", "result", "createMfaPolicyResult", "mfaPolicyId")
	g := root.query("get_mfa_policies", map[string]any{"userId": uid})
	mustOK(t, g)
	if g.str("mfaPolicies", "0", "mfaPolicyId") != policyID || g.str("mfaPolicies", "0", "requiredAuthenticationMethods", "1", "any", "1", "id") != k2ID {
		t.Fatalf("get_mfa_policies: %s", g.raw)
	}

	// An activity the condition does not match runs at once.
	mustOK(t, root.submit("create_private_key_tag", "ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG", map[string]any{"privateKeyTagName": "free", "privateKeyIds": []string{}}))
	// A matching one waits for the second step.
	r = root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "guarded", "userIds": []string{}})
	if r.status != 200 || r.str("activity", "status") != "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED" {
		t.Fatalf("want AUTHENTICATORS_NEEDED: %s", r.raw)
	}
	actID, fp := r.str("activity", "id"), r.str("activity", "fingerprint")
	st := root.query("get_mfa_status", map[string]any{"activityId": actID})
	mustOK(t, st)
	if st.str("mfaStatuses", "0", "mfaPolicyId") != policyID || st.str("mfaStatuses", "0", "satisfied") != "false" ||
		st.str("mfaStatuses", "0", "satisfiedMethods", "0", "type") != "AUTHENTICATION_TYPE_API_KEY" {
		t.Fatalf("get_mfa_status: %s", st.raw)
	}
	// Another user cannot supply the initiator's factors.
	otherPriv, otherPub := h.newKey()
	u := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
		map[string]any{"apiKeyName": "b", "publicKey": otherPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	mustOK(t, u)
	bob := h.client(created.OrganizationID, otherPriv)
	wantError(t, bob.submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp}), http.StatusBadRequest, 9, "initiator")
	// Approving with the first key again proves nothing new.
	a := root.submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp})
	if a.status != 200 || a.str("activity", "status") != "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED" {
		t.Fatalf("same key satisfied the second step: %s", a.raw)
	}
	if n := len(root.query("list_user_tags", nil).body["userTags"].([]any)); n != 0 {
		t.Fatal("executed before MFA")
	}
	// The second key completes it.
	a = second.submit("approve_activity", "ACTIVITY_TYPE_APPROVE_ACTIVITY", map[string]any{"fingerprint": fp})
	mustOK(t, a)
	if a.str("activity", "status") != "ACTIVITY_STATUS_COMPLETED" || a.str("activity", "result", "createUserTagResult", "userTagId") == "" {
		t.Fatalf("MFA approval did not execute: %s", a.raw)
	}
	if st := root.query("get_mfa_status", map[string]any{"activityId": actID}); len(st.body["mfaStatuses"].([]any)) != 0 {
		t.Fatalf("finished activity still has MFA status: %s", st.raw)
	}

	// Signing with the second key from the start satisfies only the first step (steps go in order).
	h.advance(time.Second)
	r = second.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "second", "userIds": []string{}})
	if r.str("activity", "status") != "ACTIVITY_STATUS_AUTHENTICATORS_NEEDED" {
		t.Fatalf("want AUTHENTICATORS_NEEDED: %s", r.raw)
	}
	// The initiator may reject it instead.
	rj := second.submit("reject_activity", "ACTIVITY_TYPE_REJECT_ACTIVITY", map[string]any{"fingerprint": r.str("activity", "fingerprint")})
	if rj.status != 200 || rj.str("activity", "status") != "ACTIVITY_STATUS_REJECTED" {
		t.Fatalf("reject: %s", rj.raw)
	}

	// Updating the condition away, then deleting the policy.
	mustOK(t, root.submit("update_mfa_policy", "ACTIVITY_TYPE_UPDATE_MFA_POLICY", map[string]any{"userId": uid, "mfaPolicyId": policyID, "condition": "false"}))
	h.advance(time.Second)
	mustOK(t, root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "free now", "userIds": []string{}}))
	gp := root.query("get_mfa_policy", map[string]any{"userId": uid, "mfaPolicyId": policyID})
	if gp.str("mfaPolicy", "condition") != "false" || gp.str("mfaPolicy", "mfaPolicyName") != "tags need two keys" {
		t.Fatalf("get_mfa_policy: %s", gp.raw)
	}
	// Bob cannot manage the root user's MFA policies; he may manage his own.
	wantError(t, bob.submit("delete_mfa_policy", "ACTIVITY_TYPE_DELETE_MFA_POLICY", map[string]any{"userId": uid, "mfaPolicyId": policyID}), http.StatusForbidden, 7, "denied")
	mustOK(t, root.submit("delete_mfa_policy", "ACTIVITY_TYPE_DELETE_MFA_POLICY", map[string]any{"userId": uid, "mfaPolicyId": policyID}))
	wantError(t, root.query("get_mfa_policy", map[string]any{"userId": uid, "mfaPolicyId": policyID}), http.StatusNotFound, 5, "MFA policy not found")
}
