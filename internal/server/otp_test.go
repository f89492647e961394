package server

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
	"github.com/latchkey/latchkey/internal/session"
)

// otpHarness is the server harness delivering e-mail and SMS to an outbox, as the server's
// configuration does with --dev.
func otpHarness(t *testing.T) (*harness, *notify.Outbox) {
	out, err := notify.NewOutbox(filepath.Join(t.TempDir(), "outbox.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, func(c *Config) { c.Emailer, c.Texter = out, out })
	return h, out
}

var otpCodeLine = regexp.MustCompile(`(?m)^    (\S+)\s*$`)

// endUser creates a sub-organization of root whose one root user has the e-mail address and an
// API key; it returns the sub-organization, the user and the key's private half.
func (h *harness) endUser(root *client, name, email string) (subID, userID, priv string) {
	h.t.Helper()
	priv, pub := h.newKey()
	h.advance(time.Millisecond)
	r := root.submit("create_sub_organization", "ACTIVITY_TYPE_CREATE_SUB_ORGANIZATION_V8", map[string]any{
		"subOrganizationName": name + "'s", "rootQuorumThreshold": 1,
		"rootUsers": []any{map[string]any{"userName": name, "userEmail": email, "apiKeys": []any{
			map[string]any{"apiKeyName": "k", "publicKey": pub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}}},
	})
	if r.status != http.StatusOK {
		h.t.Fatalf("create_sub_organization: %s", r.raw)
	}
	return r.str("activity", "result", "createSubOrganizationResultV8", "subOrganizationId"),
		r.str("activity", "result", "createSubOrganizationResultV8", "rootUserIds", "0"), priv
}

// TestOTPLoginOverHTTP: init_otp → the e-mail → verify_otp with the HPKE bundle → a
// verification token → otp_login with a client signature → a session whose key stamps a whoami.
func TestOTPLoginOverHTTP(t *testing.T) {
	h, out := otpHarness(t)
	root, _ := h.rootOrg("Parent")
	subID, _, _ := h.endUser(root, "alice", "alice@example.com")
	h.advance(time.Millisecond)

	// init_otp, by the parent's root user in the parent organization.
	r := root.submit("init_otp", "ACTIVITY_TYPE_INIT_OTP_V3", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "alice@example.com", "appName": "Acme"})
	mustOK(t, r)
	otpID := r.str("activity", "result", "initOtpResultV2", "otpId")
	bundle := r.str("activity", "result", "initOtpResultV2", "otpEncryptionTargetBundle")
	activities := [][]byte{r.raw}
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
	enc, err := custody.SealOTPCode(bundle, code, devicePub, h.s.PublicKeys().OTPPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	h.advance(time.Millisecond)
	r = root.submit("verify_otp", "ACTIVITY_TYPE_VERIFY_OTP_V2", map[string]any{"otpId": otpID, "encryptedOtpBundle": enc})
	mustOK(t, r)
	activities = append(activities, r.raw)
	tok := r.str("activity", "result", "verifyOtpResult", "verificationToken")
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q", tok)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	d := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(h.s.Keys.Public(custody.OTP), d[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the verification token does not verify with the OTP key")
	}
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct{ Exp, ID string }
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if ms, err := strconv.ParseInt(claims.Exp, 10, 64); err != nil || ms <= h.clock().UnixMilli() {
		t.Fatalf("exp %q is not a future time in milliseconds", claims.Exp)
	}

	// otp_login, by the parent's root user for the sub-organization, with the client signature.
	sessPriv, sessPub := h.newKey()
	msg := fmt.Sprintf(`{"login":{"publicKey":%q},"tokenId":%q,"type":"USAGE_TYPE_LOGIN"}`, sessPub, claims.ID)
	md := sha256.Sum256([]byte(msg))
	rr, ss, _ := ecdsa.Sign(rand.Reader, device, md[:])
	raw := make([]byte, 64)
	rr.FillBytes(raw[:32])
	ss.FillBytes(raw[32:])
	parentInSub := h.client(subID, root.priv)
	h.advance(time.Millisecond)
	r = parentInSub.submit("otp_login", "ACTIVITY_TYPE_OTP_LOGIN_V2", map[string]any{"verificationToken": tok, "publicKey": sessPub,
		"clientSignature": map[string]any{"publicKey": devicePub, "scheme": "CLIENT_SIGNATURE_SCHEME_API_P256", "message": msg, "signature": hex.EncodeToString(raw)}})
	mustOK(t, r)
	activities = append(activities, r.raw)
	jwt := r.str("activity", "result", "otpLoginResult", "session")
	sc, err := session.Parse(jwt, h.s.Keys.Public(custody.Notarizer), h.clock())
	if err != nil || sc.OrganizationID != subID || sc.SessionType != session.ReadWrite {
		t.Fatalf("session %+v, %v", sc, err)
	}

	// The session key stamps requests as alice.
	w := h.client(subID, sessPriv).query("whoami", nil)
	mustOK(t, w)
	if w.str("organizationId") != subID || w.str("username") != "alice" || w.str("userId") != sc.UserID {
		t.Fatalf("whoami with the session key: %s", w.raw)
	}

	// The token is used up.
	h.advance(time.Millisecond)
	r = parentInSub.submit("otp_login", "ACTIVITY_TYPE_OTP_LOGIN_V2", map[string]any{"verificationToken": tok, "publicKey": sessPub,
		"clientSignature": map[string]any{"publicKey": devicePub, "scheme": "CLIENT_SIGNATURE_SCHEME_API_P256", "message": msg, "signature": hex.EncodeToString(raw)}})
	wantError(t, r, http.StatusBadRequest, 3, "already used")

	// Wrong codes burn the code after three tries.
	h.advance(time.Millisecond)
	r = root.submit("init_otp", "ACTIVITY_TYPE_INIT_OTP_V3", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "alice@example.com", "appName": "Acme"})
	mustOK(t, r)
	otpID = r.str("activity", "result", "initOtpResultV2", "otpId")
	bundle = r.str("activity", "result", "initOtpResultV2", "otpEncryptionTargetBundle")
	es, _ = notify.ReadOutbox(out.Path())
	code2 := otpCodeLine.FindStringSubmatch(es[len(es)-1].Email.Text)[1]
	for i, c := range []string{"000000000", "000000001", "000000002", code2} {
		if c == code2 && i < 3 {
			continue
		}
		enc, _ := custody.SealOTPCode(bundle, c, devicePub, h.s.PublicKeys().OTPPublicKey)
		h.advance(time.Millisecond)
		r = root.submit("verify_otp", "ACTIVITY_TYPE_VERIFY_OTP_V2", map[string]any{"otpId": otpID, "encryptedOtpBundle": enc})
		wantError(t, r, http.StatusBadRequest, 3, "Invalid OTP code")
	}

	// No code in the activities or the database.
	db := readAll(t, h.s.cfg.DataDir)
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
	h := newHarness(t)
	root, _ := h.rootOrg("Acme")
	wantError(t, root.submit("init_otp", "ACTIVITY_TYPE_INIT_OTP_V3", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "a@example.com", "appName": "Acme"}),
		http.StatusBadRequest, 9, "e-mail delivery is not configured")
	wantError(t, root.submit("init_otp", "ACTIVITY_TYPE_INIT_OTP_V3", map[string]any{"otpType": "OTP_TYPE_SMS", "contact": "+14155550100", "appName": "Acme"}),
		http.StatusBadRequest, 9, "SMS delivery is not configured")
}

