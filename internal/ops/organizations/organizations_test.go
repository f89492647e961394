package organizations_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/records/recordstest"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

func TestSubOrganizationsAndParentAccess(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Parent")
	subPriv, subPub := h.NewKey()
	r := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "child", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "alice", "userEmail": "alice@example.com", "apiKeys": []any{
			map[string]any{
				"apiKeyName": "k",
				"publicKey":  subPub,
				"curveType":  "API_KEY_CURVE_P256",
			}}, "authenticators": []any{}, "oauthProviders": []any{}}},
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
	d := parentInSub.Submit(
		"create_user_tag",
		"ACTIVITY_TYPE_CREATE_USER_TAG",
		map[string]any{"userTagName": "x", "userIds": []string{}},
	)
	servertest.WantError(t, d, http.StatusForbidden, 7, "parent organization")
	// A sub-organization cannot create sub-organizations.
	d = sub.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "grandchild", "rootQuorumThreshold": 1, "rootUsers": []any{map[string]any{"userName": "x", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}}}})
	servertest.WantError(t, d, http.StatusForbidden, 7, "cannot be called by sub-organizations")
	// Unrelated organizations never see each other.
	other, _ := h.RootOrg("Other")
	stranger := h.Client(subID, other.Priv)
	servertest.WantError(
		t,
		stranger.Query("whoami", nil),
		http.StatusUnauthorized,
		16,
		"could not find public key in organization or its parent organization",
	)
	// The sub-organization's root deletes it.
	servertest.MustOK(
		t,
		sub.Submit(
			"delete_sub_organization",
			"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION",
			map[string]any{"deleteWithoutExport": true},
		),
	)
	l = root.Query("list_suborgs", nil)
	servertest.MustOK(t, l)
	if n := len(l.Body["organizationIds"].([]any)); n != 0 {
		t.Fatalf("sub-org still listed: %s", l.Raw)
	}
}

