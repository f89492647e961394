package server

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/stamp"
)

// harness is a Latchkey on SQLite in a temp dir behind httptest, with a clock tests can move.
type harness struct {
	t   testing.TB
	s   *Server
	url string
	now time.Time
	mu  sync.Mutex
}

func newHarness(t testing.TB) *harness { return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with the configuration adjusted by configure.
func newHarnessWith(t testing.TB, configure func(*Config)) *harness {
	t.Helper()
	dir := t.TempDir()
	mk := filepath.Join(dir, "master.key")
	if _, err := custody.GenerateMasterKeyFile(mk); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{DataDir: dir, MasterKeyFile: mk, Log: log}
	if configure != nil {
		configure(&cfg)
	}
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, s: s, now: time.Now().UTC()}
	s.API.Now = h.clock
	s.Engine.Services().Now = h.clock
	srv := httptest.NewServer(s.API.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	h.url = srv.URL
	return h
}

func (h *harness) clock() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.now
}

func (h *harness) advance(d time.Duration) {
	h.mu.Lock()
	h.now = h.now.Add(d)
	h.mu.Unlock()
}

// client is an API key.
type client struct {
	h    *harness
	org  string
	priv string
	pub  string
	st   stamp.Stamper
}

func (h *harness) newKey() (priv, pub string) {
	priv, pub, err := stamp.GenerateKey(stamp.CurveP256)
	if err != nil {
		h.t.Fatal(err)
	}
	return priv, pub
}

func (h *harness) client(org, priv string) *client {
	st, err := stamp.NewP256Stamper(priv)
	if err != nil {
		h.t.Fatal(err)
	}
	pub, _ := stamp.PublicKeyHex(stamp.CurveP256, priv)
	return &client{h: h, org: org, priv: priv, pub: pub, st: st}
}

// rootOrg creates a top-level organization and returns its root client.
func (h *harness) rootOrg(name string) (*client, Created) {
	priv, pub := h.newKey()
	c, err := h.s.CreateOrganization(context.Background(), OrgSpec{OrgName: name, UserName: "root", APIPublicKey: pub})
	if err != nil {
		h.t.Fatal(err)
	}
	return h.client(c.OrganizationID, priv), c
}

type response struct {
	status int
	body   map[string]any
	raw    []byte
}

func (r response) str(path ...string) string {
	var v any = r.body
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, _ := strconv.Atoi(p)
			if i < len(x) {
				v = x[i]
			} else {
				v = nil
			}
		default:
			return ""
		}
	}
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (c *client) post(path string, body []byte) response {
	c.h.t.Helper()
	name, value, err := c.st.Stamp(body)
	if err != nil {
		c.h.t.Fatal(err)
	}
	return c.h.raw(path, body, map[string]string{name: value})
}

func (h *harness) raw(path string, body []byte, headers map[string]string) response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url+path, bytes.NewReader(body))
	if err != nil {
		h.t.Fatalf("request to %q: %v", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func (c *client) submitBody(typ string, params any) []byte {
	p, _ := json.Marshal(params)
	return []byte(fmt.Sprintf(`{"parameters":%s,"organizationId":%q,"timestampMs":"%d","type":%q}`, p, c.org, c.h.clock().UnixMilli(), typ))
}

func (c *client) submit(op, typ string, params any) response {
	c.h.t.Helper()
	return c.post("/public/v1/submit/"+op, c.submitBody(typ, params))
}

func (c *client) query(op string, params map[string]any) response {
	c.h.t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["organizationId"] = c.org
	b, _ := json.Marshal(params)
	return c.post("/public/v1/query/"+op, b)
}

func mustOK(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.raw)
	}
	if s := r.str("activity", "status"); s != "" && s != "ACTIVITY_STATUS_COMPLETED" {
		t.Fatalf("activity status %s: %s", s, r.raw)
	}
}

func wantError(t *testing.T, r response, status int, code int, substr string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if got := int(r.body["code"].(float64)); got != code {
		t.Fatalf("code %d, want %d: %s", got, code, r.raw)
	}
	if !strings.Contains(r.str("message"), substr) {
		t.Fatalf("message %q does not contain %q", r.str("message"), substr)
	}
	if d := r.str("details", "0", "@type"); d != "type.googleapis.com/errors.v1.TurnkeyErrorDetail" {
		t.Fatalf("details[0].@type = %q: %s", d, r.raw)
	}
}

