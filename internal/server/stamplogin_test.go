package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/latchkey/latchkey/internal/custody"
	"github.com/latchkey/latchkey/internal/notify"
	"github.com/latchkey/latchkey/internal/servertest"
	"github.com/latchkey/latchkey/internal/session"
)

// attestedStamp is the X-Stamp-Attested header @turnkey/core sends: base64url JSON of the
// attestation, the scheme, the key and its DER signature over SHA-256(body).
func attestedStamp(t *testing.T, key *ecdsa.PrivateKey, scheme, attestation string, body []byte) string {
	t.Helper()
	d := sha256.Sum256(body)
	sig, err := ecdsa.SignASN1(rand.Reader, key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	u, _ := key.PublicKey.Bytes()
	v, _ := json.Marshal(map[string]string{"publicKeyAttestation": attestation, "scheme": scheme,
		"publicKey": hex.EncodeToString(custody.P256Compressed(u)), "signature": hex.EncodeToString(sig)})
	return base64.RawURLEncoding.EncodeToString(v)
}

// TestStampLogin: core's logins. After an e-mail OTP, stamp_login stamped with X-Stamp-Attested
// (the verification token attesting the session key), naming the parent organization, logs the
// sub-organization's user in once; a passkey-or-API-key stamp_login naming the parent finds the
// sub-organization that holds the credential.
func TestStampLogin(t *testing.T) {
	h, out := otpHarness(t)
	root, created := h.RootOrg("Parent")
	subID, _, endUserPriv := h.EndUser(root, "alice", "alice@example.com")

	// OTP in the parent, for the session key the client made.
	h.Advance(time.Millisecond)
	r := root.Submit(
		"init_otp",
		"ACTIVITY_TYPE_INIT_OTP_V3",
		map[string]any{"otpType": "OTP_TYPE_EMAIL", "contact": "alice@example.com", "appName": "Acme"},
	)
	servertest.MustOK(t, r)
	otpID, bundle := r.Str(
		"activity",
		"result",
		"initOtpResultV2",
		"otpId",
	), r.Str(
		"activity",
		"result",
		"initOtpResultV2",
		"otpEncryptionTargetBundle",
	)
	es, _ := notify.ReadOutbox(out.Path())
	code := otpCodeLine.FindStringSubmatch(es[len(es)-1].Email.Text)[1]
	sessKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	su, _ := sessKey.PublicKey.Bytes()
	sessPub := hex.EncodeToString(custody.P256Compressed(su))
	enc, err := custody.SealOTPCode(bundle, code, sessPub, h.Server.PublicKeys().OTPPublicKey)
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
	tok := r.Str("activity", "result", "verifyOtpResult", "verificationToken")

	// The parent verified alice's address: list_verified_suborgs finds her sub-organization; an
	// address nobody verified finds nothing.
	v := root.Query("list_verified_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": "Alice@Example.com"})
	servertest.MustOK(t, v)
	if v.Str("organizationIds", "0") != subID {
		t.Fatalf("list_verified_suborgs: %s", v.Raw)
	}
	if v := root.Query("list_verified_suborgs", map[string]any{"filterType": "EMAIL", "filterValue": "bob@example.com"}); v.Str(
		"organizationIds",
	) != "[]" {
		t.Fatalf("list_verified_suborgs for an unverified address: %s", v.Raw)
	}
	servertest.WantError(
		t,
		root.Query("list_verified_suborgs", map[string]any{"filterType": "NAME", "filterValue": "x"}),
		http.StatusBadRequest,
		3,
		"filterType",
	)

	const scheme = "STAMP_ATTESTED_SCHEME_P256_VERIFICATION_TOKEN"
	loginBody := func(org, pub string) []byte {
		h.Advance(time.Millisecond)
		c := &servertest.Client{H: h, Org: org}
		return c.SubmitBody(
			"ACTIVITY_TYPE_STAMP_LOGIN",
			map[string]any{"publicKey": pub, "expirationSeconds": "900", "invalidateExisting": true},
		)
	}
	body := loginBody(created.OrganizationID, sessPub)
	r = h.Post(
		"/public/v1/submit/stamp_login",
		body,
		map[string]string{"X-Stamp-Attested": attestedStamp(t, sessKey, scheme, tok, body)},
	)
	servertest.MustOK(t, r)
	sc, err := session.Parse(
		r.Str("activity", "result", "stampLoginResult", "session"),
		h.Server.Keys.Public(custody.Notarizer),
		h.Now(),
	)
	if err != nil || sc.OrganizationID != subID || r.Str("activity", "organizationId") != subID {
		t.Fatalf("session %+v, %v: %s", sc, err, r.Raw)
	}
	sessPriv := hex.EncodeToString(sessKey.D.FillBytes(make([]byte, 32)))
	if w := h.Client(subID, sessPriv).Query("whoami", nil); w.Status != http.StatusOK || w.Str("username") != "alice" {
		t.Fatalf("whoami with the session key: %s", w.Raw)
	}

	// The token logs in once; it attests only its own key; an attested stamp only logs in.
	body = loginBody(subID, sessPub)
	servertest.WantError(
		t,
		h.Post(
			"/public/v1/submit/stamp_login",
			body,
			map[string]string{"X-Stamp-Attested": attestedStamp(t, sessKey, scheme, tok, body)},
		),
		http.StatusUnauthorized,
		16,
		"already used",
	)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	servertest.WantError(
		t,
		h.Post(
			"/public/v1/submit/stamp_login",
			body,
			map[string]string{"X-Stamp-Attested": attestedStamp(t, other, scheme, tok, body)},
		),
		http.StatusUnauthorized,
		16,
		"not issued for the stamp's public key",
	)
	q := []byte(`{"organizationId":"` + subID + `"}`)
	servertest.WantError(
		t,
		h.Post(
			"/public/v1/query/whoami",
			q,
			map[string]string{"X-Stamp-Attested": attestedStamp(t, sessKey, scheme, tok, q)},
		),
		http.StatusForbidden,
		7,
		"only logs in",
	)
	body = loginBody(subID, sessPub)
	servertest.WantError(
		t,
		h.Post(
			"/public/v1/submit/stamp_login",
			body,
			map[string]string{"X-Stamp-Attested": attestedStamp(t, sessKey, scheme, "a.b.c", body)},
		),
		http.StatusUnauthorized,
		16,
		"verification token",
	)

	// An API-key stamp_login naming the parent runs in the sub-organization holding the key;
	// invalidateExisting removed the earlier login key.
	_, pub2 := h.NewKey()
	h.Advance(time.Millisecond)
	r = h.Client(created.OrganizationID, endUserPriv).
		Submit("stamp_login", "ACTIVITY_TYPE_STAMP_LOGIN", map[string]any{"publicKey": pub2, "invalidateExisting": true})
	servertest.MustOK(t, r)
	sc2, err := session.Parse(
		r.Str("activity", "result", "stampLoginResult", "session"),
		h.Server.Keys.Public(custody.Notarizer),
		h.Now(),
	)
	if err != nil || sc2.OrganizationID != subID || sc2.UserID != sc.UserID {
		t.Fatalf("session %+v, %v", sc2, err)
	}
	if w := h.Client(subID, sessPriv).Query("whoami", nil); w.Status != http.StatusUnauthorized {
		t.Fatalf("the earlier login key still works after invalidateExisting: %s", w.Raw)
	}
	// A key no organization holds is still refused with the SDK's message.
	strangerPriv, _ := h.NewKey()
	h.Advance(time.Millisecond)
	servertest.WantError(
		t,
		h.Client(created.OrganizationID, strangerPriv).
			Submit("stamp_login", "ACTIVITY_TYPE_STAMP_LOGIN", map[string]any{"publicKey": pub2}),
		http.StatusUnauthorized,
		16,
		"could not find public key",
	)
}
