package login_test

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/apierr"
	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/ops/login"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/session"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"", 900, false},
		{"1", 1, false},
		{"3600", 3600, false},
		{"86400", 86400, false},
		{"0", 0, true},
		{"-5", 0, true},
		{"86401", 0, true},
		{"1.5", 0, true},
		{"ten", 0, true},
	} {
		got, err := login.Seconds("parameters.expirationSeconds", tc.in, 900, 86400)
		if tc.wantErr {
			if err == nil || apierr.From(err).Code != apierr.InvalidArgument {
				t.Errorf("Seconds(%q) = %d, %v; want an invalid-argument error", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Seconds(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// stamp_login, the login any API key can make for its own user, ends in this package: the
// session key becomes an API key that expires with the session, invalidateExisting removes the
// user's earlier login keys (not its other keys), and the session JWT is the notarizer's.
func TestLoginSessions(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	stampLogin := func(pub string, params map[string]any) servertest.Response {
		t.Helper()
		h.Advance(time.Millisecond)
		p := map[string]any{"publicKey": pub}
		for k, v := range params {
			p[k] = v
		}
		return root.Submit("stamp_login", "ACTIVITY_TYPE_STAMP_LOGIN", p)
	}
	parse := func(r servertest.Response) *session.Claims {
		t.Helper()
		servertest.MustOK(t, r)
		sc, err := session.Parse(
			r.Result("stampLoginResult", "session"),
			h.Server.Keys.Public(custody.Notarizer),
			h.Now(),
		)
		if err != nil {
			t.Fatalf("session: %v: %s", err, r.Raw)
		}
		return sc
	}
	loginKeys := func() int {
		t.Helper()
		n := 0
		k := root.MustQuery("get_api_keys", map[string]any{"userId": created.UserID})
		for i := 0; i < k.Len("apiKeys"); i++ {
			if k.Str("apiKeys", strconv.Itoa(i), "credential", "type") == "CREDENTIAL_TYPE_LOGIN" {
				n++
			}
		}
		return n
	}

	// The default lifetime, then one asked for; the key inside stamps as the user.
	priv1, pub1 := h.NewKey()
	sc := parse(stampLogin(pub1, nil))
	if sc.UserID != created.UserID || sc.OrganizationID != created.OrganizationID ||
		sc.Exp != h.Now().Add(login.DefaultSessionSeconds*time.Second).Unix() {
		t.Fatalf("session claims %+v", sc)
	}
	priv2, pub2 := h.NewKey()
	if sc := parse(stampLogin(pub2, map[string]any{"expirationSeconds": "60"})); sc.Exp != h.Now().
		Add(60*time.Second).
		Unix() {
		t.Fatalf("a 60 s session expires at %d, now is %d", sc.Exp, h.Now().Unix())
	}
	if w := h.Client(created.OrganizationID, priv1).MustQuery("whoami", nil); w.Str("userId") != created.UserID {
		t.Fatalf("whoami with the session key: %s", w.Raw)
	}
	if n := loginKeys(); n != 2 {
		t.Fatalf("%d login keys, want 2", n)
	}

	// invalidateExisting: only the new login key is left, and the root's own key still works.
	priv3, pub3 := h.NewKey()
	parse(stampLogin(pub3, map[string]any{"invalidateExisting": true, "expirationSeconds": "60"}))
	if n := loginKeys(); n != 1 {
		t.Fatalf("%d login keys after invalidateExisting, want 1", n)
	}
	servertest.WantError(
		t,
		h.Client(created.OrganizationID, priv2).Query("whoami", nil),
		http.StatusUnauthorized,
		16,
		"could not find public key",
	)
	root.MustQuery("whoami", nil)

	// The session key expires with the session.
	h.Advance(61 * time.Second)
	servertest.WantError(
		t,
		h.Client(created.OrganizationID, priv3).Query("whoami", nil),
		http.StatusUnauthorized,
		16,
		"expired api key",
	)
}

// Bad lifetimes and keys are refused naming the field; resubmitting the same bytes is the same
// login, not a second key.
func TestLoginRefusalsAndResubmission(t *testing.T) {
	h := servertest.New(t)
	root, created := h.RootOrg("Acme")
	_, pub := h.NewKey()
	for _, tc := range []struct {
		name   string
		params map[string]any
		field  string
	}{
		{"zero lifetime", map[string]any{"publicKey": pub, "expirationSeconds": "0"}, "parameters.expirationSeconds"},
		{"lifetime over a year", map[string]any{"publicKey": pub, "expirationSeconds": "31536001"}, "parameters.expirationSeconds"},
		{"not a key", map[string]any{"publicKey": "zz"}, "parameters.publicKey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Advance(time.Millisecond)
			servertest.WantError(
				t,
				root.Submit("stamp_login", "ACTIVITY_TYPE_STAMP_LOGIN", tc.params),
				http.StatusBadRequest,
				3,
				tc.field,
			)
		})
	}

	h.Advance(time.Millisecond)
	root.SubmitTwice("stamp_login", "ACTIVITY_TYPE_STAMP_LOGIN", map[string]any{"publicKey": pub})
	if n := root.MustQuery("get_api_keys", map[string]any{"userId": created.UserID}).Len("apiKeys"); n != 2 {
		t.Fatalf("%d API keys after one login resubmitted, want 2 (root's and the session's)", n)
	}
}

// The credential bundles of otp_auth, oauth and email_auth are made here too: email_auth's key
// takes the name asked for (else "Email Auth - <time>") and the lifetime asked for (else 900 s),
// and a bad lifetime or target key is a 400 naming the field.
func TestCredentialBundleKeys(t *testing.T) {
	out, err := notify.NewOutbox(filepath.Join(t.TempDir(), "outbox.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	h := servertest.New(t, servertest.WithConfig(func(c *server.Config) { c.Emailer = out }))
	root, _ := h.RootOrg("Parent")
	subID, userID, _ := h.EndUser(root, "bob", "bob@example.com")
	parent := h.Client(subID, root.Priv)
	_, target := h.NewKey()
	emailAuth := func(params map[string]any) servertest.Response {
		h.Advance(time.Millisecond)
		p := map[string]any{"email": "bob@example.com", "targetPublicKey": target,
			"emailCustomization": map[string]any{
				"appName":           "Acme",
				"magicLinkTemplate": "https://app.example/auth?b=%s",
			}}
		for k, v := range params {
			p[k] = v
		}
		return parent.Submit("email_auth", "ACTIVITY_TYPE_EMAIL_AUTH_V3", p)
	}
	key := func(r servertest.Response) (name, expiration string) {
		t.Helper()
		servertest.MustOK(t, r)
		g := parent.MustQuery("get_api_key", map[string]any{"apiKeyId": r.Result("emailAuthResult", "apiKeyId")})
		return g.Str("apiKey", "apiKeyName"), g.Str("apiKey", "expirationSeconds")
	}
	if name, exp := key(emailAuth(nil)); !strings.HasPrefix(name, "Email Auth - ") ||
		exp != strconv.Itoa(login.DefaultCredentialSeconds) {
		t.Fatalf("default key: %q, expires in %q", name, exp)
	}
	if name, exp := key(emailAuth(map[string]any{"apiKeyName": "phone", "expirationSeconds": "120"})); name != "phone" ||
		exp != "120" {
		t.Fatalf("asked-for key: %q, expires in %q", name, exp)
	}
	servertest.WantError(
		t,
		emailAuth(map[string]any{"expirationSeconds": "0"}),
		http.StatusBadRequest,
		3,
		"parameters.expirationSeconds",
	)
	servertest.WantError(
		t,
		emailAuth(map[string]any{"targetPublicKey": "zz"}),
		http.StatusBadRequest,
		3,
		"parameters.targetPublicKey",
	)
	if u := parent.MustQuery("get_user", map[string]any{"userId": userID}); u.Len("user", "apiKeys") != 3 {
		t.Fatalf("bob's keys after two credentials and two refusals: %s", u.Raw)
	}
}
