package server_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
)

func TestWhoamiAndActivityShape(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Query("whoami", nil)
	servertest.MustOK(t, r)
	if r.Str("organizationId") != created.OrganizationID || r.Str("userId") != created.UserID || r.Str("organizationName") != "Acme" || r.Str("username") != "root" {
		t.Fatalf("whoami: %s", r.Raw)
	}

	body := root.SubmitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "ops", "userIds": []string{created.UserID}})
	r = root.Post("/public/v1/submit/create_user_tag", body)
	servertest.MustOK(t, r)
	a := r.Body["activity"].(map[string]any)
	for _, k := range []string{"id", "organizationId", "status", "type", "intent", "result", "votes", "fingerprint", "canApprove", "canReject", "createdAt", "updatedAt"} {
		if _, ok := a[k]; !ok {
			t.Errorf("activity lacks %q", k)
		}
	}
	if r.Str("activity", "createdAt", "seconds") == "" || !strings.HasPrefix(r.Str("activity", "fingerprint"), "sha256:") {
		t.Errorf("timestamps must be strings and fingerprint sha256:..: %s", r.Raw)
	}
	if r.Str("activity", "intent", "createUserTagIntent", "userTagName") != "ops" {
		t.Errorf("intent not echoed: %s", r.Raw)
	}
	tagID := r.Str("activity", "result", "createUserTagResult", "userTagId")
	if tagID == "" {
		t.Fatalf("no userTagId: %s", r.Raw)
	}
	if r.Str("activity", "votes", "0", "userId") != created.UserID || r.Str("activity", "votes", "0", "message") != string(body) {
		t.Errorf("initiator vote: %s", r.Raw)
	}
	// The same bytes return the same activity.
	r2 := root.Post("/public/v1/submit/create_user_tag", body)
	servertest.MustOK(t, r2)
	if r2.Str("activity", "id") != r.Str("activity", "id") {
		t.Fatalf("resubmission made a new activity")
	}
	// get_activity returns it exactly.
	g := root.Query("get_activity", map[string]any{"activityId": r.Str("activity", "id")})
	servertest.MustOK(t, g)
	if g.Str("activity", "fingerprint") != r.Str("activity", "fingerprint") {
		t.Fatalf("get_activity: %s", g.Raw)
	}
	// The tag shows on the user.
	u := root.Query("get_user", map[string]any{"userId": created.UserID})
	servertest.MustOK(t, u)
	if u.Str("user", "userTags", "0") != tagID {
		t.Fatalf("get_user tags: %s", u.Raw)
	}
	// list_activities filters.
	l := root.Query("list_activities", map[string]any{"filterByType": []string{"ACTIVITY_TYPE_CREATE_USER_TAG"}})
	servertest.MustOK(t, l)
	if n := len(l.Body["activities"].([]any)); n != 1 {
		t.Fatalf("list_activities: %d activities", n)
	}
}

func TestSubOrganizationsAndParentAccess(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Parent")
	subPriv, subPub := h.NewKey()
	r := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "child", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "alice", "userEmail": "alice@example.com", "apiKeys": []any{
			map[string]any{"apiKeyName": "k", "publicKey": subPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}}},
	})
	servertest.MustOK(t, r)
	subID := r.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	sub := h.Client(subID, subPriv)
	w := sub.Query("whoami", nil)
	servertest.MustOK(t, w)
	if w.Str("organizationId") != subID || w.Str("username") != "alice" {
		t.Fatalf("sub whoami: %s", w.Raw)
	}
	// list_suborgs, with and without a filter.
	l := root.Query("list_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": "ALICE@example.com"})
	servertest.MustOK(t, l)
	if l.Str("organizationIds", "0") != subID {
		t.Fatalf("list_suborgs by email: %s", l.Raw)
	}
	// The parent reads the sub-organization...
	parentInSub := h.Client(subID, root.Priv)
	servertest.MustOK(t, parentInSub.Query("get_organization_configs", nil))
	servertest.MustOK(t, parentInSub.Query("list_users", nil))
	// ...but cannot write in it.
	d := parentInSub.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}})
	servertest.WantError(t, d, http.StatusForbidden, 7, "parent organization")
	// A sub-organization cannot create sub-organizations.
	d = sub.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "grandchild", "rootQuorumThreshold": 1, "rootUsers": []any{map[string]any{"userName": "x", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}}}})
	servertest.WantError(t, d, http.StatusForbidden, 7, "cannot be called by sub-organizations")
	// Unrelated organizations never see each other.
	other, _ := h.RootOrg("Other")
	stranger := h.Client(subID, other.Priv)
	servertest.WantError(t, stranger.Query("whoami", nil), http.StatusUnauthorized, 16, "could not find public key in organization or its parent organization")
	// The sub-organization's root deletes it.
	servertest.MustOK(t, sub.Submit("delete_sub_organization", "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION", map[string]any{"deleteWithoutExport": true}))
	l = root.Query("list_suborgs", nil)
	servertest.MustOK(t, l)
	if n := len(l.Body["organizationIds"].([]any)); n != 0 {
		t.Fatalf("sub-org still listed: %s", l.Raw)
	}
}