func TestWhoamiAndActivityShape(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	r := root.query("whoami", nil)
	mustOK(t, r)
	if r.str("organizationId") != created.OrganizationID || r.str("userId") != created.UserID || r.str("organizationName") != "Acme" || r.str("username") != "root" {
		t.Fatalf("whoami: %s", r.raw)
	}

	body := root.submitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "ops", "userIds": []string{created.UserID}})
	r = root.post("/public/v1/submit/create_user_tag", body)
	mustOK(t, r)
	a := r.body["activity"].(map[string]any)
	for _, k := range []string{"id", "organizationId", "status", "type", "intent", "result", "votes", "fingerprint", "canApprove", "canReject", "createdAt", "updatedAt"} {
		if _, ok := a[k]; !ok {
			t.Errorf("activity lacks %q", k)
		}
	}
	if r.str("activity", "createdAt", "seconds") == "" || !strings.HasPrefix(r.str("activity", "fingerprint"), "sha256:") {
		t.Errorf("timestamps must be strings and fingerprint sha256:..: %s", r.raw)
	}
	if r.str("activity", "intent", "createUserTagIntent", "userTagName") != "ops" {
		t.Errorf("intent not echoed: %s", r.raw)
	}
	tagID := r.str("activity", "result", "createUserTagResult", "userTagId")
	if tagID == "" {
		t.Fatalf("no userTagId: %s", r.raw)
	}
	if r.str("activity", "votes", "0", "userId") != created.UserID || r.str("activity", "votes", "0", "message") != string(body) {
		t.Errorf("initiator vote: %s", r.raw)
	}
	// The same bytes return the same activity.
	r2 := root.post("/public/v1/submit/create_user_tag", body)
	mustOK(t, r2)
	if r2.str("activity", "id") != r.str("activity", "id") {
		t.Fatalf("resubmission made a new activity")
	}
	// get_activity returns it exactly.
	g := root.query("get_activity", map[string]any{"activityId": r.str("activity", "id")})
	mustOK(t, g)
	if g.str("activity", "fingerprint") != r.str("activity", "fingerprint") {
		t.Fatalf("get_activity: %s", g.raw)
	}
	// The tag shows on the user.
	u := root.query("get_user", map[string]any{"userId": created.UserID})
	mustOK(t, u)
	if u.str("user", "userTags", "0") != tagID {
		t.Fatalf("get_user tags: %s", u.raw)
	}
	// list_activities filters.
	l := root.query("list_activities", map[string]any{"filterByType": []string{"ACTIVITY_TYPE_CREATE_USER_TAG"}})
	mustOK(t, l)
	if n := len(l.body["activities"].([]any)); n != 1 {
		t.Fatalf("list_activities: %d activities", n)
	}
}

func TestSubOrganizationsAndParentAccess(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Parent")
	subPriv, subPub := h.newKey()
	r := root.submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "child", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "alice", "userEmail": "alice@example.com", "apiKeys": []any{
			map[string]any{"apiKeyName": "k", "publicKey": subPub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}}},
	})
	mustOK(t, r)
	subID := r.str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	sub := h.client(subID, subPriv)
	w := sub.query("whoami", nil)
	mustOK(t, w)
	if w.str("organizationId") != subID || w.str("username") != "alice" {
		t.Fatalf("sub whoami: %s", w.raw)
	}
	// list_suborgs, with and without a filter.
	l := root.query("list_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": "ALICE@example.com"})
	mustOK(t, l)
	if l.str("organizationIds", "0") != subID {
		t.Fatalf("list_suborgs by email: %s", l.raw)
	}
	// The parent reads the sub-organization...
	parentInSub := h.client(subID, root.priv)
	mustOK(t, parentInSub.query("get_organization_configs", nil))
	mustOK(t, parentInSub.query("list_users", nil))
	// ...but cannot write in it.
	d := parentInSub.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}})
	wantError(t, d, http.StatusForbidden, 7, "parent organization")
	// A sub-organization cannot create sub-organizations.
	d = sub.submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "grandchild", "rootQuorumThreshold": 1, "rootUsers": []any{map[string]any{"userName": "x", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}}}})
	wantError(t, d, http.StatusForbidden, 7, "cannot be called by sub-organizations")
	// Unrelated organizations never see each other.
	other, _ := h.rootOrg("Other")
	stranger := h.client(subID, other.priv)
	wantError(t, stranger.query("whoami", nil), http.StatusUnauthorized, 16, "could not find public key in organization or its parent organization")
	// The sub-organization's root deletes it.
	mustOK(t, sub.submit("delete_sub_organization", "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION", map[string]any{"deleteWithoutExport": true}))
	l = root.query("list_suborgs", nil)
	mustOK(t, l)
	if n := len(l.body["organizationIds"].([]any)); n != 0 {
		t.Fatalf("sub-org still listed: %s", l.raw)
	}
}

