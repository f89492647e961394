package wallets_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/ops/wallets"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// putAccounts stores n accounts of a new wallet of org directly (no derivation: the list reads
// records, not keys), created a millisecond apart after those of earlier calls, and returns the
// wallet's id and the accounts' ids in creation order.
func putAccounts(t *testing.T, h *servertest.Harness, org string, n int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	now := h.Now().Add(time.Duration(putAccountsCalls*10_000) * time.Millisecond)
	putAccountsCalls++
	w := &wallets.Wallet{ID: id.New(), OrgID: org, Name: "bulk " + id.New(), CreatedAt: now, UpdatedAt: now}
	var ids []string
	err := h.Server.Store.Update(ctx, func(tx store.Tx) error {
		if err := records.Save(ctx, tx, wallets.KindWallet, w.ID, org, now, now, w,
			store.Key{Name: wallets.KeyWalletName, Value: org + "/" + w.Name, Unique: true}); err != nil {
			return err
		}
		for i := range n {
			at := now.Add(time.Duration(i+1) * time.Millisecond)
			a := &wallets.Account{ID: id.New(), OrgID: org, WalletID: w.ID, Curve: "CURVE_SECP256K1",
				PathFormat: "PATH_FORMAT_BIP32", Path: fmt.Sprintf("m/44'/60'/0'/0/%d", i),
				AddressFormat: "ADDRESS_FORMAT_ETHEREUM", Address: fmt.Sprintf("0x%040x", i),
				PublicKey: fmt.Sprintf("02%064x", i), SealedKey: make([]byte, 96), CreatedAt: at, UpdatedAt: at}
			ids = append(ids, a.ID)
			if err := records.Save(ctx, tx, wallets.KindAccount, a.ID, org, at, at, a,
				store.Key{Name: wallets.KeyAccountWallet, Value: w.ID}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.ID, ids
}

var putAccountsCalls int

// A page of list_wallet_accounts reads the page, not every account of the organization or of
// the wallet: over 100 or 1,600 accounts (of the organization, or of another wallet than the
// one listed) a page of 10 allocates the same. Before, every account was read and decoded and
// the page cut from them in memory (allocation grew with the accounts: about 1 KB each).
func TestListWalletAccountsPageBounded(t *testing.T) {
	h := servertest.New(t)
	few, fewOrg := h.RootOrg("Few")
	many, manyOrg := h.RootOrg("Many")
	small, large := map[*servertest.Client]string{}, map[*servertest.Client]string{}
	small[few], _ = putAccounts(t, h, fewOrg.OrganizationID, 10)
	small[many], _ = putAccounts(t, h, manyOrg.OrganizationID, 10)
	large[few], _ = putAccounts(t, h, fewOrg.OrganizationID, 100)
	large[many], _ = putAccounts(t, h, manyOrg.OrganizationID, 1600)
	for _, tc := range []struct {
		name   string
		params func(c *servertest.Client) map[string]any
	}{
		{"organization", func(*servertest.Client) map[string]any { return map[string]any{} }},
		{"a wallet beside a large one", func(c *servertest.Client) map[string]any {
			return map[string]any{"walletId": small[c]}
		}},
		{"a large wallet", func(c *servertest.Client) map[string]any { return map[string]any{"walletId": large[c]} }},
		{"with wallet details", func(c *servertest.Client) map[string]any {
			return map[string]any{"includeWalletDetails": true}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list := func(c *servertest.Client) int64 {
				return leastAllocated(func() {
					p := tc.params(c)
					p["paginationOptions"] = map[string]any{"limit": "10"}
					if r := c.Query("list_wallet_accounts", p); r.Status != http.StatusOK || r.Len("accounts") != 10 {
						t.Fatalf("list_wallet_accounts: %s", r.Raw)
					}
				})
			}
			list(few)
			allocFew, allocMany := list(few), list(many)
			t.Logf("a page of 10: %d bytes allocated over 110 accounts, %d over 1,610", allocFew, allocMany)
			if float64(allocMany) > 1.5*float64(allocFew)+float64(256<<10) {
				t.Errorf("the page's cost grows with the accounts it does not answer: %d, %d", allocFew, allocMany)
			}
		})
	}
}

// Paging list_wallet_accounts with after and before visits every account once, in creation
// order, for the organization and for one wallet; a cursor naming no account answers an empty
// page (as list_activities, list_secrets and list_suborgs do), so a client paging on from an
// account deleted meanwhile stops rather than starting over.
func TestListWalletAccountsPaging(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	org := created.OrganizationID
	w1, ids1 := putAccounts(t, h, org, 23)
	w2, ids2 := putAccounts(t, h, org, 7)
	page := func(params map[string]any, p map[string]any) []string {
		params["paginationOptions"] = p
		r := root.MustQuery("list_wallet_accounts", params)
		var out []string
		for i := range r.Len("accounts") {
			out = append(out, r.Str("accounts", fmt.Sprint(i), "walletAccountId"))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		params func() map[string]any
		want   []string
	}{
		{"organization", func() map[string]any { return map[string]any{} }, slices.Concat(ids1, ids2)},
		{"wallet 1", func() map[string]any { return map[string]any{"walletId": w1} }, ids1},
		{"wallet 2", func() map[string]any { return map[string]any{"walletId": w2} }, ids2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var forward []string
			for cursor := ""; len(forward) <= len(tc.want); {
				p := map[string]any{"limit": "5"}
				if cursor != "" {
					p["after"] = cursor
				}
				got := page(tc.params(), p)
				if len(got) == 0 {
					break
				}
				forward = append(forward, got...)
				cursor = got[len(got)-1]
			}
			if !slices.Equal(forward, tc.want) {
				t.Errorf("paging forwards: %v, want %v", forward, tc.want)
			}
			var backward []string
			for cursor := tc.want[len(tc.want)-1]; len(backward) < len(tc.want); {
				got := page(tc.params(), map[string]any{"limit": "4", "before": cursor})
				if len(got) == 0 {
					break
				}
				backward = append(slices.Clone(got), backward...)
				cursor = got[0]
			}
			if want := tc.want[:len(tc.want)-1]; !slices.Equal(backward, want) {
				t.Errorf("paging backwards: %v, want %v", backward, want)
			}
			if got := page(tc.params(), map[string]any{}); !slices.Equal(got, tc.want[:min(10, len(tc.want))]) {
				t.Errorf("default page: %v", got)
			}
			if got := page(tc.params(), map[string]any{"after": id.New()}); len(got) != 0 {
				t.Errorf("after an unknown id: %v, want an empty page", got)
			}
		})
	}
}

// leastAllocated is the least of three measures of what f allocates (pools make one measure
// vary).
func leastAllocated(f func()) int64 {
	least := costtest.Allocated(f)
	for range 2 {
		least = min(least, costtest.Allocated(f))
	}
	return least
}

// An organization holds at most Limits.PrivateKeyTagsPerOrg private key tags (100 by default,
// Turnkey's documented limit on tags, as for user tags): list_private_key_tags answers them
// all, and each may name up to 1,000 keys. Before, there was no limit at all.
func TestPrivateKeyTagLimit(t *testing.T) {
	if directory.DefaultLimits.PrivateKeyTagsPerOrg != 100 {
		t.Fatalf("default private key tag limit %d", directory.DefaultLimits.PrivateKeyTagsPerOrg)
	}
	l := directory.DefaultLimits
	if p := l.LimitNames()["private-key-tags"]; p == nil || *p != 100 {
		t.Fatal(`LimitNames has no "private-key-tags"`)
	}
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	ctx := context.Background()
	err := h.Server.Store.Update(ctx, func(tx store.Tx) error {
		for i := range 99 {
			tag := &wallets.PrivateKeyTag{ID: id.New(), OrgID: created.OrganizationID, Name: fmt.Sprintf("tag %d", i),
				KeyIDs: []string{}, CreatedAt: h.Now(), UpdatedAt: h.Now()}
			if err := records.Save(ctx, tx, wallets.KindPrivateKeyTag, tag.ID, tag.OrgID, h.Now(), h.Now(), tag,
				store.Key{Name: wallets.KeyPKTagName, Value: tag.OrgID + "/" + tag.Name, Unique: true}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	create := func(name string) servertest.Response {
		return root.Submit("create_private_key_tag", "ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG",
			map[string]any{"privateKeyTagName": name, "privateKeyIds": []string{}})
	}
	servertest.MustOK(t, create("the hundredth"))
	servertest.WantError(t, create("one too many"), http.StatusTooManyRequests, 8,
		"an organization can have at most 100 private key tags")
	if n := root.MustQuery("list_private_key_tags", nil).Len("privateKeyTags"); n != 100 {
		t.Errorf("list_private_key_tags answers %d tags, want 100", n)
	}

	lifted := servertest.New(t, servertest.WithConfig(func(c *server.Config) {
		c.Limits = directory.DefaultLimits
		c.Limits.PrivateKeyTagsPerOrg = 1
	}))
	r2, _ := lifted.RootOrg("Small")
	create2 := func(name string) servertest.Response {
		return r2.Submit("create_private_key_tag", "ACTIVITY_TYPE_CREATE_PRIVATE_KEY_TAG",
			map[string]any{"privateKeyTagName": name, "privateKeyIds": []string{}})
	}
	servertest.MustOK(t, create2("one"))
	servertest.WantError(t, create2("two"), http.StatusTooManyRequests, 8, "at most 1 private key tags")
}
