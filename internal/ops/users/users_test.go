package users_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/servertest"
)

// Users in every create_users version and API-only users; a non-root user cannot manage tags,
// and the last root user cannot be deleted.
func TestUsersAndAPIOnlyUsers(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	bobPriv, bobPub := h.NewKey()
	r := root.Submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{
		"userName": "bob", "userEmail": "bob@example.com", "apiKeys": []any{map[string]any{"apiKeyName": "bob", "publicKey": bobPub, "curveType": "API_KEY_CURVE_P256"}},
		"authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	servertest.MustOK(t, r)
	bobID := r.Str("activity", "result", "createUsersResult", "userIds", "0")
	if u := root.MustQuery("get_user", map[string]any{"userId": bobID}); u.Str(
		"user",
		"userEmail",
	) != "bob@example.com" ||
		u.Str("user", "apiKeys", "0", "credential", "publicKey") != bobPub {
		t.Fatalf("get_user: %s", u.Raw)
	}
	bob := h.Client(created.OrganizationID, bobPriv)
	// Bob is not root: no tags.
	servertest.WantError(
		t,
		bob.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "x", "userIds": []string{}},
		),
		http.StatusForbidden,
		7,
		"policy engine denied request implicitly",
	)
	// Older versions are accepted and answered in their own result member.
	r = root.Submit(
		"create_users",
		"ACTIVITY_TYPE_CREATE_USERS_V2",
		map[string]any{
			"users": []any{
				map[string]any{"userName": "carol", "apiKeys": []any{}, "authenticators": []any{}, "userTags": []any{}},
			},
		},
	)
	servertest.MustOK(t, r)
	carolID := r.Str("activity", "result", "createUsersResult", "userIds", "0")
	servertest.MustOK(
		t,
		root.Submit("delete_users", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{carolID}}),
	)

	// API-only users: the key works at once; a bad key is refused naming its field.
	davePriv, davePub := h.NewKey()
	r = root.Submit(
		"create_api_only_users",
		"ACTIVITY_TYPE_CREATE_API_ONLY_USERS",
		map[string]any{"apiOnlyUsers": []any{map[string]any{
			"userName": "dave", "userTags": []any{}, "apiKeys": []any{map[string]any{"apiKeyName": "dave", "publicKey": davePub}}}}},
	)
	servertest.MustOK(t, r)
	daveID := r.Str("activity", "result", "createApiOnlyUsersResult", "userIds", "0")
	w := h.Client(created.OrganizationID, davePriv).Query("whoami", nil)
	servertest.MustOK(t, w)
	if w.Str("userId") != daveID {
		t.Fatalf("api-only whoami: %s", w.Raw)
	}
	servertest.WantError(
		t,
		root.Submit(
			"create_api_only_users",
			"ACTIVITY_TYPE_CREATE_API_ONLY_USERS",
			map[string]any{"apiOnlyUsers": []any{}},
		),
		http.StatusBadRequest,
		3,
		"parameters.apiOnlyUsers",
	)
	servertest.WantError(
		t,
		root.Submit(
			"create_api_only_users",
			"ACTIVITY_TYPE_CREATE_API_ONLY_USERS",
			map[string]any{"apiOnlyUsers": []any{map[string]any{
				"userName": "erin", "userTags": []any{}, "apiKeys": []any{map[string]any{"apiKeyName": "erin", "publicKey": "zz"}}}}},
		),
		http.StatusBadRequest,
		3,
		"parameters.apiOnlyUsers[0].apiKeys[0]",
	)
	servertest.WantError(
		t,
		root.Submit("delete_users", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{created.UserID}}),
		http.StatusBadRequest,
		9,
		"root quorum",
	)
}

