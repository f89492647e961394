package dashboard_test

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHealthPage: the health page shows the store kind, role and database size, the keyring version,
// the outbox backlogs, the providers (configured or not, with their last failure) and the
// requests this process served.
func TestHealthPage(t *testing.T) {
	e := setup(t)
	e.api.Close()
	e.api = httptest.NewServer(e.s.Dashboard.Observe(e.s.API.Handler()))
	e.submit("create_wallet", "ACTIVITY_TYPE_CREATE_WALLET", `{"walletName":"treasury","accounts":[]}`)
	e.s.Dashboard.Health.Failed("sms", time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	e.s.Dashboard.Health.Failed("sms", time.Date(2026, 3, 4, 5, 6, 8, 0, time.UTC))
	b := e.browser()
	b.login(password)
	code, page := b.get("/health")
	if code != 200 {
		t.Fatalf("%d", code)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<span class="st completed">reachable</span> sqlite`),
		regexp.MustCompile(`<th>Database size</th><td>[0-9.]+ (KiB|MiB)</td>`),
		regexp.MustCompile(`<th>Database role</th><td>embedded, writable</td>`),
		regexp.MustCompile(`<th>Keyring</th><td>data key version 1</td>`),
		regexp.MustCompile(`<th>Requests served</th><td>1 API requests`),
		regexp.MustCompile(`<th>Messages \(e-mail, SMS\)</th><td>[0-9]+ waiting</td>`),
		regexp.MustCompile(`<th>Webhook deliveries</th><td>[0-9]+ waiting</td>`),
		regexp.MustCompile(`<td>E-mail \(one-time codes\)</td><td><span class="st completed">configured</span>`),
		regexp.MustCompile(`<td>SMS \(one-time codes\)</td><td><span class="st completed">configured</span></td><td>[^<]*</td><td><span class="bad">2026-03-04 05:06:08Z</span> <span class="muted">\(2 since start\)`),
		regexp.MustCompile(`<td>Chain providers</td><td><span class="st ">not configured</span>`),
		regexp.MustCompile(`<h2>Gas station</h2>.*<th>EVM paymaster</th><td><code>` +
			regexp.QuoteMeta(e.s.SponsorAddresses().EVMPaymaster) + `</code>`),
		regexp.MustCompile(`<th>Solana fee payer</th><td><code>` + regexp.QuoteMeta(e.s.SponsorAddresses().SolanaFeePayer)),
		regexp.MustCompile(`<th>Sponsorship</th><td><span class="muted">off: the gas-station file names no network`),
	} {
		if !want.MatchString(page) {
			t.Errorf("the health page lacks %s", want)
		}
	}
	if strings.Contains(page, e.s.Dashboard.Health.DatabaseFile) {
		t.Error("the health page shows the database path")
	}
}
