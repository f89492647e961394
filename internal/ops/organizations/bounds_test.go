package organizations_test

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
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// putSubOrgs stores n sub-organizations of parent directly, created a millisecond apart, each
// with one user: "same" in every third, "user <i>" in the others. It returns their ids in
// creation order.
func putSubOrgs(t *testing.T, h *servertest.Harness, parent string, n int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	err := h.Server.Store.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			at := h.Now().Add(time.Duration(i+1) * time.Millisecond)
			o := &directory.Organization{ID: id.New(), Name: fmt.Sprintf("sub %d", i), ParentID: parent,
				Features: []directory.Feature{}, CreatedAt: at, UpdatedAt: at}
			name := fmt.Sprintf("user %d", i)
			if i%3 == 0 {
				name = "same"
			}
			u := &directory.User{ID: id.New(), OrgID: o.ID, Name: name, CreatedAt: at, UpdatedAt: at}
			o.RootQuorum = directory.Quorum{UserIDs: []string{u.ID}, Threshold: 1}
			ids = append(ids, o.ID)
			if err := directory.SaveUser(ctx, tx, u); err != nil {
				return err
			}
			if err := directory.SaveOrganization(ctx, tx, o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// list_suborgs filtered by USERNAME reads a page of the parent's sub-organizations that hold a
// user of that name, not every sub-organization of the parent: over 200 or 1,600
// sub-organizations it allocates the same. Before, it read every sub-organization and looked
// the name up in each (one query a sub-organization): allocation and time grew with them.
func TestListSuborgsByUsernameBounded(t *testing.T) {
	h := servertest.New(t)
	few, fewOrg := h.RootOrg("Few")
	many, manyOrg := h.RootOrg("Many")
	putSubOrgs(t, h, fewOrg.OrganizationID, 200)
	putSubOrgs(t, h, manyOrg.OrganizationID, 1600)
	list := func(c *servertest.Client) int64 {
		return leastAllocated(func() {
			r := c.Query("list_suborgs", map[string]any{"filterType": "USERNAME", "filterValue": "user 7"})
			if r.Status != http.StatusOK || r.Len("organizationIds") != 1 {
				t.Fatalf("list_suborgs: %s", r.Raw)
			}
		})
	}
	list(few)
	allocFew, allocMany := list(few), list(many)
	t.Logf("list_suborgs by USERNAME: %d bytes allocated over 200 sub-organizations, %d over 1,600",
		allocFew, allocMany)
	if float64(allocMany) > 1.5*float64(allocFew)+float64(64<<10) {
		t.Errorf("the filter's cost grows with the sub-organizations it does not answer: %d, %d", allocFew, allocMany)
	}
}

// A USERNAME filter pages like the unfiltered list (user names are not unique, so it may match
// many sub-organizations): oldest first, 10 by default, on with after and back with before, and
// only the parent's.
func TestListSuborgsByUsernamePaged(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Parent")
	other, otherOrg := h.RootOrg("Other")
	ids := putSubOrgs(t, h, created.OrganizationID, 60)
	putSubOrgs(t, h, otherOrg.OrganizationID, 10)
	var same []string
	for i, id := range ids {
		if i%3 == 0 {
			same = append(same, id)
		}
	}
	page := func(p map[string]any) []string {
		r := root.MustQuery("list_suborgs", map[string]any{"filterType": "USERNAME", "filterValue": "same",
			"paginationOptions": p})
		var out []string
		for i := range r.Len("organizationIds") {
			out = append(out, r.Str("organizationIds", fmt.Sprint(i)))
		}
		return out
	}
	if got := page(map[string]any{}); !slices.Equal(got, same[:10]) {
		t.Errorf("first page: %v, want %v", got, same[:10])
	}
	var all []string
	for cursor := ""; len(all) <= len(same); {
		p := map[string]any{"limit": "7"}
		if cursor != "" {
			p["after"] = cursor
		}
		got := page(p)
		if len(got) == 0 {
			break
		}
		all = append(all, got...)
		cursor = got[len(got)-1]
	}
	if !slices.Equal(all, same) {
		t.Errorf("paging: %v, want %v", all, same)
	}
	if got := page(map[string]any{"before": same[5], "limit": "2"}); !slices.Equal(got, same[3:5]) {
		t.Errorf("before: %v, want %v", got, same[3:5])
	}
	if r := other.MustQuery("list_suborgs", map[string]any{"filterType": "USERNAME", "filterValue": "same",
		"paginationOptions": map[string]any{"limit": "100"}}); r.Len("organizationIds") != 4 {
		t.Errorf("the other parent's: %s", r.Raw)
	}
}

func leastAllocated(f func()) int64 {
	least := costtest.Allocated(f)
	for range 2 {
		least = min(least, costtest.Allocated(f))
	}
	return least
}
