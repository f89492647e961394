package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/store"
)

// BenchmarkPages10kOrgs times each page with 10,000 top-level organizations (and 10,000
// sub-organizations under one of them) in the store: go test -bench Pages10k ./internal/dashboard
func BenchmarkPages10kOrgs(b *testing.B) {
	e := setup(&testing.T{})
	ctx := context.Background()
	now := time.Now().UTC()
	err := e.s.Store.Update(ctx, func(tx store.Tx) error {
		for i := range 10000 {
			o := &directory.Organization{ID: id.New(), Name: fmt.Sprintf("Org %05d", i), CreatedAt: now, UpdatedAt: now}
			if err := directory.SaveOrganization(ctx, tx, o); err != nil {
				return err
			}
			s := &directory.Organization{
				ID:        id.New(),
				Name:      fmt.Sprintf("Sub %05d", i),
				ParentID:  e.orgID,
				CreatedAt: now,
				UpdatedAt: now,
			}
			if err := directory.SaveOrganization(ctx, tx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	act := e.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		`{"walletName":"treasury","accounts":[{"curve":"CURVE_SECP256K1","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/60'/0'/0/0","addressFormat":"ADDRESS_FORMAT_ETHEREUM"}]}`,
	)
	actID := regexp.MustCompile(`"id":"([0-9a-f-]{36})"`).FindStringSubmatch(act)[1]
	addr := regexp.MustCompile(`0x[0-9a-fA-F]{40}`).FindString(act)
	br := e.browser()
	br.t = &testing.T{}
	br.login(password)
	for _, p := range []string{"/", "/orgs", "/orgs?parent=" + e.orgID + "&after=", "/orgs?q=org+04242", "/orgs/" + e.orgID, "/orgs/" + e.orgID + "/activities", "/orgs/" + e.orgID + "/proxy", "/audit",
		"/orgs?q=alice@acme.example", "/orgs?q=" + addr, "/activities/" + actID, "/keys", "/health", "/charts", "/charts?range=month", "/charts?org=" + e.orgID, "/failed", "/audit?outcome=failure&from=2020-01-01", "/audit/export?format=csv"} {
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				if code, _ := br.get(p); code != http.StatusOK {
					b.Fatalf("%s: %d", p, code)
				}
			}
		})
	}
}
