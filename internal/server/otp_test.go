package server_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/server"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/session"
)

// otpHarness is the server harness delivering e-mail and SMS to an outbox, as the server's
// configuration does with --dev.
func otpHarness(t *testing.T, opts ...servertest.Option) (*servertest.Harness, *notify.Outbox) {
	out, err := notify.NewOutbox(filepath.Join(t.TempDir(), "outbox.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	h := servertest.New(
		t,
		append(
			[]servertest.Option{servertest.WithConfig(func(c *server.Config) { c.Emailer, c.Texter = out, out })},
			opts...)...)
	return h, out
}

var otpCodeLine = regexp.MustCompile(`(?m)^    (\S+)\s*$`)

// TestOTPLoginOverHTTP: init_otp → the e-mail → verify_otp with the HPKE bundle → a
// verification token → otp_login with a client signature → a session whose key stamps a whoami.
func TestOTPLoginOverHTTP(t *testing.T) {
	h, out := otpHarness(t, servertest.SQLite())
	root, _ := h.RootOrg("Parent")
	subID, _, _ := h.EndUser(root, "alice", "alice@example.com")
	h.Advance(time.Millisecond)

	// init_otp, by the parent's root user in the parent organization.
	r := root.Submit(
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "alice@example.com", "appName": "Acme"},
	)
	servertest.MustOK(t, r)
	otpID := r.Str("activity", "result", "initOtpResultV2", "otpId")
	bundle := r.Str("activity", "result", "initOtpResultV2", "otpEncryptionTargetBundle")
	activities := [][]byte{r.Raw}
	es, err := notify.ReadOutbox(out.Path())
	if err != nil || len(es) != 1 || es[0].Email == nil || es[0].Email.To != "alice@example.com" {
		t.Fatalf("outbox: %+v, %v", es, err)
	}
	m := otpCodeLine.FindStringSubmatch(es[0].Email.Text)
	if m == nil {
		t.Fatalf("no code in %q", es[0].Email.Text)
	}
	code := m[1]

	// The client encrypts the code to the bundle, having checked it against the OTP key the
	// server publishes (encryptOtpCodeToBundle with the override).
	device, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	du, _ := device.PublicKey.Bytes()
	devicePub := hex.EncodeToString(custody.P256Compressed(du))
	enc, err := custody.SealOTPCode(bundle, code, devicePub, h.Server.PublicKeys().OTPPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	h.Advance(time.Millisecond)
	r = root.Submit(
		"verify_otp",
		"ACTIVITY_TYPE_VERIFY_OTP_V2",
		map[string]any{"otpId": otpID, "encryptedOtpBundle": enc},
	)
	servertest.MustOK(t, r)
	activities = append(activities, r.Raw)
	tok := r.Str("activity", "result", "verifyOtpResult", "verificationToken")
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", tok)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 ||
		!ecdsa.Verify(
			h.Server.Keys.Public(custody.OTP),
			d[:],
			new(big.Int).SetBytes(sig[:32]),
			new(big.Int).SetBytes(sig[32:]),
		) {
		t.Fatal("the verification token does not verify with the OTP key")
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct{ Exp, ID string }
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if ms, err := strconv.ParseInt(claims.Exp, 10, 64); err != nil || ms <= h.Now().UnixMilli() {
		t.Fatalf("exp %q is not a future time in milliseconds", claims.Exp)
	}

	// otp_login, by the parent's root user for the sub-organization, with the client signature.
	sessPriv, sessPub := h.NewKey()
	msg := fmt.Sprintf(`{"login":{"publicKey":%q},"tokenId":%q,"type":"USAGE_TYPE_LOGIN"}`, sessPub, claims.ID)
	md := sha256.Sum256([]byte(msg))
	rr, ss, _ := ecdsa.Sign(rand.Reader, device, md[:])
	raw := make([]byte, 64)
	rr.FillBytes(raw[:32])
	ss.FillBytes(raw[32:])
	parentInSub := h.Client(subID, root.Priv)
	h.Advance(time.Millisecond)
	r = parentInSub.Submit(
		"otp_login",
		"ACTIVITY_TYPE_OTP_LOGIN_V2",
		map[string]any{"verificationToken": tok, "publicKey": sessPub,
			"clientSignature": map[string]any{
				"publicKey": devicePub,
				"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
				"message":   msg,
				"signature": hex.EncodeToString(raw),
			}},
	)
	servertest.MustOK(t, r)
	activities = append(activities, r.Raw)
	jwt := r.Str("activity", "result", "otpLoginResult", "session")
	sc, err := session.Parse(jwt, h.Server.Keys.Public(custody.Notarizer), h.Now())
	if err != nil || sc.OrganizationID != subID || sc.SessionType != session.ReadWrite {
		t.Fatalf("session %+v, %v", sc, err)
	}

	// The session key stamps requests as alice.
	w := h.Client(subID, sessPriv).Query("whoami", nil)
	servertest.MustOK(t, w)
	if w.Str("organizationId") != subID || w.Str("username") != "alice" || w.Str("userId") != sc.UserID {
		t.Fatalf("whoami with the session key: %s", w.Raw)
	}

	// The token is used up.
	h.Advance(time.Millisecond)
	r = parentInSub.Submit(
		"otp_login",
		"ACTIVITY_TYPE_OTP_LOGIN_V2",
		map[string]any{"verificationToken": tok, "publicKey": sessPub,
			"clientSignature": map[string]any{
				"publicKey": devicePub,
				"scheme":    "CLIENT_SIGNATURE_SCHEME_API_P256",
				"message":   msg,
				"signature": hex.EncodeToString(raw),
			}},
	)
	servertest.WantError(t, r, http.StatusBadRequest, 3, "already used")

	// Wrong codes burn the code after three tries.
	h.Advance(time.Millisecond)
	r = root.Submit(
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "alice@example.com", "appName": "Acme"},
	)
	servertest.MustOK(t, r)
	otpID = r.Str("activity", "result", "initOtpResultV2", "otpId")
	bundle = r.Str("activity", "result", "initOtpResultV2", "otpEncryptionTargetBundle")
	es, _ = notify.ReadOutbox(out.Path())
	code2 := otpCodeLine.FindStringSubmatch(es[len(es)-1].Email.Text)[1]
	for i, c := range []string{"000000000", "000000001", "000000002", code2} {
		if c == code2 && i < 3 {
			continue
		}
		enc, _ := custody.SealOTPCode(bundle, c, devicePub, h.Server.PublicKeys().OTPPublicKey)
		h.Advance(time.Millisecond)
		r = root.Submit(
			"verify_otp",
			"ACTIVITY_TYPE_VERIFY_OTP_V2",
			map[string]any{"otpId": otpID, "encryptedOtpBundle": enc},
		)
		servertest.WantError(t, r, http.StatusBadRequest, 3, "Invalid OTP code")
	}

	// No code in the activities or the database.
	db := h.DatabaseBytes()
	for _, c := range []string{code, code2} {
		if bytes.Contains(db, []byte(c)) {
			t.Errorf("code %q found in the database files", c)
		}
		for _, a := range activities {
			if bytes.Contains(a, []byte(c)) {
				t.Errorf("code %q found in an activity", c)
			}
		}
	}
}

// Without a transport, init_otp says so instead of pretending to send.
func TestOTPWithoutDelivery(t *testing.T) {
	h := servertest.New(t)
	root, _ := h.RootOrg("Acme")
	servertest.WantError(
		t,
		root.Submit(
			"init_otp",
			"ACTIVITY_TYPE_INIT_OTP_V3",
			map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "a@example.com", "appName": "Acme"},
		),
		http.StatusBadRequest,
		9,
		"e-mail delivery is not configured",
	)
	servertest.WantError(
		t,
		root.Submit(
			"init_otp",
			"ACTIVITY_TYPE_INIT_OTP_V3",
			map[string]any{"otpType": "OTP_TYPE_SMS", "contact": "+14155550100", "appName": "Acme"},
		),
		http.StatusBadRequest,
		9,
		"SMS delivery is not configured",
	)
}

