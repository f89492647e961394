package server_test

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/stamp/stamptest"
)

var magicLink = regexp.MustCompile(`https://app\.example/auth\?b=([A-Za-z0-9%]+)`)

// TestCredentialBundles: otp_auth, email_auth and the e-mail recovery each hand the user a fresh
// API key only encrypted to the client's target key, which stamps as the user; recovery then
// adds a passkey once.
func TestCredentialBundles(t *testing.T) {
	h, out := otpHarness(t)
	root, _ := h.RootOrg("Parent")
	subID, bobID, _ := h.EndUser(root, "bob", "Bob@Example.com")
	parent := h.Client(subID, root.Priv)
	lastMail := func() *notify.Message {
		es, _ := notify.ReadOutbox(out.Path())
		return es[len(es)-1].Email
	}
	// open decrypts a bundle and returns a client stamping with the key inside.
	open := func(bundle, targetPriv string) *servertest.Client {
		t.Helper()
		k, err := custody.DecryptCredentialBundle(bundle, targetPriv)
		if err != nil {
			t.Fatalf("decrypting %q: %v", bundle, err)
		}
		return h.Client(subID, hex.EncodeToString(k))
	}
	whoami := func(c *servertest.Client) string { return c.Query("whoami", nil).Str("userId") }

	// otp_auth: a wrong code counts, the right one answers with the credential; the code is not kept.
	h.Advance(time.Millisecond)
	r := parent.Submit(
		"init_otp_auth",
		"ACTIVITY_TYPE_INIT_OTP_AUTH_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "bob@example.com", "appName": "Acme"},
	)
	servertest.MustOK(t, r)
	otpID := r.Str("activity", "result", "initOtpAuthResultV2", "otpId")
	code := otpCodeLine.FindStringSubmatch(lastMail().Text)[1]
	targetPriv, targetPub := h.NewKey()
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		parent.Submit(
			"otp_auth",
			"ACTIVITY_TYPE_OTP_AUTH",
			map[string]any{"otpId": otpID, "otpCode": "000000000", "targetPublicKey": targetPub},
		),
		http.StatusBadRequest,
		3,
		"Invalid OTP code (2 attempt(s) left)",
	)
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		parent.Submit(
			"otp_auth",
			"ACTIVITY_TYPE_OTP_AUTH",
			map[string]any{"otpId": otpID, "otpCode": code, "targetPublicKey": "zz"},
		),
		http.StatusBadRequest,
		3,
		"parameters.targetPublicKey",
	)
	h.Advance(time.Millisecond)
	r = parent.Submit(
		"otp_auth",
		"ACTIVITY_TYPE_OTP_AUTH",
		map[string]any{"otpId": otpID, "otpCode": code, "targetPublicKey": targetPub, "apiKeyName": "phone"},
	)
	servertest.MustOK(t, r)
	if strings.Contains(string(r.Raw), code) || r.Str("activity", "result", "otpAuthResult", "userId") != bobID {
		t.Fatalf("otp_auth: %s", r.Raw)
	}
	otpKey := open(r.Str("activity", "result", "otpAuthResult", "credentialBundle"), targetPriv)
	if whoami(otpKey) != bobID {
		t.Fatal("the otp_auth credential does not stamp as bob")
	}
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		parent.Submit(
			"otp_auth",
			"ACTIVITY_TYPE_OTP_AUTH",
			map[string]any{"otpId": otpID, "otpCode": code, "targetPublicKey": targetPub},
		),
		http.StatusBadRequest,
		3,
		"already used",
	)

	// email_auth: the bundle travels by e-mail only (in the magic link); invalidateExisting ends
	// the otp_auth credential.
	targetPriv2, targetPub2 := h.NewKey()
	h.Advance(time.Millisecond)
	r = parent.Submit(
		"email_auth",
		"ACTIVITY_TYPE_EMAIL_AUTH_V3",
		map[string]any{"email": "BOB@example.com", "targetPublicKey": targetPub2,
			"invalidateExisting": true, "emailCustomization": map[string]any{"appName": "Acme", "magicLinkTemplate": "https://app.example/auth?b=%s"}},
	)
	servertest.MustOK(t, r)
	if r.Str("activity", "result", "emailAuthResult", "userId") != bobID ||
		r.Str("activity", "result", "emailAuthResult", "apiKeyId") == "" {
		t.Fatalf("email_auth: %s", r.Raw)
	}
	m := magicLink.FindStringSubmatch(lastMail().Text)
	if m == nil || lastMail().To != "bob@example.com" {
		t.Fatalf("e-mail: %+v", lastMail())
	}
	bundle, _ := url.QueryUnescape(m[1])
	if strings.Contains(string(r.Raw), bundle) {
		t.Fatal("the credential bundle is in the activity")
	}
	if whoami(open(bundle, targetPriv2)) != bobID {
		t.Fatal("the email_auth credential does not stamp as bob")
	}
	if w := otpKey.Query("whoami", nil); w.Status != http.StatusUnauthorized {
		t.Fatalf("invalidateExisting left the otp_auth key working: %s", w.Raw)
	}
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		parent.Submit(
			"email_auth",
			"ACTIVITY_TYPE_EMAIL_AUTH_V3",
			map[string]any{"email": "nobody@example.com", "targetPublicKey": targetPub2,
				"emailCustomization": map[string]any{"appName": "Acme"}},
		),
		http.StatusNotFound,
		5,
		"no user",
	)
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		parent.Submit(
			"email_auth",
			"ACTIVITY_TYPE_EMAIL_AUTH_V3",
			map[string]any{"email": "bob@example.com", "targetPublicKey": targetPub2,
				"emailCustomization": map[string]any{
					"appName":           "Acme",
					"magicLinkTemplate": "http://insecure.example/%s",
				}},
		),
		http.StatusBadRequest,
		3,
		"parameters.emailCustomization",
	)

	// Recovery: the e-mailed credential adds a passkey to bob, once.
	targetPriv3, targetPub3 := h.NewKey()
	h.Advance(time.Millisecond)
	r = parent.Submit(
		"init_user_email_recovery",
		"ACTIVITY_TYPE_INIT_USER_EMAIL_RECOVERY_V2",
		map[string]any{"email": "bob@example.com", "targetPublicKey": targetPub3,
			"emailCustomization": map[string]any{
				"appName":           "Acme",
				"magicLinkTemplate": "https://app.example/auth?b=%s",
			}},
	)
	servertest.MustOK(t, r)
	m = magicLink.FindStringSubmatch(lastMail().Text)
	bundle, _ = url.QueryUnescape(m[1])
	recovery := open(bundle, targetPriv3)
	a, err := stamptest.New("localhost", "http://localhost:3000")
	if err != nil {
		t.Fatal(err)
	}
	challenge := []byte("recovery-challenge")
	reg, err := a.Attest(challenge, "none")
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"userId": bobID, "authenticator": map[string]any{"authenticatorName": "new laptop",
		"challenge": base64.RawURLEncoding.EncodeToString(challenge), "attestation": reg}}
	// Bob's ordinary key is not a recovery credential.
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		open(
			bundle,
			targetPriv3,
		).Submit("recover_user", "ACTIVITY_TYPE_RECOVER_USER", map[string]any{"userId": "someone-else",
			"authenticator": params["authenticator"]}),
		http.StatusForbidden,
		7,
		"",
	)
	h.Advance(time.Millisecond)
	r = recovery.Submit("recover_user", "ACTIVITY_TYPE_RECOVER_USER", params)
	servertest.MustOK(t, r)
	passkey := &servertest.Client{H: h, Org: subID, Stamper: a}
	if whoami(passkey) != bobID {
		t.Fatal("the recovered passkey does not stamp as bob")
	}
	h.Advance(time.Millisecond)
	if w := recovery.Submit("recover_user", "ACTIVITY_TYPE_RECOVER_USER", params); w.Status != http.StatusUnauthorized {
		t.Fatalf("a recovery credential recovered twice: %s", w.Raw)
	}
}
