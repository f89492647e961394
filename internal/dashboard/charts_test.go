package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/api"
	"github.com/latchkey/latchkey/internal/dashboard"
	"github.com/latchkey/latchkey/internal/directory"
	"github.com/latchkey/latchkey/internal/id"
	"github.com/latchkey/latchkey/internal/metrics"
	"github.com/latchkey/latchkey/internal/store"
)

// putActivity stores an activity directly (statuses the API does not easily produce).
func (e *env) putActivity(orgID, typ, status string, at time.Time, data map[string]any) string {
	e.t.Helper()
	a := store.Activity{
		ID:          id.New(),
		OrgID:       orgID,
		Fingerprint: id.New(),
		Status:      status,
		Type:        typ,
		CreatedAt:   at,
		UpdatedAt:   at,
	}
	if data == nil {
		data = map[string]any{}
	}
	data["id"], data["organizationId"], data["status"], data["type"] = a.ID, orgID, status, typ
	a.Data, _ = json.Marshal(data)
	if err := e.s.Store.Update(context.Background(), func(tx store.Tx) error { return tx.PutActivity(context.Background(), a) }); err != nil {
		e.t.Fatal(err)
	}
	return a.ID
}

var rectTip = regexp.MustCompile(`<rect class="([a-z0-9-]+)"[^>]*><title>([^<]*)</title>`)

// TestCharts: the charts page draws the store's activities by status and by type in the
// range's buckets, the signing rate and failure rate, and the API requests the dashboard
// observed; per organization it counts that organization's only; a bad range is a 400.
func TestCharts(t *testing.T) {
	e := setup(t)
	e.api.Close()
	// As latchkey serve wraps the API: metrics.Observe learns each request's organization.
	e.api = httptest.NewServer(metrics.Observe(e.s.Metrics, slog.New(slog.DiscardHandler), "api", api.Operation,
		e.s.Dashboard.Observe(e.s.API.Handler())))
	e.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", `{"walletName":"treasury","accounts":[]}`)
	now := e.now
	minute := now.Truncate(time.Minute)
	for range 3 {
		e.putActivity(
			e.orgID,
			"ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2",
			"ACTIVITY_STATUS_COMPLETED",
			minute.Add(-10*time.Minute+time.Second),
			nil,
		)
	}
	e.putActivity(
		e.orgID,
		"ACTIVITY_TYPE_SIGN_TRANSACTION_V2",
		"ACTIVITY_STATUS_FAILED",
		minute.Add(-10*time.Minute+2*time.Second),
		nil,
	)
	e.putActivity(
		e.orgID,
		"ACTIVITY_TYPE_CREATE_USERS_V3",
		"ACTIVITY_STATUS_COMPLETED",
		now.Add(-5*time.Hour),
		nil,
	) // outside the hour
	b := e.browser()
	b.login(password)

	tenAgo := minute.Add(-10 * time.Minute).Format("2006-01-02 15:04")
	cases := []struct {
		path     string
		code     int
		want     []string
		wantNone []string
	}{
		{"/charts", 200, []string{
			`s-completed` + "|" + tenAgo + " completed: 3",
			`s-failed` + "|" + tenAgo + " failed: 1",
			`c0|` + tenAgo + " SIGN_RAW_PAYLOAD_V2: 3",
			tenAgo + " SIGN_TRANSACTION_V2: 1",
		}, []string{"CREATE_USERS_V3"}},
		{
			"/charts?range=day",
			200,
			[]string{
				"CREATE_USERS_V3: 1",
				minute.Add(-10*time.Minute).Truncate(time.Hour).Format("2006-01-02 15:04") + " SIGN_RAW_PAYLOAD_V2: 3",
			},
			nil,
		},
		{"/charts?range=month", 200, []string{"CREATE_USERS_V3: 1", "completed: "}, nil},
		{"/charts?range=year", 400, []string{"Unknown range"}, nil},
		{"/charts?org=00000000-0000-4000-8000-000000000000", 404, nil, nil},
	}
	for _, c := range cases {
		code, body := b.get(c.path)
		if code != c.code {
			t.Fatalf("%s: %d %s", c.path, code, body)
		}
		tips := map[string]bool{}
		for _, m := range rectTip.FindAllStringSubmatch(body, -1) {
			tips[m[1]+"|"+m[2]] = true
			tips[m[2]] = true
		}
		for _, w := range c.want {
			if !tips[w] && !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", c.path, w)
			}
		}
		for _, w := range c.wantNone {
			if strings.Contains(body, w) {
				t.Errorf("%s shows %q", c.path, w)
			}
		}
	}
	// The overview shows the last hour's activities by status and the API latency.
	if _, body := b.get("/"); !strings.Contains(body, tenAgo+" completed: 3") ||
		!strings.Contains(body, "API request latency") ||
		!strings.Contains(body, `href="/charts"`) {
		t.Error("the overview lacks its charts")
	}
	_, body := b.get("/charts")
	for _, w := range []string{"Signatures per second", "Activity failure rate", "API request latency", "API error rate", "<svg", "<polyline"} {
		if !strings.Contains(body, w) {
			t.Errorf("/charts lacks %q", w)
		}
	}
	// The API requests observed (one submit) are counted in the current minute.
	if !regexp.MustCompile(`<rect class="c0"[^>]*><title>[^<]* requests: [1-9]`).MatchString(body) {
		t.Error("the API requests chart counts no request")
	}
	// Another organization's chart does not count Acme's activities.
	otherOrg := e.putOrg("Other Org")
	e.putActivity(otherOrg, "ACTIVITY_TYPE_CREATE_POLICY_V3", "ACTIVITY_STATUS_COMPLETED", now, nil)
	_, body = b.get("/charts?org=" + otherOrg)
	if !strings.Contains(body, "CREATE_POLICY_V3: 1") || strings.Contains(body, "SIGN_RAW_PAYLOAD") ||
		strings.Contains(body, "API request latency") {
		t.Errorf("the organization's charts: %s", body)
	}
	if _, body = b.get("/charts?org=" + e.orgID); !strings.Contains(body, "SIGN_RAW_PAYLOAD_V2: 3") ||
		strings.Contains(body, "CREATE_POLICY_V3") {
		t.Error("Acme's charts are wrong")
	}
	// Per organization, the API requests of the last hour: Acme's submit is counted there; the
	// other organization was not served; longer ranges say why they show none.
	if !strings.Contains(body, "API requests of this organization") ||
		!regexp.MustCompile(`<rect class="c0"[^>]*><title>[^<]* requests: 1<`).MatchString(body) ||
		!strings.Contains(body, "API request latency") {
		t.Error("Acme's charts lack its API requests")
	}
	if _, body = b.get("/charts?org=" + otherOrg); !strings.Contains(
		body,
		"served no API request of this organization",
	) {
		t.Error("the other organization's request charts")
	}
	if _, body = b.get("/charts?range=day&org=" + e.orgID); !strings.Contains(body, "choose the hour range") ||
		strings.Contains(body, "API request latency") {
		t.Error("a day's range per organization")
	}
}