func TestUserAndTagUpdates(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Submit(
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "a", "userIds": []string{created.UserID}},
	)
	servertest.MustOK(t, r)
	tagA := r.Str("activity", "result", "createUserTagResult", "userTagId")
	servertest.WantError(
		t,
		root.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "a", "userIds": []string{}},
		),
		http.StatusConflict,
		6,
		"already exists",
	)
	r = root.Submit(
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "b", "userIds": []string{}},
	)
	servertest.MustOK(t, r)
	tagB := r.Str("activity", "result", "createUserTagResult", "userTagId")
	servertest.MustOK(
		t,
		root.Submit(
			"update_user_tag",
			"ACTIVITY_TYPE_UPDATE_USER_TAG",
			map[string]any{
				"userTagId":      tagA,
				"newUserTagName": "a2",
				"addUserIds":     []string{},
				"removeUserIds":  []string{created.UserID},
			},
		),
	)
	servertest.MustOK(
		t,
		root.Submit(
			"update_user_tag",
			"ACTIVITY_TYPE_UPDATE_USER_TAG",
			map[string]any{"userTagId": tagB, "addUserIds": []string{created.UserID}, "removeUserIds": []string{}},
		),
	)
	g := root.Query("get_user", map[string]any{"userId": created.UserID})
	if g.Str("user", "userTags") != `["`+tagB+`"]` {
		t.Fatalf("tags after update: %s", g.Raw)
	}
	servertest.MustOK(
		t,
		root.Submit(
			"update_user",
			"ACTIVITY_TYPE_UPDATE_USER",
			map[string]any{
				"userId":          created.UserID,
				"userName":        "ada",
				"userEmail":       "ada@example.com",
				"userTagIds":      []string{tagA},
				"userPhoneNumber": "+13214567890",
			},
		),
	)
	g = root.Query("get_user", map[string]any{"userId": created.UserID})
	if g.Str("user", "userName") != "ada" || g.Str("user", "userEmail") != "ada@example.com" ||
		g.Str("user", "userPhoneNumber") != "+13214567890" ||
		g.Str("user", "userTags") != `["`+tagA+`"]` {
		t.Fatalf("update_user: %s", g.Raw)
	}
	servertest.WantError(
		t,
		root.Submit(
			"update_user_phone_number",
			"ACTIVITY_TYPE_UPDATE_USER_PHONE_NUMBER",
			map[string]any{"userId": created.UserID, "userPhoneNumber": "555"},
		),
		http.StatusBadRequest,
		3,
		"parameters.userPhoneNumber",
	)
	servertest.MustOK(
		t,
		root.Submit(
			"update_user_name",
			"ACTIVITY_TYPE_UPDATE_USER_NAME",
			map[string]any{"userId": created.UserID, "userName": "root"},
		),
	)
	servertest.MustOK(
		t,
		root.Submit(
			"update_user_email",
			"ACTIVITY_TYPE_UPDATE_USER_EMAIL",
			map[string]any{"userId": created.UserID, "userEmail": "root@example.com"},
		),
	)
	l := root.Query("list_user_tags", nil)
	if n := len(l.Body["userTags"].([]any)); n != 2 {
		t.Fatalf("%d tags", n)
	}
	d := root.Submit(
		"delete_user_tags",
		"ACTIVITY_TYPE_DELETE_USER_TAGS",
		map[string]any{"userTagIds": []string{tagA, tagB}},
	)
	servertest.MustOK(t, d)
	if d.Str("activity", "result", "deleteUserTagsResult", "userIds") != `["`+created.UserID+`"]` {
		t.Fatalf("delete_user_tags: %s", d.Raw)
	}
	// A failed activity is recorded as FAILED and the failure shown; nothing it wrote is kept.
	f := root.Submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{
		map[string]any{
			"userName":       "ok",
			"apiKeys":        []any{},
			"authenticators": []any{},
			"oauthProviders": []any{},
			"userTags":       []any{},
		},
		map[string]any{
			"userName": "bad",
			"apiKeys": []any{
				map[string]any{"apiKeyName": "k", "publicKey": "nothex", "curveType": "API_KEY_CURVE_P256"},
			},
			"authenticators": []any{},
			"oauthProviders": []any{},
			"userTags":       []any{},
		}}})
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

// The same create_users bytes twice are one user; a user name or e-mail that is not one is a 400
// naming the field; an organization cannot read or change another's users.
func TestUserRefusalsResubmissionAndOwnership(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	user := func(name, email string) map[string]any {
		return map[string]any{
			"users": []any{
				map[string]any{
					"userName":       name,
					"userEmail":      email,
					"apiKeys":        []any{},
					"authenticators": []any{},
					"oauthProviders": []any{},
					"userTags":       []any{},
				},
			},
		}
	}
	for _, tc := range []struct {
		name   string
		params map[string]any
		field  string
	}{
		{"no user name", user("", "a@example.com"), "parameters.users[0].userName"},
		{"not an e-mail address", user("ann", "not-an-address"), "parameters.users[0].userEmail"},
		{"no users", map[string]any{"users": []any{}}, "parameters.users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Advance(time.Millisecond)
			servertest.WantError(
				t,
				root.Submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", tc.params),
				http.StatusBadRequest,
				3,
				tc.field,
			)
		})
	}

	h.Advance(time.Millisecond)
	annID := root.SubmitTwice("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", user("ann", "ann@example.com")).
		Result("createUsersResult", "userIds", "0")
	if n := root.MustQuery("list_users", nil).Len("users"); n != 2 {
		t.Fatalf("%d users, want root and ann", n)
	}

	other, _ := h.RootOrg("Other")
	servertest.WantError(
		t,
		other.Query("get_user", map[string]any{"userId": annID}),
		http.StatusNotFound,
		5,
		"user not found",
	)
	h.Advance(time.Millisecond)
	if r := other.Submit("update_user_name", "ACTIVITY_TYPE_UPDATE_USER_NAME", map[string]any{"userId": annID, "userName": "taken"}); r.Status == http.StatusOK {
		t.Fatalf("another organization renamed ann: %s", r.Raw)
	}
	h.Advance(time.Millisecond)
	if r := other.Submit("delete_users", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{annID}}); r.Status == http.StatusOK {
		t.Fatalf("another organization deleted ann: %s", r.Raw)
	}
	if u := root.MustQuery("get_user", map[string]any{"userId": annID}); u.Str("user", "userName") != "ann" {
		t.Fatalf("ann after another organization's attempts: %s", u.Raw)
	}
}
