package server_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/records/recordstest"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

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
	"outgoing_message": "the e-mail/SMS outbox is the deployment's: an acknowledged message is still sent, then removed",
	"webhook_delivery": "the webhook outbox is the deployment's: a sub-organization's activities (its deletion too) go to its parent's endpoints",
}

// Deleting a sub-organization removes every record it owns, of every kind any package declares,
// and nothing of its parent's.
func TestDeletingASubOrganizationLeavesNothing(t *testing.T) {
	h := servertest.New(t)
	ctx := context.Background()
	root, created := h.RootOrg("Parent")
	subPriv, subPub := h.NewKey()
	r := root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": "child", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": "alice", "userEmail": "alice@example.com",
			"apiKeys":        []any{map[string]any{"apiKeyName": "k", "publicKey": subPub, "curveType": "API_KEY_CURVE_P256"}},
			"authenticators": []any{}, "oauthProviders": []any{}}},
		"wallet": map[string]any{"walletName": "w", "accounts": []any{map[string]any{"curve": "CURVE_SECP256K1",
			"pathFormat": "PATH_FORMAT_BIP32", "path": "m/44'/60'/0'/0/0", "addressFormat": "ADDRESS_FORMAT_ETHEREUM"}}}})
	servertest.MustOK(t, r)
	subID := r.Str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId")
	sub := h.Client(subID, subPriv)
	servertest.MustOK(t, sub.Submit("create_user_tag", "ACTIVITY_TYPE_CREATE_USER_TAG", map[string]any{"userTagName": "t", "userIds": []string{}}))

	kinds, err := recordstest.DeclaredKinds(filepath.Join(".."))
	if err != nil {
		t.Fatal(err)
	}
	// Beside the real records, one of every kind the sub-organization may own.
	now := time.Now().UTC()
	if err := h.Server.Store.Update(ctx, func(tx store.Tx) error {
		for _, k := range kinds {
			if _, ok := notOwnedByAnOrganization[k]; ok {
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
	countParent := func() map[string]int {
		n := map[string]int{}
		h.Server.Store.View(ctx, func(rd store.Reader) error {
			for _, k := range kinds {
				recs, err := rd.List(ctx, k, created.OrganizationID, store.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				n[k] = len(recs)
			}
			return nil
		})
		return n
	}
	before := countParent()

	servertest.MustOK(t, sub.Submit("delete_sub_organization", "ACTIVITY_TYPE_DELETE_SUB_ORGANIZATION", map[string]any{"deleteWithoutExport": true}))

	h.Server.Store.View(ctx, func(rd store.Reader) error {
		for _, k := range kinds {
			recs, err := rd.List(ctx, k, subID, store.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) > 0 {
				t.Errorf("%d %q record(s) of the deleted sub-organization are left: delete the kind with its organization, or list it in notOwnedByAnOrganization with the reason", len(recs), k)
			}
		}
		if _, err := rd.Get(ctx, "organization", subID); err == nil {
			t.Error("the sub-organization's own record is left")
		}
		return nil
	})
	// The parent keeps everything of its own (the delete activity itself is an activity, not a record).
	after := countParent()
	for k, n := range before {
		if k == "organization" {
			n-- // the sub-organization's record is owned by its parent
		}
		if after[k] < n {
			t.Errorf("the parent lost %q records: %d before, %d after", k, before[k], after[k])
		}
	}
}
