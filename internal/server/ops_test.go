package server_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

func TestPasskeyRegistrationAndWebAuthnStamp(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
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
		r := root.Submit("create_authenticators", "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2", map[string]any{
			"userId": created.UserID,
			"authenticators": []any{map[string]any{"authenticatorName": "laptop " + format, "challenge": base64.RawURLEncoding.EncodeToString(challenge),
				"attestation": reg}},
		})
		servertest.MustOK(t, r)
		authID := r.Str("activity", "result", "createAuthenticatorsResult", "authenticatorIds", "0")
		g := root.Query("get_authenticator", map[string]any{"authenticatorId": authID})
		servertest.MustOK(t, g)
		if g.Str("authenticator", "credentialId") != a.CredentialID() || g.Str("authenticator", "credential", "publicKey") != a.PublicKeyCompressed() ||
			g.Str("authenticator", "attestationType") != format {
			t.Fatalf("get_authenticator: %s", g.Raw)
		}
		// A request stamped by the passkey.
		passkey := &servertest.Client{H: h, Org: created.OrganizationID, Stamper: a}
		w := passkey.Query("whoami", nil)
		servertest.MustOK(t, w)
		if w.Str("userId") != created.UserID {
			t.Fatalf("whoami by passkey: %s", w.Raw)
		}
		servertest.MustOK(t, passkey.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "by passkey " + format, "userIds": []string{}}))
		// A stamp over other bytes does not verify.
		name, value, _ := a.Stamp([]byte(`{"organizationId":"` + created.OrganizationID + `"}`))
		bad := h.Post("/public/v1/query/whoami", []byte(`{"organizationId":"`+created.OrganizationID+`" }`), map[string]string{name: value})
		servertest.WantError(t, bad, http.StatusUnauthorized, 16, "invalid stamp")
		servertest.MustOK(t, root.Submit("delete_authenticators", "ACTIVITY_TYPE_DELETE_AUTHENTICATORS", map[string]any{"userId": created.UserID, "authenticatorIds": []string{authID}}))
		servertest.WantError(t, passkey.Query("whoami", nil), http.StatusUnauthorized, 16, "credential ID could not be found")
	}
	// A registration whose challenge does not match is refused, naming the field.
	a, _ := stamptest.New("localhost", "http://localhost:3000")
	reg, _ := a.Attest([]byte("one"), "none")
	r := root.Submit("create_authenticators", "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2", map[string]any{
		"userId": created.UserID, "authenticators": []any{map[string]any{"authenticatorName": "x", "challenge": base64.RawURLEncoding.EncodeToString([]byte("two")), "attestation": reg}}})
	servertest.WantError(t, r, http.StatusBadRequest, 3, "parameters.authenticators[0].attestation")
}

func TestOrganizationSettings(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Submit("update_organization_name", "ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME", map[string]any{"organizationName": "Acme Inc"})
	servertest.MustOK(t, r)
	if r.Str("activity", "result", "updateOrganizationNameResult", "organizationName") != "Acme Inc" {
		t.Fatalf("rename: %s", r.Raw)
	}
	r = root.Submit("set_organization_feature", "ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE", map[string]any{"name": "FEATURE_NAME_WEBAUTHN_ORIGINS", "value": "https://app.example"})
	servertest.MustOK(t, r)
	servertest.WantError(t, root.Submit("set_organization_feature", "ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE", map[string]any{"name": "FEATURE_NAME_NOPE", "value": "x"}), http.StatusBadRequest, 3, "parameters.name")
	c := root.Query("get_organization_configs", nil)
	servertest.MustOK(t, c)
	if c.Str("configs", "features", "0", "value") != "https://app.example" || c.Str("configs", "quorum", "threshold") != "1" || c.Str("configs", "quorum", "userIds", "0") != created.UserID {
		t.Fatalf("configs: %s", c.Raw)
	}
	servertest.MustOK(t, root.Submit("remove_organization_feature", "ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE", map[string]any{"name": "FEATURE_NAME_WEBAUTHN_ORIGINS"}))

	// Root quorum: add a second root user, threshold 2, validated.
	_, bobPub := h.NewKey()
	u := root.Submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
		map[string]any{"apiKeyName": "b", "publicKey": bobPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	servertest.MustOK(t, u)
	bobID := u.Str("activity", "result", "createUsersResult", "userIds", "0")
	servertest.WantError(t, root.Submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 3, "userIds": []string{created.UserID, bobID}}), http.StatusBadRequest, 3, "parameters.threshold")
	servertest.WantError(t, root.Submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 1, "userIds": []string{"nobody"}}), http.StatusBadRequest, 3, "parameters.userIds[0]")
	servertest.MustOK(t, root.Submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 2, "userIds": []string{created.UserID, bobID}}))
	c = root.Query("get_organization_configs", nil)
	if c.Str("configs", "quorum", "threshold") != "2" {
		t.Fatalf("quorum not stored: %s", c.Raw)
	}
	g := root.Query("get_organization", nil)
	servertest.MustOK(t, g)
	if g.Str("organizationData", "name") != "Acme Inc" || g.Str("organizationData", "users", "1", "userName") == "" {
		t.Fatalf("get_organization: %s", g.Raw)
	}
}

