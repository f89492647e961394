package dashboard_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFailedFeed: the overview's failed tile opens the failed activities of every organization,
// newest first, 50 a page with "Older"; a bad cursor is a 400.
func TestFailedFeed(t *testing.T) {
	e := setup(t)
	other := e.putOrg("Globex")
	for i := range 55 {
		org := e.orgID
		if i%2 == 1 {
			org = other
		}
		e.putActivity(
			org,
			"ACTIVITY_TYPE_SIGN_TRANSACTION_V2",
			"ACTIVITY_STATUS_FAILED",
			e.now.Add(-time.Duration(55-i)*time.Second),
			map[string]any{"failure": map[string]any{"code": 3, "message": fmt.Sprintf("failure number %02d", i)}},
		)
	}
	e.putActivity(e.orgID, "ACTIVITY_TYPE_CREATE_WALLET", "ACTIVITY_STATUS_COMPLETED", e.now, nil)
	b := e.browser()
	b.login(password)
	if _, body := b.get("/"); !strings.Contains(body, `href="/failed"`) {
		t.Fatal("the overview's failed tile does not link to the feed")
	}
	code, page := b.get("/failed")
	if code != 200 {
		t.Fatalf("/failed: %d", code)
	}
	rows := strings.Count(page, `<td class="nowrap">`)
	next := regexp.MustCompile(`href="/failed\?after=([0-9a-f-]+)"`).FindStringSubmatch(page)
	if rows != 50 || next == nil || !strings.Contains(page, "Globex") || !strings.Contains(page, "Acme Corp") ||
		!strings.Contains(
			page,
			"failure number 54",
		) || strings.Contains(page, "failure number 04") || strings.Contains(page, "CREATE_WALLET") {
		t.Fatalf("first page: %d rows, next %v", rows, next)
	}
	if strings.Index(page, "failure number 54") > strings.Index(page, "failure number 53") {
		t.Error("not newest first")
	}
	_, page2 := b.get("/failed?after=" + next[1])
	if n := strings.Count(page2, `<td class="nowrap">`); n != 5 || !strings.Contains(page2, "failure number 00") ||
		strings.Contains(page2, "/failed?after=") {
		t.Fatalf("second page: %d rows", n)
	}
	for _, bad := range []string{"x", "'; drop table", strings.Repeat("a", 36)} {
		if code, body := b.get("/failed?after=" + url.QueryEscape(bad)); code != 400 ||
			!strings.Contains(body, "activity id") {
			t.Errorf("after=%q: %d", bad, code)
		}
	}
}

// TestActivityPageReadable: the activity page names the initiator, lists the votes with their
// dates in a table, shows the intent and result as field tables, and keeps the raw JSON in
// collapsed <details>.
func TestActivityPageReadable(t *testing.T) {
	e := setup(t)
	res := e.submit(
		"create_wallet",
		"ACTIVITY_TYPE_CREATE_WALLET",
		`{"walletName":"treasury","accounts":[{"curve":"CURVE_SECP256K1","pathFormat":"PATH_FORMAT_BIP32","path":"m/44'/60'/0'/0/0","addressFormat":"ADDRESS_FORMAT_ETHEREUM"}]}`,
	)
	actID := regexp.MustCompile(`"id":"([0-9a-f-]{36})"`).FindStringSubmatch(res)[1]
	b := e.browser()
	b.login(password)
	code, page := b.get("/activities/" + actID)
	if code != 200 {
		t.Fatalf("%d", code)
	}
	today := e.now.Format("2006-01-02")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<dt>Initiator</dt><dd>alice &lt;alice@acme.example&gt;`),
		regexp.MustCompile(`<th>walletName</th><td class="mono">treasury</td>`),
		regexp.MustCompile(`<th>accounts\[0\]\.curve</th><td class="mono">CURVE_SECP256K1</td>`),
		regexp.MustCompile(`createWalletIntent`),
		regexp.MustCompile(`<th>addresses\[0\]</th><td class="mono">0x[0-9a-fA-F]{40}</td>`),
		regexp.MustCompile(`<tr><td>` + today + ` [0-9:]+Z</td><td>alice`),
		regexp.MustCompile(`<span class="st completed">approved</span>`),
		regexp.MustCompile(`<details><summary>Raw intent JSON</summary><pre>\{`),
		regexp.MustCompile(`<details><summary>Raw votes JSON</summary>`),
	} {
		if !want.MatchString(page) {
			t.Errorf("the activity page lacks %s", want)
		}
	}
	// A failed activity shows its failure message, and no initiator when nothing voted.
	id := e.putActivity(
		e.orgID,
		"ACTIVITY_TYPE_SIGN_TRANSACTION_V2",
		"ACTIVITY_STATUS_FAILED",
		e.now,
		map[string]any{"failure": map[string]any{"message": "no such key <x>"}},
	)
	_, page = b.get("/activities/" + id)
	if !strings.Contains(page, `<dd class="bad">no such key &lt;x&gt;</dd>`) ||
		!strings.Contains(page, "not recorded (no vote)") {
		t.Errorf("failed activity page: %s", page)
	}
}