func TestUsersKeysAndSessions(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	bobPriv, bobPub := h.NewKey()
	r := root.Submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{
		"userName": "bob", "userEmail": "bob@example.com", "apiKeys": []any{map[string]any{"apiKeyName": "bob", "publicKey": bobPub, "curveType": "API_KEY_CURVE_P256"}},
		"authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	servertest.MustOK(t, r)
	bobID := r.Str("activity", "result", "createUsersResult", "userIds", "0")
	bob := h.Client(created.OrganizationID, bobPriv)
	// Bob is not root: no tags, but his own keys are his to manage.
	servertest.WantError(t, bob.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}}), http.StatusForbidden, 7, "policy engine denied request implicitly")
	_, k2 := h.NewKey()
	r = bob.Submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": bobID, "apiKeys": []any{map[string]any{"apiKeyName": "second", "publicKey": k2, "curveType": "API_KEY_CURVE_P256"}}})
	servertest.MustOK(t, r)
	keyID := r.Str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	servertest.WantError(t, bob.Submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": created.UserID, "apiKeys": []any{map[string]any{"apiKeyName": "evil", "publicKey": k2, "curveType": "API_KEY_CURVE_P256"}}}), http.StatusForbidden, 7, "policy engine denied request implicitly")
	keys := root.Query("get_api_keys", map[string]any{"userId": bobID})
	servertest.MustOK(t, keys)
	if n := len(keys.Body["apiKeys"].([]any)); n != 2 {
		t.Fatalf("bob has %d keys: %s", n, keys.Raw)
	}
	servertest.MustOK(t, bob.Submit("delete_api_keys", "ACTIVITY_TYPE_DELETE_API_KEYS", map[string]any{"userId": bobID, "apiKeyIds": []string{keyID}}))

	// A read-write session: decrypt the bundle, call with the key inside.
	recvPriv, recvPub := h.NewKey()
	r = bob.Submit("create_read_write_session", "ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2", map[string]any{"targetPublicKey": recvPub, "expirationSeconds": "60"})
	servertest.MustOK(t, r)
	res := r.Body["activity"].(map[string]any)["result"].(map[string]any)["createReadWriteSessionResultV2"].(map[string]any)
	scalar, err := custody.DecryptCredentialBundle(res["credentialBundle"].(string), recvPriv)
	if err != nil {
		t.Fatal(err)
	}
	sess := h.Client(created.OrganizationID, hex.EncodeToString(scalar))
	w := sess.Query("whoami", nil)
	servertest.MustOK(t, w)
	if w.Str("userId") != bobID {
		t.Fatalf("session whoami: %s", w.Raw)
	}
	// It expires.
	h.Advance(61 * time.Second)
	servertest.WantError(t, sess.Query("whoami", nil), http.StatusUnauthorized, 16, "Unauthenticated desc = expired api key publicKey")

	// Older versions are accepted and answered in their own result member.
	r = root.Submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V2", map[string]any{"users": []any{map[string]any{"userName": "carol", "apiKeys": []any{}, "authenticators": []any{}, "userTags": []any{}}}})
	servertest.MustOK(t, r)
	carolID := r.Str("activity", "result", "createUsersResult", "userIds", "0")
	servertest.MustOK(t, root.Submit("delete_users", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{carolID}}))

	// API-only users: the key works at once; a bad key is refused naming its field.
	davePriv, davePub := h.NewKey()
	r = root.Submit("create_api_only_users", "ACTIVITY_TYPE_CREATE_API_ONLY_USERS", map[string]any{"apiOnlyUsers": []any{map[string]any{
		"userName": "dave", "userTags": []any{}, "apiKeys": []any{map[string]any{"apiKeyName": "dave", "publicKey": davePub}}}}})
	servertest.MustOK(t, r)
	daveID := r.Str("activity", "result", "createApiOnlyUsersResult", "userIds", "0")
	w = h.Client(created.OrganizationID, davePriv).Query("whoami", nil)
	servertest.MustOK(t, w)
	if w.Str("userId") != daveID {
		t.Fatalf("api-only whoami: %s", w.Raw)
	}
	servertest.WantError(t, root.Submit("create_api_only_users", "ACTIVITY_TYPE_CREATE_API_ONLY_USERS", map[string]any{"apiOnlyUsers": []any{}}), http.StatusBadRequest, 3, "parameters.apiOnlyUsers")
	servertest.WantError(t, root.Submit("create_api_only_users", "ACTIVITY_TYPE_CREATE_API_ONLY_USERS", map[string]any{"apiOnlyUsers": []any{map[string]any{
		"userName": "erin", "userTags": []any{}, "apiKeys": []any{map[string]any{"apiKeyName": "erin", "publicKey": "zz"}}}}}), http.StatusBadRequest, 3, "parameters.apiOnlyUsers[0].apiKeys[0]")
	servertest.WantError(t, root.Submit("delete_users", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{created.UserID}}), http.StatusBadRequest, 9, "root quorum")
}

