package server

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

func TestPasskeyRegistrationAndWebAuthnStamp(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	for _, format := range []string{"none", "packed"} {
		a, err := stamptest.New("localhost", "http://localhost:3000")
		if err != nil {
			t.Fatal(err)
		}
		challenge := []byte("registration-challenge-" + format)
		reg, err := a.Attest(challenge, format)
		if err != nil {
			t.Fatal(err)
		}
		r := root.submit("create_authenticators", "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2", map[string]any{
			"userId": created.UserID,
			"authenticators": []any{map[string]any{"authenticatorName": "laptop " + format, "challenge": base64.RawURLEncoding.EncodeToString(challenge),
				"attestation": reg}},
		})
		mustOK(t, r)
		authID := r.str("activity", "result", "createAuthenticatorsResult", "authenticatorIds", "0")
		g := root.query("get_authenticator", map[string]any{"authenticatorId": authID})
		mustOK(t, g)
		if g.str("authenticator", "credentialId") != a.CredentialID() || g.str("authenticator", "credential", "publicKey") != a.PublicKeyCompressed() ||
			g.str("authenticator", "attestationType") != format {
			t.Fatalf("get_authenticator: %s", g.raw)
		}
		// A request stamped by the passkey.
		passkey := &client{h: h, org: created.OrganizationID, st: a}
		w := passkey.query("whoami", nil)
		mustOK(t, w)
		if w.str("userId") != created.UserID {
			t.Fatalf("whoami by passkey: %s", w.raw)
		}
		mustOK(t, passkey.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "by passkey " + format, "userIds": []string{}}))
		// A stamp over other bytes does not verify.
		name, value, _ := a.Stamp([]byte(`{"organizationId":"` + created.OrganizationID + `"}`))
		bad := h.raw("/public/v1/query/whoami", []byte(`{"organizationId":"`+created.OrganizationID+`" }`), map[string]string{name: value})
		wantError(t, bad, http.StatusUnauthorized, 16, "invalid stamp")
		mustOK(t, root.submit("delete_authenticators", "ACTIVITY_TYPE_DELETE_AUTHENTICATORS", map[string]any{"userId": created.UserID, "authenticatorIds": []string{authID}}))
		wantError(t, passkey.query("whoami", nil), http.StatusUnauthorized, 16, "credential ID could not be found")
	}
	// A registration whose challenge does not match is refused, naming the field.
	a, _ := stamptest.New("localhost", "http://localhost:3000")
	reg, _ := a.Attest([]byte("one"), "none")
	r := root.submit("create_authenticators", "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2", map[string]any{
		"userId": created.UserID, "authenticators": []any{map[string]any{"authenticatorName": "x", "challenge": base64.RawURLEncoding.EncodeToString([]byte("two")), "attestation": reg}}})
	wantError(t, r, http.StatusBadRequest, 3, "parameters.authenticators[0].attestation")
}

func TestOrganizationSettings(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	r := root.submit("update_organization_name", "ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME", map[string]any{"organizationName": "Acme Inc"})
	mustOK(t, r)
	if r.str("activity", "result", "updateOrganizationNameResult", "organizationName") != "Acme Inc" {
		t.Fatalf("rename: %s", r.raw)
	}
	r = root.submit("set_organization_feature", "ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE", map[string]any{"name": "FEATURE_NAME_WEBAUTHN_ORIGINS", "value": "https://app.example"})
	mustOK(t, r)
	wantError(t, root.submit("set_organization_feature", "ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE", map[string]any{"name": "FEATURE_NAME_NOPE", "value": "x"}), http.StatusBadRequest, 3, "parameters.name")
	c := root.query("get_organization_configs", nil)
	mustOK(t, c)
	if c.str("configs", "features", "0", "value") != "https://app.example" || c.str("configs", "quorum", "threshold") != "1" || c.str("configs", "quorum", "userIds", "0") != created.UserID {
		t.Fatalf("configs: %s", c.raw)
	}
	mustOK(t, root.submit("remove_organization_feature", "ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE", map[string]any{"name": "FEATURE_NAME_WEBAUTHN_ORIGINS"}))

	// Root quorum: add a second root user, threshold 2, validated.
	_, bobPub := h.newKey()
	u := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
		map[string]any{"apiKeyName": "b", "publicKey": bobPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	mustOK(t, u)
	bobID := u.str("activity", "result", "createUsersResult", "userIds", "0")
	wantError(t, root.submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 3, "userIds": []string{created.UserID, bobID}}), http.StatusBadRequest, 3, "parameters.threshold")
	wantError(t, root.submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 1, "userIds": []string{"nobody"}}), http.StatusBadRequest, 3, "parameters.userIds[0]")
	mustOK(t, root.submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 2, "userIds": []string{created.UserID, bobID}}))
	c = root.query("get_organization_configs", nil)
	if c.str("configs", "quorum", "threshold") != "2" {
		t.Fatalf("quorum not stored: %s", c.raw)
	}
	g := root.query("get_organization", nil)
	mustOK(t, g)
	if g.str("organizationData", "name") != "Acme Inc" || g.str("organizationData", "users", "1", "userName") == "" {
		t.Fatalf("get_organization: %s", g.raw)
	}
}