func TestUsersKeysAndSessions(t *testing.T) {
	h := newHarness(t)
	root, created := h.rootOrg("Acme")
	bobPriv, bobPub := h.newKey()
	r := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{
		"userName": "bob", "userEmail": "bob@example.com", "apiKeys": []any{map[string]any{"apiKeyName": "bob", "publicKey": bobPub, "curveType": "API_KEY_CURVE_P256"}},
		"authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	mustOK(t, r)
	bobID := r.str("activity", "result", "createUsersResult", "userIds", "0")
	bob := h.client(created.OrganizationID, bobPriv)
	// Bob is not root: no tags, but his own keys are his to manage.
	wantError(t, bob.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}}), http.StatusForbidden, 7, "policy engine denied request implicitly")
	_, k2 := h.newKey()
	r = bob.submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": bobID, "apiKeys": []any{map[string]any{"apiKeyName": "second", "publicKey": k2, "curveType": "API_KEY_CURVE_P256"}}})
	mustOK(t, r)
	keyID := r.str("activity", "result", "createApiKeysResult", "apiKeyIds", "0")
	wantError(t, bob.submit("create_api_keys", "ACTIVITY_TYPE_CREATE_API_KEYS_V2", map[string]any{"userId": created.UserID, "apiKeys": []any{map[string]any{"apiKeyName": "evil", "publicKey": k2, "curveType": "API_KEY_CURVE_P256"}}}), http.StatusForbidden, 7, "policy engine denied request implicitly")
	keys := root.query("get_api_keys", map[string]any{"userId": bobID})
	mustOK(t, keys)
	if n := len(keys.body["apiKeys"].([]any)); n != 2 {
		t.Fatalf("bob has %d keys: %s", n, keys.raw)
	}
	mustOK(t, bob.submit("delete_api_keys", "ACTIVITY_TYPE_DELETE_API_KEYS", map[string]any{"userId": bobID, "apiKeyIds": []string{keyID}}))

	// A read-write session: decrypt the bundle, call with the key inside.
	recvPriv, recvPub := h.newKey()
	r = bob.submit("create_read_write_session", "ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2", map[string]any{"targetPublicKey": recvPub, "expirationSeconds": "60"})
	mustOK(t, r)
	res := r.body["activity"].(map[string]any)["result"].(map[string]any)["createReadWriteSessionResultV2"].(map[string]any)
	scalar, err := custody.DecryptCredentialBundle(res["credentialBundle"].(string), recvPriv)
	if err != nil {
		t.Fatal(err)
	}
	sess := h.client(created.OrganizationID, hex.EncodeToString(scalar))
	w := sess.query("whoami", nil)
	mustOK(t, w)
	if w.str("userId") != bobID {
		t.Fatalf("session whoami: %s", w.raw)
	}
	// It expires.
	h.advance(61 * time.Second)
	wantError(t, sess.query("whoami", nil), http.StatusUnauthorized, 16, "Unauthenticated desc = expired api key publicKey")

	// Older versions are accepted and answered in their own result member.
	r = root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V2", map[string]any{"users": []any{map[string]any{"userName": "carol", "apiKeys": []any{}, "authenticators": []any{}, "userTags": []any{}}}})
	mustOK(t, r)
	carolID := r.str("activity", "result", "createUsersResult", "userIds", "0")
	mustOK(t, root.submit("delete_users", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{carolID}}))

	// API-only users: the key works at once; a bad key is refused naming its field.
	davePriv, davePub := h.newKey()
	r = root.submit("create_api_only_users", "ACTIVITY_TYPE_CREATE_API_ONLY_USERS", map[string]any{"apiOnlyUsers": []any{map[string]any{
		"userName": "dave", "userTags": []any{}, "apiKeys": []any{map[string]any{"apiKeyName": "dave", "publicKey": davePub}}}}})
	mustOK(t, r)
	daveID := r.str("activity", "result", "createApiOnlyUsersResult", "userIds", "0")
	w = h.client(created.OrganizationID, davePriv).query("whoami", nil)
	mustOK(t, w)
	if w.str("userId") != daveID {
		t.Fatalf("api-only whoami: %s", w.raw)
	}
	wantError(t, root.submit("create_api_only_users", "ACTIVITY_TYPE_CREATE_API_ONLY_USERS", map[string]any{"apiOnlyUsers": []any{}}), http.StatusBadRequest, 3, "parameters.apiOnlyUsers")
	wantError(t, root.submit("create_api_only_users", "ACTIVITY_TYPE_CREATE_API_ONLY_USERS", map[string]any{"apiOnlyUsers": []any{map[string]any{
		"userName": "erin", "userTags": []any{}, "apiKeys": []any{map[string]any{"apiKeyName": "erin", "publicKey": "zz"}}}}}), http.StatusBadRequest, 3, "parameters.apiOnlyUsers[0].apiKeys[0]")
	wantError(t, root.submit("delete_users", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{created.UserID}}), http.StatusBadRequest, 9, "root quorum")
}