// A redacted intent stays redacted when another user approves by resubmitting the same bytes:
// the approving vote keeps the body without the code, like the initiator's.
func TestRedactedIntentApprovedByResubmission(t *testing.T) {
	h, out := otpHarness(t)
	root, created := h.rootOrg("Acme")
	alicePriv, alicePub := h.newKey()
	u := root.submit("create_users", "ACTIVITY_TYPE_CREATE_USERS_V4", map[string]any{"users": []any{map[string]any{"userName": "alice", "userEmail": "alice@example.com", "apiKeys": []any{
		map[string]any{"apiKeyName": "a", "publicKey": alicePub, "curveType": "API_KEY_CURVE_P256"}}, "authenticators": []any{}, "oauthProviders": []any{}, "userTags": []any{}}}})
	mustOK(t, u)
	alice := h.client(created.OrganizationID, alicePriv)
	mustOK(t, root.submit("update_root_quorum", "ACTIVITY_TYPE_UPDATE_ROOT_QUORUM", map[string]any{"threshold": 2,
		"userIds": []string{created.UserID, u.str("activity", "result", "createUsersResult", "userIds", "0")}}))

	h.advance(time.Millisecond)
	body := root.submitBody("ACTIVITY_TYPE_INIT_OTP_V3", map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "alice@example.com", "appName": "Acme"})
	if r := root.post("/public/v1/submit/init_otp", body); r.str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("init_otp: %s", r.raw)
	}
	r := alice.post("/public/v1/submit/init_otp", body)
	mustOK(t, r)
	otpID := r.str("activity", "result", "initOtpResultV2", "otpId")
	es, _ := notify.ReadOutbox(out.Path())
	code := otpCodeLine.FindStringSubmatch(es[len(es)-1].Email.Text)[1]

	h.advance(time.Millisecond)
	body = root.submitBody("ACTIVITY_TYPE_VERIFY_OTP", map[string]any{"otpId": otpID, "otpCode": code})
	if r := root.post("/public/v1/submit/verify_otp", body); r.str("activity", "status") != "ACTIVITY_STATUS_CONSENSUS_NEEDED" {
		t.Fatalf("verify_otp: %s", r.raw)
	}
	r = alice.post("/public/v1/submit/verify_otp", body)
	mustOK(t, r)
	if r.str("activity", "result", "verifyOtpResult", "verificationToken") == "" || len(r.body["activity"].(map[string]any)["votes"].([]any)) != 2 {
		t.Fatalf("approval by resubmission: %s", r.raw)
	}
	if bytes.Contains(r.raw, []byte(code)) {
		t.Errorf("the code is in the approved activity: %s", r.raw)
	}
	if bytes.Contains(readAll(t, h.s.cfg.DataDir), []byte(code)) {
		t.Error("the code is in the database files")
	}
}
