package dashboard_test

import (
	"net/url"
	"strings"
	"testing"
)

// TestActivityFilterAndBadParameters: the type filter takes the short name the table shows or
// the full one; bad filters are a 400 page, not a 500.
func TestActivityFilterAndBadParameters(t *testing.T) {
	e := setup(t)
	e.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", `{"walletName":"treasury","accounts":[]}`)
	e.putActivity(e.orgID, "ACTIVITY_TYPE_SIGN_TRANSACTION_V2", "ACTIVITY_STATUS_FAILED", e.now, nil)
	b := e.browser()
	b.login(password)
	base := "/orgs/" + e.orgID + "/activities?"
	tests := []struct {
		query string
		code  int
		want  string
		none  string
	}{
		{"type=CREATE_WALLET", 200, ">CREATE_WALLET<", ">SIGN_TRANSACTION_V2<"},
		{"type=ACTIVITY_TYPE_CREATE_WALLET", 200, ">CREATE_WALLET<", ">SIGN_TRANSACTION_V2<"},
		{"type=+create_wallet+", 200, ">CREATE_WALLET<", ">SIGN_TRANSACTION_V2<"},
		{"type=SIGN_TRANSACTION_V2&status=ACTIVITY_STATUS_FAILED", 200, ">SIGN_TRANSACTION_V2<", ">CREATE_WALLET<"},
		{"type=" + url.QueryEscape("CREATE WALLET<script>"), 400, "is not an activity type", "<script>"},
		{"status=DONE", 400, "Unknown status", ""},
		{"before=zzz", 400, "before must be an activity id", ""},
	}
	for _, tt := range tests {
		code, body := b.get(base + tt.query)
		if code != tt.code || !strings.Contains(body, tt.want) || (tt.none != "" && strings.Contains(body, tt.none)) {
			t.Errorf("%s: %d, want %d with %q without %q", tt.query, code, tt.code, tt.want, tt.none)
		}
	}
}

// TestFixes: the e-mail preview names the organization like the real message; server key
// labels are words; an unknown path is the dashboard's 404 page.
func TestFixes(t *testing.T) {
	e := setup(t)
	b := e.browser()
	// Anonymous: the 404 page too, without the menu.
	if code, body := b.get("/no/such/page"); code != 404 ||
		!strings.Contains(body, "There is no page at this address") ||
		strings.Contains(body, `href="/audit"`) {
		t.Errorf("anonymous unknown path: %d", code)
	}
	b.login(password)
	_, page := b.get("/orgs/" + e.orgID + "/proxy")
	if strings.Contains(page, "Your Your app") ||
		!strings.Contains(page, "Subject: Your Acme Corp verification code") ||
		!strings.Contains(page, "Use this code to sign in to Acme Corp") {
		t.Errorf("the e-mail preview does not name the organization: %s", page)
	}
	_, page = b.get("/keys")
	for _, want := range []string{"<th>Signer public key<div", "<th>OTP public key<div", "<th>App proof public key<div", ">otpPublicKey</div>"} {
		if !strings.Contains(page, want) {
			t.Errorf("/keys lacks %q", want)
		}
	}
	for _, p := range []string{"/nope", "/orgs/" + e.orgID + "/nope", "/activities"} {
		code, body := b.get(p)
		if code != 404 || !strings.Contains(body, "There is no page at this address") ||
			!strings.Contains(body, `href="/audit"`) ||
			!strings.Contains(body, "<!doctype html>") {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
}
