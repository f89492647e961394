package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/authproxy"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/session"
)

// The account pre-hijack through the auth proxy: an attacker signs up the victim's address with
// the attacker's own API key and no verification token. The address is stored unproven: no
// look-up, OTP login or attested stamp login resolves to the attacker's sub-organization, the
// victim's own verified sign-up gets a sub-organization of its own, and the attacker's key
// never signs there. Contacts a sub-organization's own user writes are unproven too, until a
// verification token for exactly that contact proves them.
func TestProxySignupPreHijack(t *testing.T) {
	p := newProxyHarness(t, proxySettings())
	const victim = "victim@example.com"
	attackerPriv, attackerPub := p.NewKey()
	planted := p.ok("signup", map[string]any{"userEmail": victim, "userName": "victim", "authenticators": []any{}, "oauthProviders": []any{},
		"apiKeys": []any{
			map[string]any{"apiKeyName": "mine", "publicKey": attackerPub, "curveType": "API_KEY_CURVE_P256"},
		}}).
		Str("organizationId")
	if planted == "" {
		t.Fatal("the attacker's sign-up (with a credential) should still create a sub-organization")
	}
	lookup := func(filter, value string) string {
		return p.ok("account", map[string]any{"filterType": filter, "filterValue": value}).Str("organizationId")
	}
	if got := lookup("EMAIL", victim); got != "" {
		t.Fatalf("an unproven address matched the account look-up: %s", got)
	}
	if r := p.root.Query("list_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": victim}); r.Str(
		"organizationIds",
		"0",
	) != "" {
		t.Fatalf("an unproven address matched list_suborgs: %s", r.Raw)
	}

	// The victim proves the address: still nothing to log in to.
	otpID := p.ok("otp_init", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": victim}).Str("otpId")
	device, devicePub := p256Key(t)
	tok := p.ok("otp_verify", map[string]any{"otpId": otpID, "otpCode": p.lastCode(victim), "public_key": devicePub}).
		Str("verificationToken")
	_, sessPub := p.NewKey()
	sig := signDER(t, device, []byte(tok))
	if r := p.call("otp_login", map[string]any{"verificationToken": tok, "public_key": sessPub, "client_signature": sig}, nil); r.Status != http.StatusNotFound {
		t.Fatalf("otp_login found an unproven address: %d %s", r.Status, r.Raw)
	}
	// Naming the planted sub-organization does not help: its user's address is unproven.
	r := p.call(
		"otp_login",
		map[string]any{
			"verificationToken": tok,
			"public_key":        sessPub,
			"client_signature":  sig,
			"organizationId":    planted,
		},
		nil,
	)
	if r.Status == http.StatusOK {
		t.Fatalf("otp_login into the planted sub-organization: %s", r.Raw)
	}
	mine := p.ok("signup", map[string]any{"userEmail": victim, "userName": "victim", "apiKeys": []any{}, "authenticators": []any{},
		"oauthProviders": []any{}, "verificationToken": tok, "client_signature": sig}).
		Str("organizationId")
	if mine == planted || lookup("EMAIL", victim) != mine {
		t.Fatalf("the victim's verified sign-up: %s (planted %s), look-up %s", mine, planted, lookup("EMAIL", victim))
	}
	sess := p.ok("otp_login", map[string]any{"verificationToken": tok, "public_key": sessPub, "client_signature": sig}).
		Str("session")
	if sc, err := session.Parse(sess, p.Server.Keys.Public(custody.Notarizer), p.Now()); err != nil ||
		sc.OrganizationID != mine {
		t.Fatalf("the victim's session: %+v %v", sc, err)
	}
	if r := p.Client(mine, attackerPriv).Query("whoami", nil); r.Status == http.StatusOK {
		t.Fatalf("the attacker's key works in the victim's sub-organization: %s", r.Raw)
	}

	// Inside the planted sub-organization the attacker is root: changing their own user's
	// address to another victim's, without a token, leaves it unproven too.
	attacker := p.Client(planted, attackerPriv)
	userID := attacker.Query("whoami", nil).Str("userId")
	const victim2 = "second@example.com"
	servertest.MustOK(
		t,
		attacker.Submit(
			"update_user_email",
			"ACTIVITY_TYPE_UPDATE_USER_EMAIL",
			map[string]any{"userId": userID, "userEmail": victim2},
		),
	)
	if got := lookup("EMAIL", victim2); got != "" {
		t.Fatalf("an address a sub-organization's user set without a token matched: %s", got)
	}
	// With a verification token for exactly that address (issued by the parent, as the proxy
	// issues them), the address is proven and the token used up.
	otpID = p.ok("otp_init", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": victim2}).Str("otpId")
	tok2 := p.ok("otp_verify", map[string]any{"otpId": otpID, "otpCode": p.lastCode(victim2)}).Str("verificationToken")
	wrong := attacker.Submit(
		"update_user_email",
		"ACTIVITY_TYPE_UPDATE_USER_EMAIL",
		map[string]any{"userId": userID, "userEmail": "third@example.com",
			"verificationToken": tok2},
	)
	servertest.WantError(t, wrong, 400, 3, "verificationToken")
	servertest.MustOK(
		t,
		attacker.Submit(
			"update_user_email",
			"ACTIVITY_TYPE_UPDATE_USER_EMAIL",
			map[string]any{"userId": userID, "userEmail": victim2,
				"verificationToken": tok2},
		),
	)
	if got := lookup("EMAIL", victim2); got != planted {
		t.Fatalf("a proven address did not match: %q", got)
	}
	again := attacker.Submit(
		"update_user_email",
		"ACTIVITY_TYPE_UPDATE_USER_EMAIL",
		map[string]any{"userId": userID, "userEmail": victim2,
			"verificationToken": tok2},
	)
	servertest.WantError(t, again, 400, 3, "already used")

	// The organization's own backend vouches for what it writes (Turnkey's e-mail auth
	// examples create sub-organizations with addresses this way).
	created := p.root.Submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V7", map[string]any{
		"subOrganizationName": "backend", "rootQuorumThreshold": 1, "rootUsers": []any{map[string]any{"userName": "b",
			"userEmail": "backend@example.com", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}}}})
	servertest.MustOK(t, created)
	if got := lookup("EMAIL", "backend@example.com"); got != created.Str(
		"activity",
		"result",
		"createSubOrganizationResultV7",
		"subOrganizationId",
	) {
		t.Fatalf("a backend-created address did not match: %q", got)
	}
}