// The per-organization rings stay bounded: the organization served longest ago is forgotten.
func TestOrgRequestsBounded(t *testing.T) {
	var o dashboard.OrgRequests
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for i := range 300 {
		o.Record(fmt.Sprintf("org-%03d", i), start.Add(time.Duration(i)*time.Second), 200, time.Millisecond)
	}
	o.Record("org-050", start.Add(time.Hour), 200, time.Millisecond) // served again: kept
	o.Record("", start, 200, time.Millisecond)                       // no organization: not counted
	kept := 0
	for i := range 300 {
		if o.For(fmt.Sprintf("org-%03d", i)) != nil {
			kept++
		}
	}
	if kept != 256 || o.For("org-299") == nil || o.For("org-000") != nil || o.For("") != nil {
		t.Fatalf("kept %d; newest %v, oldest %v", kept, o.For("org-299") != nil, o.For("org-000") != nil)
	}
}

// putOrg stores a top-level organization.
func (e *env) putOrg(name string) string {
	e.t.Helper()
	o := &directory.Organization{ID: id.New(), Name: name, CreatedAt: e.now, UpdatedAt: e.now}
	if err := e.s.Store.Update(context.Background(), func(tx store.Tx) error { return directory.SaveOrganization(context.Background(), tx, o) }); err != nil {
		e.t.Fatal(err)
	}
	return o.ID
}
