package dashboard_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/dashboard"
)

// auditFixture writes audit records on known days.
func auditFixture(t *testing.T, e *env) {
	t.Helper()
	day := func(d int, h int) time.Time { return time.Date(2026, 5, d, h, 0, 0, 0, time.UTC) }
	for _, a := range []dashboard.Audit{
		{Operator: "ops@example.com", Action: "sign-in", Target: "10.0.0.1", At: day(1, 9)},
		{Operator: "mallory@example.com", Action: "sign-in failed", Target: "10.6.6.6", At: day(2, 9)},
		{Operator: "mallory@example.com", Action: "sign-in locked out", Target: "10.6.6.6", At: day(2, 10)},
		{Operator: "ops@example.com", Action: "auth proxy settings", Target: "org-1", Detail: `=HYPERLINK("x")`, At: day(3, 9)},
		{Operator: "(command line)", Action: "proxy disabled", Target: "org-2", At: day(4, 9)},
	} {
		if err := dashboard.WriteAudit(context.Background(), e.s.Store, a); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuditFilters: the audit log filters by operator, action, outcome and date range; bad
// filters are a 400 page.
func TestAuditFilters(t *testing.T) {
	e := setup(t)
	auditFixture(t, e)
	b := e.browser()
	b.login(password)
	tests := []struct {
		query    string
		code     int
		want     []string // targets shown
		wantNone []string
	}{
		{"", 200, []string{"10.0.0.1", "10.6.6.6", "org-1", "org-2"}, nil},
		{"operator=mallory@example.com", 200, []string{"10.6.6.6"}, []string{"org-1", "10.0.0.1", "org-2"}},
		{
			"operator=MALLORY@example.com&action=sign-in+locked+out",
			200,
			[]string{"sign-in locked out"},
			[]string{"sign-in failed"},
		},
		{"outcome=failure", 200, []string{"10.6.6.6"}, []string{"org-1", "10.0.0.1"}},
		{"outcome=success&operator=ops@example.com", 200, []string{"org-1", "10.0.0.1"}, []string{"10.6.6.6", "org-2"}},
		{"from=2026-05-02&to=2026-05-03", 200, []string{"10.6.6.6", "org-1"}, []string{"10.0.0.1", "org-2"}},
		{"from=2026-05-04", 200, []string{"org-2"}, []string{"org-1", "10.0.0.1"}},
		{"operator=" + url.QueryEscape("(command line)"), 200, []string{"org-2"}, []string{"org-1"}},
		{"outcome=maybe", 400, []string{"outcome must be success or failure"}, nil},
		{"from=yesterday", 400, []string{"from must be a date"}, nil},
		{"to=2026-13-01", 400, []string{"to must be a date"}, nil},
		{"from=2026-05-04&to=2026-05-01", 400, []string{"from must not be after to"}, nil},
		{"after=nope", 400, []string{"after must be an audit record id"}, nil},
	}
	for _, tt := range tests {
		code, body := b.get("/audit?" + tt.query)
		if code != tt.code {
			t.Errorf("%s: %d", tt.query, code)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: lacks %q", tt.query, w)
			}
		}
		for _, w := range tt.wantNone {
			if strings.Contains(body, ">"+w+"<") {
				t.Errorf("%s: shows %q", tt.query, w)
			}
		}
	}
	// The export links carry the filters.
	_, body := b.get("/audit?outcome=failure")
	if !strings.Contains(body, `href="/audit/export?outcome=failure&amp;format=csv"`) {
		t.Error("the CSV link does not carry the filters")
	}
}

// TestAuditExport: CSV and JSON exports are attachments holding the filtered records, with
// formula-looking cells defused in CSV; a bad format is a 400.
func TestAuditExport(t *testing.T) {
	e := setup(t)
	auditFixture(t, e)
	b := e.browser()
	b.login(password)
	get := func(q string) (*http.Response, string) {
		resp, err := b.c.Get(b.u + "/audit/export?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := get("format=csv&operator=ops@example.com")
	if resp.StatusCode != 200 ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), `attachment; filename="latchkey-audit-`) ||
		!strings.HasSuffix(resp.Header.Get("Content-Disposition"), `.csv"`) ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("csv: %d %v", resp.StatusCode, resp.Header)
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// header, the test's own sign-in (newest first), the proxy settings and the sign-in of the fixture
	if len(rows) != 4 || strings.Join(rows[0], ",") != "id,at,operator,action,outcome,target,detail" ||
		rows[2][3] != "auth proxy settings" ||
		rows[2][6] != `'=HYPERLINK("x")` ||
		rows[2][4] != "success" {
		t.Fatalf("csv rows %q", rows)
	}
	resp, body = get("format=json&outcome=failure")
	var recs []map[string]any
	if err := json.Unmarshal([]byte(body), &recs); err != nil || resp.StatusCode != 200 ||
		!strings.HasSuffix(resp.Header.Get("Content-Disposition"), `.json"`) {
		t.Fatalf("json: %d %v %s", resp.StatusCode, err, body)
	}
	if len(recs) != 2 || recs[0]["action"] != "sign-in locked out" || recs[0]["outcome"] != "failure" ||
		recs[1]["target"] != "10.6.6.6" {
		t.Fatalf("json records %v", recs)
	}
	resp, body = get("format=json&from=2030-01-01")
	if resp.StatusCode != 200 || strings.TrimSpace(body) != "[\n\n]" && strings.ReplaceAll(body, "\n", "") != "[]" {
		t.Fatalf("empty export: %q", body)
	}
	for _, q := range []string{"format=xml", "", "format=csv&from=bad"} {
		if resp, body := get(q); resp.StatusCode != 400 || resp.Header.Get("Content-Disposition") != "" ||
			!strings.Contains(body, "Bad export") {
			t.Errorf("%q: %d", q, resp.StatusCode)
		}
	}
}