func TestOrganizationSettings(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	r := root.Submit(
		"update_organization_name",
		"ACTIVITY_TYPE_UPDATE_ORGANIZATION_NAME",
		map[string]any{"organizationName": "Acme Inc"},
	)
	servertest.MustOK(t, r)
	if r.Str("activity", "result", "updateOrganizationNameResult", "organizationName") != "Acme Inc" {
		t.Fatalf("rename: %s", r.Raw)
	}
	r = root.Submit(
		"set_organization_feature",
		"ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE",
		map[string]any{"name": "FEATURE_NAME_WEBAUTHN_ORIGINS", "value": "https://app.example"},
	)
	servertest.MustOK(t, r)
	servertest.WantError(
		t,
		root.Submit(
			"set_organization_feature",
			"ACTIVITY_TYPE_SET_ORGANIZATION_FEATURE",
			map[string]any{"name": "FEATURE_NAME_NOPE", "value": "x"},
		),
		http.StatusBadRequest,
		3,
		"parameters.name",
	)
	c := root.Query("get_organization_configs", nil)
	servertest.MustOK(t, c)
	if c.Str("configs", "features", "0", "value") != "https://app.example" ||
		c.Str("configs", "quorum", "threshold") != "1" ||
		c.Str("configs", "quorum", "userIds", "0") != created.UserID {
		t.Fatalf("configs: %s", c.Raw)
	}
	servertest.MustOK(
		t,
		root.Submit(
			"remove_organization_feature",
			"ACTIVITY_TYPE_REMOVE_ORGANIZATION_FEATURE",
			map[string]any{"name": "FEATURE_NAME_WEBAUTHN_ORIGINS"},
		),
	)

	// Root quorum: add a second root user, threshold 2, validated.
	_, bobPub := h.NewKey()
	u := root.Submit(
		"create_users",
		"ACTIVITY_TYPE_CREATE_USERS_V4",
		map[string]any{"users": []any{map[string]any{"userName": "bob", "apiKeys": []any{
			map[string]any{
				"apiKeyName": "b",
				"publicKey":  bobPub,
				"curveType":  "API_KEY_CURVE_P256",
			}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}},
	)
	servertest.MustOK(t, u)
	bobID := u.Str("activity", "result", "createUsersResult", "userIds", "0")
	servertest.WantError(
		t,
		root.Submit(
			"update_root_quorum",
			"ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
			map[string]any{"threshold": 3, "userIds": []string{created.UserID, bobID}},
		),
		http.StatusBadRequest,
		3,
		"parameters.threshold",
	)
	servertest.WantError(
		t,
		root.Submit(
			"update_root_quorum",
			"ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
			map[string]any{"threshold": 1, "userIds": []string{"nobody"}},
		),
		http.StatusBadRequest,
		3,
		"parameters.userIds[0]",
	)
	servertest.MustOK(
		t,
		root.Submit(
			"update_root_quorum",
			"ACTIVITY_TYPE_UPDATE_ROOT_QUORUM",
			map[string]any{"threshold": 2, "userIds": []string{created.UserID, bobID}},
		),
	)
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

// notOwnedByAnOrganization are the record kinds that belong to the deployment, not to an
// organization, with the reason: deleting a sub-organization leaves them. Every other kind
// Latchkey declares must be gone with the sub-organization (a new kind fails the test below until
// it is deleted with its organization or listed here).
var notOwnedByAnOrganization = map[string]string{
	"keyring":          "the deployment's data keys",
	"seal":             "how the deployment's master key is sealed (transit)",
	"server_key":       "the deployment's identity keys",
	"operator":         "dashboard operators are the deployment's",
	"operator_session": "dashboard sessions belong to operators",
	"operator_signin":  "dashboard sign-in counters belong to e-mails and addresses",
	"operator_audit":   "the operators' audit trail outlives what it records",
	"organization":     "the organization record itself: owned by its parent, deleted by the activity (checked below)",
	"balance_cursor":   "the chain follower's position per network, shared by every organization",
	"paymaster_nonce":  "the gas-station paymaster's next nonce per network: one sequence for the deployment",
	"outgoing_message": "the e-mail/SMS outbox is the deployment's: an acknowledged message is still sent, then removed",
	"webhook_delivery": "the webhook outbox is the deployment's: a sub-organization's activities (its deletion too) go to its parent's endpoints",
}

// Deleting a sub-organization removes every record it owns, of every kind the registered
// packages declare (Server.OwnedKinds), and nothing of its parent's. Every kind found under an
// organization is declared by some package, and every kind constant in the sources is either
// declared or listed in notOwnedByAnOrganization.
func TestDeletingASubOrganizationLeavesNothing(t *testing.T) {
	h := servertest.New(t)
	ctx := context.Background()
	root, created := h.RootOrg("Parent")
	subPriv, subPub := h.NewKey()
	r := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "child", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "alice", "userEmail": "alice@example.com",
			"apiKeys": []any{
				map[string]any{"apiKeyName": "k", "publicKey": subPub, "curveType": "API_KEY_CURVE_P256"},
			},
			"authenticators": []any{}, "oauthProviders": []any{}}},
		"wallet": map[string]any{"walletName": "w", "accounts": []any{map[string]any{"curve": "CURVE_SECP256K1",
			"pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}}})
	servertest.MustOK(t, r)
	subID := r.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	sub := h.Client(subID, subPriv)
	servertest.MustOK(
		t,
		sub.Submit(
			"create_user_tag",
			"ACTIVITY_TYPE_CREATE_USER_TAG",
			map[string]any{"userTagName": "t", "userIds": []string{}},
		),
	)

	owned := h.Server.OwnedKinds()
	declared := map[string]bool{}
	for _, k := range owned {
		if why, ok := notOwnedByAnOrganization[k]; ok {
			t.Errorf(
				"kind %q is declared owned by an organization by a package's Register, and listed in notOwnedByAnOrganization (%s)",
				k,
				why,
			)
		}
		declared[k] = true
	}
	// Every kind constant of the sources is declared by a package's Register or listed as the
	// deployment's: a new kind that is neither fails here.
	inSource, err := recordstest.DeclaredKinds(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range inSource {
		if _, ok := notOwnedByAnOrganization[k]; !ok && !declared[k] {
			t.Errorf(
				"kind %q is declared by no package's Register: return it from the Register of the package that keeps it under an organization, or list it in notOwnedByAnOrganization with the reason",
				k,
			)
		}
	}

	// Beside the real records, one of every declared kind the activities above did not create.
	countIn := func(orgID string) map[string]int {
		n := map[string]int{}
		h.Server.Store.View(ctx, func(rd store.Reader) error {
			for _, k := range append(owned, inSource...) {
				recs, err := rd.List(ctx, k, orgID, store.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				n[k] = len(recs)
			}
			return nil
		})
		return n
	}
	made := countIn(subID)
	now := time.Now().UTC()
	if err := h.Server.Store.Update(ctx, func(tx store.Tx) error {
		for _, k := range owned {
			if made[k] > 0 {
				continue
			}
			if err := tx.Insert(ctx, store.Record{Kind: k, ID: "owned-" + k, OrgID: subID, Data: []byte(`{}`), CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	inSub := countIn(subID)
	for _, k := range owned {
		if inSub[k] == 0 {
			t.Errorf("no %q record was created in the sub-organization: the test does not cover that kind", k)
		}
	}
	// Every kind found under an organization (the parent's and the sub-organization's records)
	// is declared by some package.
	exp, ok := h.Server.Store.(store.Exporter)
	if !ok {
		t.Fatalf("%T is not a store.Exporter", h.Server.Store)
	}
	byKind, err := exp.RecordKinds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	underOrg := func(kind string) (orgs map[string]bool) {
		orgs = map[string]bool{}
		if err := exp.EachRecord(ctx, kind, func(rec store.Record, _ []store.Key) error {
			if rec.OrgID != "" {
				orgs[rec.OrgID] = true
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return orgs
	}
	for k := range byKind {
		if k == "organization" || declared[k] {
			continue
		}
		if orgs := underOrg(k); len(orgs) > 0 {
			t.Errorf("%q records are kept under an organization but no package's Register declares the kind", k)
		}
	}
	before := countIn(created.OrganizationID)

	servertest.MustOK(
		t,
		sub.Submit(
			"delete_sub_organization",
			"ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION",
			map[string]any{"deleteWithoutExport": true},
		),
	)

	for k, n := range countIn(subID) {
		if n > 0 {
			t.Errorf(
				"%d %q record(s) of the deleted sub-organization are left: delete the kind with its organization, or list it in notOwnedByAnOrganization with the reason",
				n,
				k,
			)
		}
	}
	// Nothing at all is left under the sub-organization, whatever its kind.
	byKind, err = exp.RecordKinds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range byKind {
		if underOrg(k)[subID] {
			t.Errorf("%q records of the deleted sub-organization are left", k)
		}
	}
	h.Server.Store.View(ctx, func(rd store.Reader) error {
		if _, err := rd.Get(ctx, "organization", subID); err == nil {
			t.Error("the sub-organization's own record is left")
		}
		return nil
	})
	// The parent keeps everything of its own (the delete activity itself is an activity, not a record).
	after := countIn(created.OrganizationID)
	for k, n := range before {
		if k == "organization" {
			n-- // the sub-organization's record is owned by its parent
		}
		if after[k] < n {
			t.Errorf("the parent lost %q records: %d before, %d after", k, before[k], after[k])
		}
	}
}

// list_suborgs finds sub-organizations by name, user name, e-mail, API key and wallet address,
// pages them, and refuses a filter without a value; older create_sub_organization versions
// (root users with V1 API keys) still create one.
func TestListSubOrganizations(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Parent")
	_, pub := h.NewKey()
	r := root.MustSubmit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "Bob's", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "bob", "userEmail": "bob@example.com", "apiKeys": []any{
			map[string]any{
				"apiKeyName": "k",
				"publicKey":  pub,
				"curveType":  "API_KEY_CURVE_P256",
			}}, "authenticators": []any{}, "oauthProviders": []any{}}},
		"wallet": map[string]any{"walletName": "w", "accounts": servertest.WalletAccounts[:1]},
	})
	bobOrg := r.Result("createSubOrganizationResultV8", "subOrganizationId")
	addr := r.Result("createSubOrganizationResultV8", "wallet", "addresses", "0")
	h.Advance(time.Millisecond)
	_, oldPub := h.NewKey()
	old := root.MustSubmit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V4", map[string]any{
		"subOrganizationName": "Carol's", "rootQuorumThreshold": 1,
		"rootUsers": []any{
			map[string]any{
				"userName":       "carol",
				"apiKeys":        []any{map[string]any{"apiKeyName": "k", "publicKey": oldPub}},
				"authenticators": []any{},
			},
		},
	})
	carolOrg := old.Result("createSubOrganizationResultV4", "subOrganizationId")
	if carolOrg == "" {
		t.Fatalf("create_sub_organization V4: %s", old.Raw)
	}

	for _, tc := range []struct{ filter, value, want string }{
		{"NAME", "bob's", bobOrg},
		{"USERNAME", "carol", carolOrg},
		{"EMAIL", "BOB@example.com", bobOrg},
		{"PUBLIC_KEY", oldPub, carolOrg},
		{"WALLET_ACCOUNT_ADDRESS", strings.ToLower(addr), bobOrg},
		{"WALLET_ACCOUNT_ADDRESS", addr, bobOrg}, // checksummed, as create_sub_organization answers it
	} {
		t.Run(tc.filter+"="+tc.value, func(t *testing.T) {
			l := root.MustQuery("list_suborgs", map[string]any{"filterType": tc.filter, "filterValue": tc.value})
			if l.Len("organizationIds") != 1 || l.Str("organizationIds", "0") != tc.want {
				t.Fatalf("list_suborgs %s=%s: %s", tc.filter, tc.value, l.Raw)
			}
		})
	}
	if l := root.MustQuery("list_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": "nobody@example.com"}); l.Len(
		"organizationIds",
	) != 0 {
		t.Fatalf("list_suborgs for nobody: %s", l.Raw)
	}
	if l := root.MustQuery("list_suborgs", map[string]any{"paginationOptions": map[string]any{"limit": "1"}}); l.Len(
		"organizationIds",
	) != 1 ||
		l.Str("organizationIds", "0") != bobOrg {
		t.Fatalf("the first page of one, oldest first: %s", l.Raw)
	}
	servertest.WantError(
		t,
		root.Query("list_suborgs", map[string]any{"filterType": "EMAIL"}),
		http.StatusBadRequest,
		3,
		"filterValue",
	)
	servertest.WantError(
		t,
		root.Query("list_suborgs", map[string]any{"paginationOptions": map[string]any{"limit": "500"}}),
		http.StatusBadRequest,
		3,
		"paginationOptions.limit",
	)

	// Another top-level organization finds none of them.
	other, _ := h.RootOrg("Other")
	if l := other.MustQuery("list_suborgs", map[string]any{"filterType": "NAME", "filterValue": "bob's"}); l.Len(
		"organizationIds",
	) != 0 {
		t.Fatalf("another organization lists Parent's sub-organization: %s", l.Raw)
	}
}