func TestErrors(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	body := root.SubmitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}})
	// A tampered stamp.
	name, value, _ := root.Stamper.Stamp(body)
	tampered := append([]byte{}, body...)
	tampered[len(tampered)-3] = 'y'
	servertest.WantError(t, h.Post("/public/v1/submit/create_user_tag", tampered, map[string]string{name: value}), http.StatusUnauthorized, 16, "invalid stamp")
	// No stamp.
	servertest.WantError(t, h.Post("/public/v1/submit/create_user_tag", body, nil), http.StatusUnauthorized, 16, "not stamped")
	// A stale timestamp.
	stale := []byte(strings.Replace(string(body), strconv.FormatInt(h.Now().UnixMilli(), 10), strconv.FormatInt(h.Now().Add(-2*time.Hour).UnixMilli(), 10), 1))
	servertest.WantError(t, root.Post("/public/v1/submit/create_user_tag", stale), http.StatusBadRequest, 3, "timestampMs")
	// Malformed bodies.
	servertest.WantError(t, root.Post("/public/v1/submit/create_user_tag", []byte(`{"type":`)), http.StatusBadRequest, 3, "malformed JSON")
	servertest.WantError(t, root.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userIds": []string{}}), http.StatusBadRequest, 3, "parameters.userTagName is required")
	servertest.WantError(t, root.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": 7, "userIds": []string{}}), http.StatusBadRequest, 3, "parameters.userTagName")
	servertest.WantError(t, root.Submit("create_user_tag", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{}}), http.StatusBadRequest, 3, "type")
	// Unknown and unsupported paths.
	servertest.WantError(t, root.Submit("no_such_thing", "ACTIVITY_TYPE_X", map[string]any{}), http.StatusNotFound, 5, "unknown")
	servertest.WantError(t, root.Submit("claim_swap_fees", "ACTIVITY_TYPE_CLAIM_SWAP_FEES", map[string]any{}), http.StatusNotImplemented, 12, "not supported by Latchkey")
	// A doubled slash (base URL ending in "/") works without a redirect.
	r := root.Post("//public/v1/query/whoami", []byte(`{"organizationId":"`+root.Org+`"}`))
	servertest.MustOK(t, r)
}

func TestConcurrentSubmits(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := root.SubmitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": fmt.Sprintf("t%d", i), "userIds": []string{}})
			name, value, _ := root.Stamper.Stamp(body)
			req, _ := http.NewRequest(http.MethodPost, h.URL+"/public/v1/submit/create_user_tag", bytes.NewReader(body))
			req.Header.Set(name, value)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- resp.Status
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	l := root.Query("list_user_tags", nil)
	servertest.MustOK(t, l)
	if n := len(l.Body["userTags"].([]any)); n != 40 {
		t.Fatalf("%d tags, want 40", n)
	}
}

func TestWellKnownKeys(t *testing.T) {
	h := servertest.New(t)
	resp, err := http.Get(h.URL + "/.well-known/latchkey.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pk server.PublicKeys
	if err := json.NewDecoder(resp.Body).Decode(&pk); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{pk.SignerPublicKey, pk.NotarizerPublicKey, pk.OTPPublicKey, pk.AppProofPublicKey} {
		if len(k) != 130 || !strings.HasPrefix(k, "04") || strings.ToLower(k) != k {
			t.Fatalf("public key %q is not lowercase uncompressed hex", k)
		}
	}
	if pk != h.Server.PublicKeys() {
		t.Fatal("well-known keys differ from the server's")
	}
}

// The master key and every private key stay out of the database file.
func TestNoSecretsInDatabase(t *testing.T) {
	h := servertest.New(t, servertest.SQLite())
	root, _ := h.RootOrg("Acme")
	recvPriv, recvPub := h.NewKey()
	r := root.Submit("create_read_write_session", "ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2", map[string]any{"targetPublicKey": recvPub})
	servertest.MustOK(t, r)
	bundle := r.Str("activity", "result", "createReadWriteSessionResultV2", "credentialBundle")
	scalar, err := custody.DecryptCredentialBundle(bundle, recvPriv)
	if err != nil {
		t.Fatal(err)
	}
	mk, _ := os.ReadFile(filepath.Join(h.DataDir, "master.key"))
	db := h.DatabaseBytes()
	for name, secret := range map[string]string{"master key": strings.TrimSpace(string(mk)), "session key": hex.EncodeToString(scalar), "root key": root.Priv} {
		if bytes.Contains(db, []byte(secret)) {
			t.Errorf("%s found in the database files", name)
		}
		raw, _ := hex.DecodeString(secret)
		if bytes.Contains(db, raw) {
			t.Errorf("%s (raw bytes) found in the database files", name)
		}
	}
}