// A sign-up naming no credential and no proven contact is refused: it would create a
// sub-organization nobody can ever log in to (a probe made them at ~960/s).
func TestProxySignupNeedsACredentialOrProof(t *testing.T) {
	p := newProxyHarness(t, proxySettings())
	for _, body := range []any{
		map[string]any{},
		map[string]any{"userName": "x", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}},
		map[string]any{"userEmail": "nobody@example.com", "apiKeys": []any{}, "authenticators": []any{}, "oauthProviders": []any{}},
		map[string]any{"userPhoneNumber": "+14155550100"},
	} {
		r := p.call("signup", body, nil)
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Str("message"), "credential") {
			t.Errorf("%v: %d %s", body, r.Status, r.Raw)
		}
	}
	if r := p.root.Query("list_suborgs", map[string]any{}); r.Status != http.StatusOK ||
		len(r.Body["organizationIds"].([]any)) != 0 {
		n := r.Raw
		t.Fatalf("refused sign-ups created sub-organizations: %s", n)
	}
}

// The proxy limits sign-ups and code sends per client address, on by default; a forwarded
// address from a peer that is not a trusted proxy does not escape it, and the limit is
// configurable (0 lifts it).
func TestProxyRateLimitsPerAddress(t *testing.T) {
	p := newProxyHarness(t, proxySettings())
	signup := func(i int, headers map[string]string) servertest.Response {
		_, pub := p.NewKey()
		return p.call(
			"signup",
			map[string]any{"userName": "u" + strconv.Itoa(i), "authenticators": []any{}, "oauthProviders": []any{},
				"apiKeys": []any{
					map[string]any{"apiKeyName": "k", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"},
				}},
			headers,
		)
	}
	burst := authproxy.DefaultSignupRate.Count
	var wg sync.WaitGroup
	results := make([]servertest.Response, burst+5)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Each claims another address: the peer is not a trusted proxy, so it is ignored.
			results[i] = signup(i, map[string]string{"X-Forwarded-For": "198.51.100." + strconv.Itoa(i)})
		}(i)
	}
	wg.Wait()
	ok, limited := 0, 0
	for _, r := range results {
		switch r.Status {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
			if r.Str("details", "0", "turnkeyErrorCode") != "RATE_LIMITED" {
				t.Errorf("429 without RATE_LIMITED: %s", r.Raw)
			}
		default:
			t.Errorf("unexpected %d %s", r.Status, r.Raw)
		}
	}
	if ok != burst || limited != 5 {
		t.Fatalf("%d sign-ups passed, %d limited; want %d and 5", ok, limited, burst)
	}
	// Code sends have their own bucket, with the same default.
	for i := 0; i < authproxy.DefaultOTPRate.Count; i++ {
		p.ok("otp_init", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "u" + strconv.Itoa(i) + "@example.com"})
	}
	r := p.call("otp_init", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "late@example.com"}, nil)
	if r.Status != http.StatusTooManyRequests || r.Str("message") == "" {
		t.Fatalf("otp_init past the limit: %d %s", r.Status, r.Raw)
	}
	// Time refills the bucket.
	p.Advance(time.Minute)
	servertest.MustOK(t, signup(100, nil))

	// Configured off, nothing is limited.
	off := newProxyHarness(
		t,
		proxySettings(),
		servertest.WithConfig(func(c *server.Config) { c.ProxySignupRate = &authproxy.Rate{} }),
	)
	for i := 0; i < burst+3; i++ {
		_, pub := off.NewKey()
		off.ok(
			"signup",
			map[string]any{"userName": "u" + strconv.Itoa(i), "authenticators": []any{}, "oauthProviders": []any{},
				"apiKeys": []any{
					map[string]any{"apiKeyName": "k", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"},
				}},
		)
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want authproxy.Rate
		ok   bool
	}{
		{"10/1m", authproxy.Rate{Count: 10, Per: time.Minute}, true},
		{"100/1h", authproxy.Rate{Count: 100, Per: time.Hour}, true},
		{"0", authproxy.Rate{}, true},
		{"off", authproxy.Rate{}, true},
		{"10", authproxy.Rate{}, false},
		{"-1/1m", authproxy.Rate{}, false},
		{"10/soon", authproxy.Rate{}, false},
		{"10/-1m", authproxy.Rate{}, false},
	} {
		got, err := authproxy.ParseRate(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseRate(%q) = %v, %v", c.in, got, err)
		}
	}
}