func TestUserAndTagUpdates(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	r := root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "a", "userIds": []string{created.UserID}})
	mustOK(t, r)
	tagA := r.str("activity", "result", "createUserTagResult", "userTagId")
	wantError(t, root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "a", "userIds": []string{}}), http.StatusConflict, 6, "already exists")
	r = root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "b", "userIds": []string{}})
	mustOK(t, r)
	tagB := r.str("activity", "result", "createUserTagResult", "userTagId")
	mustOK(t, root.submit("update_user_tag", "ACTIVITY_TYPE_UPDATE_USER_TAG", map[string]any{"userTagId": tagA, "newUserTagName": "a2", "addUserIds": []string{}, "removeUserIds": []string{created.UserID}}))
	mustOK(t, root.submit("update_user_tag", "ACTIVITY_TYPE_UPDATE_USER_TAG", map[string]any{"userTagId": tagB, "addUserIds": []string{created.UserID}, "removeUserIds": []string{}}))
	g := root.query("get_user", map[string]any{"userId": created.UserID})
	if g.str("user", "userTags") != `["`+tagB+`"]` {
		t.Fatalf("tags after update: %s", g.raw)
	}
	mustOK(t, root.submit("update_user", "ACTIVITY_TYPE_UPDATE_USER", map[string]any{"userId": created.UserID, "userName": "ada", "userEmail": "ada@example.com", "userTagIds": []string{tagA}, "userPhoneNumber": "+13214567890"}))
	g = root.query("get_user", map[string]any{"userId": created.UserID})
	if g.str("user", "userName") != "ada" || g.str("user", "userEmail") != "ada@example.com" || g.str("user", "userPhoneNumber") != "+13214567890" || g.str("user", "userTags") != `["`+tagA+`"]` {
		t.Fatalf("update_user: %s", g.raw)
	}
	wantError(t, root.submit("update_user_phone_number", "ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER", map[string]any{"userId": created.UserID, "userPhoneNumber": "555"}), http.StatusBadRequest, 3, "parameters.userPhoneNumber")
	mustOK(t, root.submit("update_user_name", "ACTIVITY_TYPE_UPDATE_USER_NAME", map[string]any{"userId": created.UserID, "userName": "root"}))
	mustOK(t, root.submit("update_user_email", "ACTIVITY_TYPE_UPDATE_USER_EMAIL", map[string]any{"userId": created.UserID, "userEmail": "root@example.com"}))
	l := root.query("list_user_tags", nil)
	if n := len(l.body["userTags"].([]any)); n != 2 {
		t.Fatalf("%d tags", n)
	}
	d := root.submit("delete_user_tags", "ACTIVITY_TYPE_DELETE_USER_TAGS", map[string]any{"userTagIds": []string{tagA, tagB}})
	mustOK(t, d)
	if d.str("activity", "result", "deleteUserTagsResult", "userIds") != `["`+created.UserID+`"]` {
		t.Fatalf("delete_user_tags: %s", d.raw)
	}
	// A failed activity is recorded as FAILED and the failure shown; nothing it wrote is kept.
	f := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{
		map[string]any{"userName": "ok", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}},
		map[string]any{"userName": "bad", "apiKeys": []any{map[string]any{"apiKeyName": "k", "publicKey": "nothex", "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	wantError(t, f, http.StatusBadRequest, 3, "parameters.users[1].apiKeys[0].publicKey")
	us := root.query("list_users", nil)
	if n := len(us.body["users"].([]any)); n != 1 {
		t.Fatalf("partial write: %d users", n)
	}
	fa := root.query("list_activities", map[string]any{"filterByStatus": []string{"ACTIVITY_STATUS_FAILED"}})
	mustOK(t, fa)
	found := false
	for _, a := range fa.body["activities"].([]any) {
		a := a.(map[string]any)
		if a["type"] == "ACTIVITY_TYPE_CREATE_USERS_V4" && a["failure"].(map[string]any)["code"].(float64) == 3 {
			found = true
		}
	}
	if !found {
		t.Fatalf("failed activity not recorded: %s", fa.raw)
	}
}