func TestErrors(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	body := root.submitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "x", "userIds": []string{}})
	// A tampered stamp.
	name, value, _ := root.st.Stamp(body)
	tampered := append([]byte{}, body...)
	tampered[len(tampered)-3] = 'y'
	wantError(t, h.raw("/public/v1/submit/create_user_tag", tampered, map[string]string{name: value}), http.StatusUnauthorized, 16, "invalid stamp")
	// No stamp.
	wantError(t, h.raw("/public/v1/submit/create_user_tag", body, nil), http.StatusUnauthorized, 16, "not stamped")
	// A stale timestamp.
	stale := []byte(strings.Replace(string(body), strconv.FormatInt(h.clock().UnixMilli(), 10), strconv.FormatInt(h.clock().Add(-2*time.Hour).UnixMilli(), 10), 1))
	wantError(t, root.post("/public/v1/submit/create_user_tag", stale), http.StatusBadRequest, 3, "timestampMs")
	// Malformed bodies.
	wantError(t, root.post("/public/v1/submit/create_user_tag", []byte(`{"type":`)), http.StatusBadRequest, 3, "malformed JSON")
	wantError(t, root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userIds": []string{}}), http.StatusBadRequest, 3, "parameters.userTagName is required")
	wantError(t, root.submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": 7, "userIds": []string{}}), http.StatusBadRequest, 3, "parameters.userTagName")
	wantError(t, root.submit("create_user_tag", "ACTIVITY_TYPE_DELETE_USERS", map[string]any{"userIds": []string{}}), http.StatusBadRequest, 3, "type")
	// Unknown and unsupported paths.
	wantError(t, root.submit("no_such_thing", "ACTIVITY_TYPE_X", map[string]any{}), http.StatusNotFound, 5, "unknown")
	wantError(t, root.submit("claim_swap_fees", "ACTIVITY_TYPE_CLAIM_SWAP_FEES", map[string]any{}), http.StatusNotImplemented, 12, "not supported by Latchkey")
	// A doubled slash (base URL ending in "/") works without a redirect.
	r := root.post("//public/v1/query/whoami", []byte(`{"organizationId":"`+root.org+`"}`))
	mustOK(t, r)
}

func TestConcurrentSubmits(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			body := root.submitBody("ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": fmt.Sprintf("t%d", i), "userIds": []string{}})
			name, value, _ := root.st.Stamp(body)
			req, _ := http.NewRequest(http.MethodPost, h.url+"/public/v1/submit/create_user_tag", bytes.NewReader(body))
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
	l := root.query("list_user_tags", nil)
	mustOK(t, l)
	if n := len(l.body["userTags"].([]any)); n != 40 {
		t.Fatalf("%d tags, want 40", n)
	}
}

func TestWellKnownKeys(t *testing.T) {
	h := newHarness(t)
	resp, err := http.Get(h.url + "/.well-known/latchkey.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pk PublicKeys
	if err := json.NewDecoder(resp.Body).Decode(&pk); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{pk.SignerPublicKey, pk.NotarizerPublicKey, pk.OTPPublicKey, pk.AppProofPublicKey} {
		if len(k) != 130 || !strings.HasPrefix(k, "04") || strings.ToLower(k) != k {
			t.Fatalf("public key %q is not lowercase uncompressed hex", k)
		}
	}
	if !reflect.DeepEqual(pk, h.s.PublicKeys()) {
		t.Fatal("well-known keys differ from the server's")
	}
}

// The master key and every private key stay out of the database file.
func TestNoSecretsInDatabase(t *testing.T) {
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	recvPriv, recvPub := h.newKey()
	r := root.submit("create_read_write_session", "ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2", map[string]any{"targetPublicKey": recvPub})
	mustOK(t, r)
	bundle := r.str("activity", "result", "createReadWriteSessionResultV2", "credentialBundle")
	scalar, err := custody.DecryptCredentialBundle(bundle, recvPriv)
	if err != nil {
		t.Fatal(err)
	}
	mk, _ := os.ReadFile(filepath.Join(h.s.cfg.DataDir, "master.key"))
	db := readAll(t, h.s.cfg.DataDir)
	for name, secret := range map[string]string{"master key": strings.TrimSpace(string(mk)), "session key": hex.EncodeToString(scalar), "root key": root.priv} {
		if bytes.Contains(db, []byte(secret)) {
			t.Errorf("%s found in the database files", name)
		}
		raw, _ := hex.DecodeString(secret)
		if bytes.Contains(db, raw) {
			t.Errorf("%s (raw bytes) found in the database files", name)
		}
	}
}

func readAll(t *testing.T, dir string) []byte {
	var out []byte
	for _, name := range []string{DatabaseFile, DatabaseFile + "-wal"} {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		out = append(out, b...)
	}
	return out
}