// A redacted intent stays redacted when another user approves by resubmitting the same bytes:
// the approving vote keeps the body without the code, like the initiator's.
func TestRedactedIntentApprovedByResubmission(t *testing.T) {
	h, out := otpHarness(t, servertest.SQLite())
	root, created := h.RootOrg("Acme")
	alicePriv, alicePub := h.NewKey()
	u := root.Submit(
		"create_users",
		"ACTIVITY_TYPE_CREATE_USERS_V4",
		map[string]any{
			"users": []any{map[string]any{"userName": "alice", "userEmail": "alice@example.com", "apiKeys": []any{
				map[string]any{
					"apiKeyName": "a",
					"publicKey":  alicePub,
					"curveType":  "API_KEY_CURVE_P256",
				}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}},
		},
	)
	servertest.MustOK(t, u)
	alice := h.Client(created.OrganizationID, alicePriv)
	servertest.MustOK(
		t,
		root.Submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 2,
			"userIds": []string{created.UserID, u.Str("activity", "result", "createUsersResult", "userIds", "0")}}),
	)

	h.Advance(time.Millisecond)
	body := root.SubmitBody(
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "alice@example.com", "appName": "Acme"},
	)
	if r := root.Post("/public/v1/submit/init_otp", body); r.Str(
		"activity",
		"status",
	) != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("init_otp: %s", r.Raw)
	}
	r := alice.Post("/public/v1/submit/init_otp", body)
	servertest.MustOK(t, r)
	otpID := r.Str("activity", "result", "initOtpResultV2", "otpId")
	es, _ := notify.ReadOutbox(out.Path())
	code := otpCodeLine.FindStringSubmatch(es[len(es)-1].Email.Text)[1]

	h.Advance(time.Millisecond)
	body = root.SubmitBody("ACTIVITY_TYPE_VERIFY_OTP", map[string]any{"otpId": otpID, "otpCode": code})
	if r := root.Post("/public/v1/submit/verify_otp", body); r.Str(
		"activity",
		"status",
	) != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("verify_otp: %s", r.Raw)
	}
	r = alice.Post("/public/v1/submit/verify_otp", body)
	servertest.MustOK(t, r)
	if r.Str("activity", "result", "verifyOtpResult", "verificationToken") == "" ||
		len(r.Body["activity"].(map[string]any)["votes"].([]any)) != 2 {
		t.Fatalf("approval by resubmission: %s", r.Raw)
	}
	if bytes.Contains(r.Raw, []byte(code)) {
		t.Errorf("the code is in the approved activity: %s", r.Raw)
	}
	if bytes.Contains(h.DatabaseBytes(), []byte(code)) {
		t.Error("the code is in the database files")
	}
}
