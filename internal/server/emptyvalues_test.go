package server_test

import (
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
)

// The exact bodies Turnkey's own code sends with empty required members: the policy helpers of
// tkhq/sdk's examples (create_policy with notes ""), set_organization_feature with value "", and
// @turnkey/core's removeUserEmail / removeUserPhoneNumber (update_user_email with userEmail "",
// update_user_phone_number with userPhoneNumber ""), which remove the contact.
func TestEmptyValuesTurnkeyClientsSend(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	servertest.MustOK(
		t,
		root.Submit("create_policy", "ACTIVITY_TYPE_CREATE_POLICY_V3", map[string]any{"policyName": "Allow signing",
			"effect": "EFFECT_ALLOW", "condition": "activity.resource == 'PRIVATE_KEY'", "consensus": "approvers.any(user, user.id == '" + created.UserID + "')", "notes": ""}),
	)
	r := root.Submit(
		"set_organization_feature",
		"ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE",
		map[string]any{"name": "FEATURE_NAME_EMAIL_AUTH", "value": ""},
	)
	servertest.MustOK(t, r)
	u := root.Submit(
		"create_users",
		"ACTIVITY_TYPE_CREATE_USERS_V4",
		map[string]any{"users": []any{map[string]any{"userName": "bob",
			"userEmail": "bob@example.com", "userPhoneNumber": "+14155550123", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}},
	)
	servertest.MustOK(t, u)
	bob := u.Str("activity", "result", "createUsersResult", "userIds", "0")
	servertest.MustOK(
		t,
		root.Submit(
			"update_user_email",
			"ACTIVITY_TYPE_UPDATE_USER_EMAIL",
			map[string]any{"userId": bob, "userEmail": ""},
		),
	)
	servertest.MustOK(
		t,
		root.Submit(
			"update_user_phone_number",
			"ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER",
			map[string]any{"userId": bob, "userPhoneNumber": ""},
		),
	)
	got := root.Query("get_user", map[string]any{"userId": bob})
	servertest.MustOK(t, got)
	if got.Str("user", "userEmail") != "" || got.Str("user", "userPhoneNumber") != "" {
		t.Fatalf("the contacts were not removed: %s", got.Raw)
	}
	if l := root.Query("list_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": "bob@example.com"}); l.Str(
		"organizationIds",
		"0",
	) != "" {
		t.Fatalf("a removed address still matches: %s", l.Raw)
	}
	// An empty id is still refused, naming the field.
	servertest.WantError(
		t,
		root.Submit(
			"update_user_email",
			"ACTIVITY_TYPE_UPDATE_USER_EMAIL",
			map[string]any{"userId": "", "userEmail": ""},
		),
		400,
		3,
		"parameters.userId is required",
	)
}
