package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/costtest"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/store"
)

// leastAllocated is the least of three measures of what f allocates: pools (encoders' and
// templates' buffers, the database driver's) make one measure vary.
func leastAllocated(f func()) int64 {
	least := costtest.Allocated(f)
	for range 2 {
		least = min(least, costtest.Allocated(f))
	}
	return least
}

// putActivities stores n activities of org in the last hour whose JSON is about size bytes.
func (e *env) putActivities(org string, n, size int, status string) {
	e.t.Helper()
	for i := range n {
		e.putActivity(org, "ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2", status, e.now.Add(-time.Duration(n-i)*time.Second),
			map[string]any{
				"intent": map[string]any{
					"signRawPayloadIntentV2": map[string]any{"payload": strings.Repeat("ab", size/2)},
				},
				"failure": map[string]any{"code": 3, "message": fmt.Sprintf("failure number %02d", i)},
			})
	}
}

// The pages that draw activities' times, statuses and types (the overview, the charts, an
// organization's activity feed) read only those columns: over 20 activities of 1 MB they cost
// what they cost over 20 of 1 KB. Before, they read whole rows: 20 MB per page view. The failed
// feed, which shows each failure's message, reads a page bounded by bytes.
func TestActivityPagesDoNotReadActivityData(t *testing.T) {
	e := setup(t)
	small, large := e.putOrg("Small"), e.putOrg("Large")
	e.putActivities(small, 20, 1<<10, "ACTIVITY_STATUS_COMPLETED")
	b := e.browser()
	b.login(password)
	measure := func(path string) int64 {
		b.get(path) // warm up: templates, statements
		return leastAllocated(func() {
			if code, _ := b.get(path); code != 200 {
				t.Fatalf("%s: %d", path, code)
			}
		})
	}
	overviewSmall := measure("/")
	e.putActivities(large, 20, 1<<20, "ACTIVITY_STATUS_COMPLETED")
	overviewLarge := measure("/")
	pages := []struct{ name, small, large string }{
		{"overview", "", ""},
		{"charts", "/charts?org=" + small, "/charts?org=" + large},
		{"charts of a month", "/charts?range=month&org=" + small, "/charts?range=month&org=" + large},
		{"activity feed", "/orgs/" + small + "/activities", "/orgs/" + large + "/activities"},
	}
	for _, p := range pages {
		s, l := overviewSmall, overviewLarge
		if p.small != "" {
			s, l = measure(p.small), measure(p.large)
		}
		t.Logf("%s: %d bytes over small activities, %d over large", p.name, s, l)
		if float64(l) > 1.5*float64(s)+float64(256<<10) {
			t.Errorf("%s: %d bytes allocated over 20 activities of 1 KB, %d over 20 of 1 MB", p.name, s, l)
		}
	}
}

// The failed feed shows each failure's message, read from the activity's JSON: its page is
// bounded by bytes as well as by count, and still pages through every failure.
func TestFailedFeedBoundedByBytes(t *testing.T) {
	e := setup(t)
	e.putActivities(e.orgID, 60, 1<<20, "ACTIVITY_STATUS_FAILED")
	b := e.browser()
	b.login(password)
	b.get("/failed")
	var page string
	alloc := leastAllocated(func() { _, page = b.get("/failed") })
	t.Logf("/failed over 60 failures of 1 MB: %d bytes allocated", alloc)
	if alloc > 32<<20 {
		t.Errorf("/failed allocated %d bytes over 60 failures of 1 MB", alloc)
	}
	seen := 0
	for range 60 {
		seen += strings.Count(page, "failure number")
		i := strings.Index(page, `href="/failed?after=`)
		if i < 0 {
			break
		}
		after := page[i+len(`href="/failed?after=`):]
		_, page = b.get("/failed?after=" + after[:strings.IndexByte(after, '"')])
	}
	if seen != 60 {
		t.Errorf("the feed's pages showed %d failures of 60", seen)
	}
}

// An organization's page reads each of its tables bounded by bytes as well as by count: over
// 20 or 40 users of 100 KB, it costs the same and says it shows the first ones.
func TestOrgPageTablesBoundedByBytes(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	orgs := map[int]string{20: e.putOrg("Twenty"), 40: e.putOrg("Forty")}
	for n, org := range orgs {
		err := e.s.Store.Update(ctx, func(tx store.Tx) error {
			for i := range n {
				u := &directory.User{
					ID:        id.New(),
					OrgID:     org,
					Name:      fmt.Sprintf("user %02d %s", i, strings.Repeat("n", 100<<10)),
					CreatedAt: e.now.Add(time.Duration(i) * time.Millisecond),
				}
				if err := directory.SaveUser(ctx, tx, u); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	b := e.browser()
	b.login(password)
	alloc := map[int]int64{}
	for n, org := range orgs {
		b.get("/orgs/" + org)
		var page string
		alloc[n] = leastAllocated(func() { _, page = b.get("/orgs/" + org) })
		shown := strings.Count(page, "user ")
		if shown < 1 || shown >= 20 || !strings.Contains(page, fmt.Sprintf("The first %d users", shown)) {
			t.Errorf("%d users of 100 KB: the page shows %d", n, shown)
		}
	}
	t.Logf("organization page: %d bytes over 20 users of 100 KB, %d over 40", alloc[20], alloc[40])
	if float64(alloc[40]) > 1.5*float64(alloc[20])+float64(256<<10) {
		t.Errorf("the organization page's cost grows with the users it does not show: %d, %d", alloc[20], alloc[40])
	}
}
