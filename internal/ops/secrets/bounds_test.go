package secrets_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/ops/secrets"
	"github.com/latchkey/latchkey/internal/records"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/store"
)

// A page of list_secrets answers metadata, but each stored secret holds its sealed payload
// too: the page is bounded by the bytes it reads as well as by its limit, so over 10 or 40
// secrets of 512 KB it costs the same (before, 40 cost four times 10: every sealed payload of
// the page was read), and paging with after still lists every secret once.
func TestListSecretsPageBoundedByBytes(t *testing.T) {
	h := servertest.New(t)
	ctx := context.Background()
	put := func(org string, n int) []string {
		var ids []string
		err := h.Server.Store.Update(ctx, func(tx store.Tx) error {
			for i := range n {
				s := &secrets.Secret{ID: id.New(), OrgID: org, Name: fmt.Sprintf("secret %02d", i),
					Sealed: bytes.Repeat(
						[]byte{byte(i)},
						512<<10,
					), CreatedAt: h.Now().Add(time.Duration(i) * time.Millisecond)}
				ids = append(ids, s.ID)
				if err := records.Save(ctx, tx, secrets.KindSecret, s.ID, org, s.CreatedAt, s.CreatedAt, s); err != nil {
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
	few, fewOrg := h.RootOrg("Few")
	many, manyOrg := h.RootOrg("Many")
	put(fewOrg.OrganizationID, 10)
	ids := put(manyOrg.OrganizationID, 40)
	list := func(c *servertest.Client) int64 {
		return leastAllocated(func() {
			r := c.Query("list_secrets", map[string]any{"paginationOptions": map[string]any{"limit": "100"}})
			if r.Status != http.StatusOK {
				t.Fatalf("list_secrets: %s", r.Raw)
			}
		})
	}
	list(few)
	allocFew, allocMany := list(few), list(many)
	t.Logf("a page of list_secrets: %d bytes allocated over 10 secrets of 512 KB, %d over 40", allocFew, allocMany)
	if float64(allocMany) > 1.5*float64(allocFew)+float64(1<<20) {
		t.Errorf("the page's cost grows with the secrets it does not answer: %d, %d", allocFew, allocMany)
	}
	var listed []string
	for cursor := ""; len(listed) <= len(ids); {
		p := map[string]any{"limit": "100"}
		if cursor != "" {
			p["after"] = cursor
		}
		r := many.MustQuery("list_secrets", map[string]any{"paginationOptions": p})
		if r.Len("secrets") == 0 {
			break
		}
		for i := range r.Len("secrets") {
			listed = append(listed, r.Str("secrets", fmt.Sprint(i), "secretId"))
		}
		cursor = listed[len(listed)-1]
	}
	if fmt.Sprint(listed) != fmt.Sprint(reversed(ids)) {
		t.Errorf("paging listed %d secrets of 40: %v", len(listed), listed)
	}
}

// leastAllocated is the least of three measures of what f allocates: pools (encoders' buffers,
// the database driver's) make one measure vary by a few megabytes.
func leastAllocated(f func()) int64 {
	least := costtest.Allocated(f)
	for range 2 {
		least = min(least, costtest.Allocated(f))
	}
	return least
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