func TestUserAndTagUpdates(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "a", "userIds": []string{created.UserID}})
	servertest.MustOK(t, r)
	tagA := r.Str("activity", "result", "createUserTagResult", "userTagId")
	servertest.WantError(t, root.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "a", "userIds": []string{}}), http.StatusConflict, 6, "already exists")
	r = root.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "b", "userIds": []string{}})
	servertest.MustOK(t, r)
	tagB := r.Str("activity", "result", "createUserTagResult", "userTagId")
	servertest.MustOK(t, root.Submit("update_user_tag", "ACTIVITY_TYPE_UPDATE_USER_TAG", map[string]any{"userTagId": tagA, "newUserTagName": "a2", "addUserIds": []string{}, "removeUserIds": []string{created.UserID}}))
	servertest.MustOK(t, root.Submit("update_user_tag", "ACTIVITY_TYPE_UPDATE_USER_TAG", map[string]any{"userTagId": tagB, "addUserIds": []string{created.UserID}, "removeUserIds": []string{}}))
	g := root.Query("get_user", map[string]any{"userId": created.UserID})
	if g.Str("user", "userTags") != `["`+tagB+`"]` {
		t.Fatalf("tags after update: %s", g.Raw)
	}
	servertest.MustOK(t, root.Submit("update_user", "ACTIVITY_TYPE_UPDATE_USER", map[string]any{"userId": created.UserID, "userName": "ada", "userEmail": "ada@example.com", "userTagIds": []string{tagA}, "userPhoneNumber": "+13214567890"}))
	g = root.Query("get_user", map[string]any{"userId": created.UserID})
	if g.Str("user", "userName") != "ada" || g.Str("user", "userEmail") != "ada@example.com" || g.Str("user", "userPhoneNumber") != "+13214567890" || g.Str("user", "userTags") != `["`+tagA+`"]` {
		t.Fatalf("update_user: %s", g.Raw)
	}
	servertest.WantError(t, root.Submit("update_user_phone_number", "ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER", map[string]any{"userId": created.UserID, "userPhoneNumber": "555"}), http.StatusBadRequest, 3, "parameters.userPhoneNumber")
	servertest.MustOK(t, root.Submit("update_user_name", "ACTIVITY_TYPE_UPDATE_USER_NAME", map[string]any{"userId": created.UserID, "userName": "root"}))
	servertest.MustOK(t, root.Submit("update_user_email", "ACTIVITY_TYPE_UPDATE_USER_EMAIL", map[string]any{"userId": created.UserID, "userEmail": "root@example.com"}))
	l := root.Query("list_user_tags", nil)
	if n := len(l.Body["userTags"].([]any)); n != 2 {
		t.Fatalf("%d tags", n)
	}
	d := root.Submit("delete_user_tags", "ACTIVITY_TYPE_DELETE_USER_TAGS", map[string]any{"userTagIds": []string{tagA, tagB}})
	servertest.MustOK(t, d)
	if d.Str("activity", "result", "deleteUserTagsResult", "userIds") != `["`+created.UserID+`"]` {
		t.Fatalf("delete_user_tags: %s", d.Raw)
	}
	// A failed activity is recorded as FAILED and the failure shown; nothing it wrote is kept.
	f := root.Submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{
		map[string]any{"userName": "ok", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}},
		map[string]any{"userName": "bad", "apiKeys": []any{map[string]any{"apiKeyName": "k", "publicKey": "nothex", "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	servertest.WantError(t, f, http.StatusBadRequest, 3, "parameters.users[1].apiKeys[0].publicKey")
	us := root.Query("list_users", nil)
	if n := len(us.Body["users"].([]any)); n != 1 {
		t.Fatalf("partial write: %d users", n)
	}
	fa := root.Query("list_activities", map[string]any{"filterByStatus": []string{"ACTIVITY_STATUS_FAILED"}})
	servertest.MustOK(t, fa)
	found := false
	for _, a := range fa.Body["activities"].([]any) {
		a := a.(map[string]any)
		if a["type"] == "ACTIVITY_TYPE_CREATE_USERS_V4" && a["failure"].(map[string]any)["code"].(float64) == 3 {
			found = true
		}
	}
	if !found {
		t.Fatalf("failed activity not recorded: %s", fa.Raw)
	}
}
